"""SLOW002: one rank is consistently slower and the others wait for it every step."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from autopsy.model.finding import Evidence, Family, Finding, Severity
from autopsy.model.run import Run
from autopsy.rules.context import RuleContext
from autopsy.rules.registry import rule
from autopsy.rules.slow._slow import (
    lags,
    median,
    seconds,
    wall_times,
    walls,
)
from autopsy.rules.slow.thresholds import SLOW002
from autopsy.signals.steptime import rank_series


@dataclass
class Slow:
    """A rank found slower than the others by one measure."""

    rank: int
    measure: str
    value: float
    others: float
    excess: float
    last_share: float
    onset: int | None
    numbers: dict[str, float] = field(default_factory=dict)


def _onset(per_step: pd.Series, threshold: float, run: Run, rank: int) -> int | None:
    """The first step where ``per_step`` reaches ``threshold``; None when that is among the
    first logged steps (the rank lagged from the start: no step began it)."""
    hit = per_step[per_step >= threshold]
    if hit.empty:
        return None
    at = int(hit.index[0])
    early = per_step.index[min(len(per_step) - 1, 4)]
    return None if at <= early else at


def by_component(run: Run, ctx: RuleContext, period: dict[int, float]) -> Slow | None:
    """A rank whose own data or compute time is far above the others' (signal A)."""
    skip = int(ctx["skip_first"])
    for tag in ("data_time", "compute_time"):
        per = rank_series(run, f"{tag}_ms", skip_first=0, scale=1e-3)
        per.update(rank_series(run, tag, skip_first=0))
        per = {r: s for r, s in per.items() if r is not None}
        if len(per) < 2:
            continue
        wide = pd.DataFrame(per).dropna()
        kept = wide.iloc[skip:]
        if len(kept) < 3:
            continue
        meds = kept.median()
        top = int(meds.idxmax())
        others = float(meds.drop(top).median())
        value = float(meds[top])
        ref = period.get(top) or value
        excess = value - others
        if value < ctx["ratio"] * max(others, 1e-9) or excess < ctx["min_excess_share"] * ref:
            continue
        last = float((kept.idxmax(axis=1) == top).mean())
        if last < ctx["last_share"]:
            continue
        gap = wide[top] - wide.drop(columns=top).median(axis=1)
        return Slow(top, tag, value, others, excess, last,
                    _onset(gap, 0.5 * excess, run, top),
                    {f"{tag}_s": round(value, 6), f"others_{tag}_s": round(others, 6)})
    return None


def by_arrival(run: Run, ctx: RuleContext, period: dict[int, float]) -> Slow | None:
    """A rank that logs each step well after the others (signal B)."""
    late = lags(run, ctx)
    if late.empty or late.shape[1] < 2:
        return None
    kept = late.iloc[int(ctx["skip_first"]):]
    if len(kept) < 3:
        return None
    meds = kept.median()
    top = int(meds.idxmax())
    lag = float(meds[top])
    ref = period.get(top, math.nan)
    if not math.isfinite(ref) or ref <= 0:
        return None
    resolution = float(late.attrs.get("resolution", 0.0))
    if lag < max(float(ctx["min_lag_s"]), float(ctx["lag_share"]) * ref, 2 * resolution):
        return None
    last = float((kept.idxmax(axis=1) == top).mean())
    if last < ctx["last_share"]:
        return None
    others = float(np.median(meds.drop(top).to_numpy()))
    return Slow(top, "arrival", lag, others, lag, last, _onset(late[top], 0.5 * lag, run, top),
                {"lag_s": round(lag, 6), "step_s": round(ref, 6)})


@rule(
    code="SLOW002",
    name="straggler",
    family=Family.SLOW,
    causes=("straggler",),
    thresholds=SLOW002,
)
def straggler(run: Run, ctx: RuleContext) -> Finding | None:
    """One rank is slower every step, and the others wait for it.

    What happened:
        In a job whose ranks synchronise every step (DDP, FSDP, ZeRO: a gradient
        all-reduce per step), one rank is consistently slower, so every step lasts
        as long as that rank's and the other ranks spend the difference waiting in
        the collective. Two measures, either enough: the rank's own ``data_time`` or
        ``compute_time`` is at least ``ratio`` times the other ranks' median and at
        least ``min_excess_share`` of the step; or its per-step log line comes at
        least ``lag_share`` of the step time (and ``min_lag_s``) after the others'
        (a loop that logs before the collective: the fast ranks log, then wait).
        Either way the rank must be the slowest at ``last_share`` of the steps; the
        first ``skip_first`` steps are left out. Ranks that log only after the
        collective all show the same step time: only the component times can name
        the straggler then.

    Why it happens:
        Something on that rank's host: a slow or shared disk or network mount for
        its data shard, a CPU-starved data loader (other jobs, too few cores per
        GPU), a GPU throttled for heat or power, a degraded PCIe or NVLink link, or
        a shard with longer sequences or more samples. Clock skew between hosts can
        shift log stamps by a constant: trust the component times when both exist.

    How to fix:
        Look at that rank's host: ``nvidia-smi -q -d PERFORMANCE,CLOCK`` (throttle
        reasons), CPU load, and its storage; rebalance shards (bucket by length so
        every rank gets the same tokens per step); give the loader more workers or
        cache the data locally; exclude the node if it is degraded.

    Evidence shown:
        The straggler, its median data or compute time (or how late it logs) against
        the other ranks', how often it was the slowest, and the time the others
        lose per step.
    """
    period = {int(r): median(t.seconds) for r, t in wall_times(run, ctx).items()
              if r is not None}
    ranks = sorted(period) or sorted(r for r in rank_series(run, "data_time") if r is not None)
    if len(ranks) < 2 and len(period) < 2:
        found = by_component(run, ctx, period)
    else:
        found = by_component(run, ctx, period) or by_arrival(run, ctx, period)
    if found is None:
        return None
    step_s = period.get(found.rank, math.nan)
    lost = (f"; the other ranks wait about {seconds(found.excess)} per step"
            + (f" ({found.excess / step_s:.0%} of the {seconds(step_s)} step)"
               if math.isfinite(step_s) and step_s > 0 else ""))
    if found.measure == "arrival":
        what = (f"rank {found.rank} logs each step {seconds(found.value)} after the other "
                f"ranks (median), and was the last at {found.last_share:.0%} of the steps")
        detail = (f"rank {found.rank}'s step lines are stamped {seconds(found.value)} after "
                  "the other ranks' lines of the same step (median over the steps)")
        tag = None
    else:
        what = (f"rank {found.rank}'s {found.measure} is {seconds(found.value)} against "
                f"{seconds(found.others)} on the other ranks (median), the highest at "
                f"{found.last_share:.0%} of the steps")
        detail = (f"median {found.measure} per rank: {seconds(found.value)} on rank "
                  f"{found.rank}, {seconds(found.others)} on the others")
        tag = found.measure
    source = walls(run, ctx).attrs.get("sources", {}).get(found.rank)
    evidence = [Evidence(summary=detail, tag=tag, source=source,
                         steps=(found.onset, found.onset) if found.onset else None,
                         numbers=dict(found.numbers))]
    if len(period) > 1:
        spread = sorted(period.items())
        evidence.append(Evidence(
            summary="median step time per rank: " + ", ".join(
                f"{r}: {seconds(v)}" for r, v in spread[:16])
            + (" (equal: the ranks wait for each other every step)"
               if max(period.values()) < 1.2 * min(period.values()) else ""),
            numbers={f"rank{r}_step_s": round(v, 6) for r, v in spread[:16]}))
    return ctx.finding(
        message=f"Rank {found.rank} is a straggler: {what}{lost}.",
        severity=Severity.ERROR, confidence=0.85 if found.measure != "arrival" else 0.75,
        cause="straggler", step=found.onset, ranks=[found.rank], evidence=evidence,
        advice=[f"inspect rank {found.rank}'s host: nvidia-smi -q -d PERFORMANCE,CLOCK "
                "(throttling), CPU load from other processes, its disk or network mount",
                "give every rank the same work per step: shard evenly, bucket by sequence "
                "length (tokens per step, not samples)",
                f"if rank {found.rank} waits for data: more DataLoader workers on that node, "
                "or cache its shard on local disk",
                "exclude the node if its GPU or link is degraded"],
    )
