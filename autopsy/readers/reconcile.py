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


#: Readers whose points win when several sources hold the same point, best first:
#: TensorBoard keeps wall times, ``trainer_state.json`` full precision, tables and JSON
#: lines come next, and numbers printed in text logs (rounded) last.
SOURCE_PRIORITY: tuple[str, ...] = (
    "tensorboard", "wandb", "mlflow", "trainer_state", "log_history", "lightning_csv", "epoch_csv",
    "ultralytics_csv", "jsonl_metrics", "ranklogs",
)
#: Two values are the same point when they differ by at most this fraction of the larger
#: (a text log prints 4 to 6 significant digits; TensorBoard keeps float32).
MERGE_RTOL = 5e-4


def merge_duplicates(scalars: pd.DataFrame, reader_of: dict[str, str]) -> pd.DataFrame:
    """Keep one point where several readers' files logged the same one.

    Points of different readers with the same canonical tag, step, rank and segment and
    the same value (within :data:`MERGE_RTOL`; NaN equal to NaN, same-signed infinities
    equal) are one point: the row of the source whose reader comes first in
    :data:`SOURCE_PRIORITY` is kept. Points whose values differ are all kept (they are
    different runs or attempts). Returns ``scalars`` itself when nothing is merged.
    """
    if scalars.empty:
        return scalars
    # per source category, not per row: the frame may hold a million points
    source = pd.Categorical(scalars["source"])
    names = [reader_of.get(str(c), str(c)) for c in source.categories]
    if len(set(names)) < 2:
        return scalars  # one reader's files: nothing to merge
    order = {name: i for i, name in enumerate(SOURCE_PRIORITY)}
    codes = source.codes
    frame = pd.DataFrame({
        "tag": pd.Categorical(scalars["tag"]).codes, "step": scalars["step"].to_numpy(),
        "rank": scalars["rank"].fillna(-1).astype("int64").to_numpy(),
        "segment": scalars["segment"].to_numpy(), "value": scalars["value"].to_numpy(),
        "prio": np.array([order.get(r, len(order)) for r in names])[codes],
        "reader": pd.factorize(np.array(names, dtype=object))[0][codes],
        "pos": np.arange(len(scalars)),
    })
    keys = ["tag", "step", "rank", "segment"]
    dup = frame.duplicated(keys, keep=False)
    if not dup.any():
        return scalars
    cand = frame.loc[dup].sort_values([*keys, "prio", "pos"], kind="stable")
    first = cand.groupby(keys, sort=False).transform("first")
    a, b = cand["value"].to_numpy(), first["value"].to_numpy()
    with np.errstate(invalid="ignore"):
        same = (np.abs(a - b) <= MERGE_RTOL * np.maximum(np.abs(a), np.abs(b))) | (
            np.isnan(a) & np.isnan(b)) | (a == b)
    # one reader's files are separate observations (two ranks' logs, two runs' tables):
    # only a point another reader also holds is merged
    drop = same & (cand["reader"].to_numpy() != first["reader"].to_numpy())
    if not drop.any():
        return scalars
    keep = np.ones(len(scalars), dtype=bool)
    keep[cand["pos"].to_numpy()[drop]] = False
    return scalars.loc[keep].reset_index(drop=True)
