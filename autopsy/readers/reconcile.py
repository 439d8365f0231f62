"""Line up points that several readers saw, so restarts are labelled once for the run.

The HF Trainer writes the same log entries to TensorBoard and to
``trainer_state.json``. TensorBoard shows restarts (a new event file whose steps
go back); ``trainer_state.json`` does not (a resumed run's history is the
checkpoint's history plus the new steps). So a ``trainer_state`` point takes the
segment of the TensorBoard point with the same canonical tag, step and value.
When several segments match (a deterministic resume replays the same values),
the latest wins: the history in ``trainer_state.json`` is the run as it finally
went. Points with no match keep the segment their reader gave.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np
import pandas as pd

#: Relative tolerance when matching values (TensorBoard stores float32).
VALUE_RTOL = 1e-6


def align_segments(scalars: pd.DataFrame, follower_sources: Iterable[str],
                   leader_sources: Iterable[str]) -> pd.DataFrame:
    """Give rows of ``follower_sources`` the segment of matching ``leader_sources`` rows.

    Returns ``scalars`` itself when there is nothing to align, else a copy.
    """
    followers, leaders = set(follower_sources), set(leader_sources)
    if scalars.empty or not followers or not leaders:
        return scalars
    src = scalars["source"].astype(str)
    lead = scalars.loc[src.isin(leaders), ["tag", "step", "value", "segment"]]
    if lead["segment"].nunique() < 2:
        return scalars
    follow_mask = src.isin(followers)
    follow = scalars.loc[follow_mask, ["tag", "step", "value"]].reset_index()
    follow["tag"] = follow["tag"].astype(str)
    lead = lead.assign(tag=lead["tag"].astype(str))
    pairs = follow.merge(lead, on=["tag", "step"], suffixes=("", "_lead"))
    if pairs.empty:
        return scalars
    a, b = pairs["value"].to_numpy(), pairs["value_lead"].to_numpy()
    with np.errstate(invalid="ignore"):
        same = (np.abs(a - b) <= VALUE_RTOL * np.maximum(np.abs(a), np.abs(b))) | (
            np.isnan(a) & np.isnan(b)) | (a == b)
    matched = pairs.loc[same, ["index", "segment"]]
    if matched.empty:
        return scalars
    latest = matched.groupby("index")["segment"].max()
    out = scalars.copy()
    out.loc[latest.index.to_numpy(), "segment"] = latest.to_numpy()
    return out
