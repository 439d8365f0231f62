"""SLOW004: steps get slower and slower over the run."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from autopsy.model.finding import Evidence, Family, Finding, Severity
from autopsy.model.run import Run
from autopsy.rules.context import RuleContext
from autopsy.rules.registry import rule
from autopsy.rules.slow._slow import seconds, trend_times
from autopsy.rules.slow._stalls import run_stalls
from autopsy.rules.slow.thresholds import SLOW004
from autopsy.signals.steptime import StepTimes, summarize


@rule(
    code="SLOW004",
    name="slowing-down",
    family=Family.SLOW,
    causes=("slowing_down",),
    thresholds=SLOW004,
)
def slowing_down(run: Run, ctx: RuleContext) -> Finding | None:
    """Steps get slower over the run.

    What happened:
        A Theil–Sen line fitted to the step times (stalls left out: SLOW003 and
        SLOW006 own them; the first ``skip_first`` steps of each segment too) rises:
        its 95% confidence interval is above zero and the fitted step time at the
        end is at least ``rel_change`` above the fitted time at the start (an error;
        ``warn_rel_change``: a warning) and at least ``min_increase_s`` seconds
        longer, and the slowdown cost at least ``min_lost_s`` seconds in all (the
        time above the start's pace: a tiny run whose 4 ms steps wander to 14 ms on
        a busy host is noise, not a finding). At least ``min_points`` step times are
        needed.

        With fewer points (an excerpt of a few log lines, a run that logs once an epoch)
        but at least ``min_sparse_points``, the step times must rise at every point and
        end at least ``sparse_ratio`` times the first one, with no single interval holding
        more than ``sparse_max_jump_share`` of the rise (one jump is a stall or a new pace,
        not a slowdown that grows). The rise starts at or before the first logged point,
        so there is no onset step.

    Why it happens:
        Something grows with the number of steps: a Python list that keeps tensors
        (``losses.append(loss)`` keeps each step's graph alive: use ``loss.item()``),
        a cache or metric buffer that is never cleared, memory pressure that ends in
        swapping or allocator churn, recompilation on new shapes
        (``torch.compile`` with dynamic sequence lengths), a curriculum that
        lengthens sequences, a GPU that heats up and throttles, a dataset whose
        later shards are slower to read.

    How to fix:
        Log ``.item()`` values and clear accumulators; watch host and GPU memory over
        the run (a rising line means a leak); pad or bucket sequence lengths, mark
        dynamic dimensions for ``torch.compile``; check GPU clocks and temperature
        (``nvidia-smi -q -d PERFORMANCE``).

        Also, where the times come from the throughput the run printed: the last
        ``tail_points`` or more throughputs are all at most 1/``tail_ratio`` of the
        median of at least ``tail_min_before`` before them (the run ends at half its
        speed or worse), trend or not.

        The step times are an explicit step-time tag, else the printed throughput (a
        samples/s without the batch size counts one sample per step: a lower bound of
        every step time, with the true relative change), else wall-clock deltas.

    Evidence shown:
        The fitted step time at the start and the end, the slope and its
        confidence interval, and the step from which the run was noticeably slower.
    """
    times = trend_times(run, ctx)
    if times is None or not times.reliable:
        return None
    found = _trend_finding(run, ctx, times)
    if found is None and len(times.seconds) < int(ctx["min_points"]):
        found = _sparse_finding(ctx, times)
    if found is None and times.origin.startswith("throughput"):
        drop = _tail_drop(times.seconds, ctx)
        if drop is not None:
            return _tail_finding(ctx, times.source or times.origin, times.origin, *drop)
    return found


#: What to change for step times that grow with the steps (the trend and the few-points rise).
_GROWTH_ADVICE: tuple[str, ...] = (
    "log loss.item() rather than the tensor; clear metric buffers and caches",
    "watch host and GPU memory across the run: a steady rise is a leak",
    "pad or bucket sequence lengths; with torch.compile mark dynamic dimensions to stop "
    "recompiling",
)

#: Passes of the stretch-and-pace search (:func:`_tail_drop`): each lowers the pace and
#: lengthens the stretch, and it settles in two or three.
_TAIL_PASSES = 8


def _trend_finding(run: Run, ctx: RuleContext, times: StepTimes) -> Finding | None:
    """The finding for step times whose Theil-Sen trend rises (see :func:`slowing_down`)."""
    if len(times.seconds) < int(ctx["min_points"]):
        return None
    stalls = run_stalls(run, ctx)
    stats = summarize(times.seconds, exclude=stalls.stalls.steps if stalls else ())
    if stats is None or stats.trend is None or stats.n < int(ctx["min_points"]):
        return None
    tr = stats.trend
    if not (tr.low > 0) or not math.isfinite(tr.slope):
        return None
    idx = times.seconds.index
    steps = idx.to_numpy(dtype="float64")
    fitted = tr.intercept + tr.slope * steps
    start, end, rel = tr.start, tr.end, tr.rel_change
    ends = "Theil-Sen fit of the step time"
    if start <= 0:
        # a rise that speeds up (a leak that compounds): the straight line crosses zero
        # inside the run, so its ends are no step times; the medians of the first and last
        # quarters of the step times (stalls left out) are
        dropped = list(stalls.stalls.steps) if stalls else []
        kept = times.seconds[~idx.isin(dropped)].to_numpy(dtype="float64")
        quarter = max(1, len(kept) // 4)
        start, end = float(np.median(kept[:quarter])), float(np.median(kept[-quarter:]))
        if not start > 0:
            return None
        rel = end / start - 1
        fitted = np.maximum(fitted, start)
        ends = "step time, first and last quarters (the fitted line crosses zero)"
    if rel < ctx["warn_rel_change"] or end - start < ctx["min_increase_s"]:
        return None
    lost = float(((fitted - start).clip(min=0) * times.gaps.to_numpy()).sum())
    if lost < ctx["min_lost_s"]:
        return None
    severity = Severity.ERROR if rel >= ctx["rel_change"] else Severity.WARNING
    target = start * (1 + float(ctx["warn_rel_change"]))
    cross = (target - tr.intercept) / tr.slope
    later = [int(s) for s in idx if s >= cross]
    step = later[0] if later else int(idx[-1])
    first, last = int(idx.min()), int(idx.max())
    return ctx.finding(
        message=f"Steps get slower over the run: {seconds(start)} per step at step {first}, "
                f"{seconds(end)} at step {last} (+{rel:.0%}), "
                f"about {seconds(lost)} lost against the starting pace; noticeably slower "
                f"from step {step}.",
        severity=severity, confidence=0.75 if severity is Severity.ERROR else 0.55,
        cause="slowing_down", step=step,
        evidence=[Evidence(
            summary=f"{ends} ({times.origin}): {seconds(start)} at "
                    f"step {first} "
                    f"-> {seconds(end)} at step {last}; slope {tr.slope * 1000:.3g} ms per "
                    f"step (95% CI {tr.low * 1000:.3g}..{tr.high * 1000:.3g}), median "
                    f"{seconds(stats.median)} over {stats.n} steps",
            source=times.source, steps=(first, last),
            numbers={"start_s": round(start, 6), "end_s": round(end, 6),
                     "rel_change": round(rel, 4), "slope_s": tr.slope,
                     "lost_s": round(lost, 3)})],
        advice=[*_GROWTH_ADVICE,
                "check GPU clocks and temperature (nvidia-smi -q -d PERFORMANCE,TEMPERATURE)"],
    )


def _sparse_rise(secs: pd.Series, ctx: RuleContext) -> bool:
    """Whether a few step times rise steadily: up at every point, ``sparse_ratio`` x the
    first at the end, no interval holding more than ``sparse_max_jump_share`` of the rise."""
    values = secs.to_numpy(dtype="float64")
    if len(values) < int(ctx["min_sparse_points"]) or not np.isfinite(values).all():
        return False
    steps = np.diff(values)
    rise = float(values[-1] - values[0])
    return bool(values[0] > 0 and (steps > 0).all()
                and values[-1] >= float(ctx["sparse_ratio"]) * values[0]
                and rise >= float(ctx["min_increase_s"])
                and float(steps.max()) <= float(ctx["sparse_max_jump_share"]) * rise)


def _sparse_finding(ctx: RuleContext, times: StepTimes) -> Finding | None:
    """The finding for a few step times that rise at every point (see :func:`slowing_down`)."""
    secs = times.seconds
    if not _sparse_rise(secs, ctx):
        return None
    start, end = float(secs.iloc[0]), float(secs.iloc[-1])
    lost = float(((secs - start).clip(lower=0) * times.gaps).sum())
    if lost < ctx["min_lost_s"]:
        return None
    first, last = int(secs.index[0]), int(secs.index[-1])
    return ctx.finding(
        message=f"Steps get slower at every logged point: {seconds(start)} per step at step "
                f"{first}, {seconds(end)} at step {last} ({end / start:.2g}x), about "
                f"{seconds(lost)} lost against the first pace; the rise starts at or before "
                f"the first logged step.",
        severity=Severity.ERROR, confidence=0.55, cause="slowing_down", step=None,
        evidence=[Evidence(
            summary=f"{times.origin}: " + ", ".join(
                f"{seconds(float(v))} at step {int(s)}" for s, v in secs.items()),
            source=times.source, steps=(first, last),
            numbers={"start_s": round(start, 6), "end_s": round(end, 6),
                     "ratio": round(end / start, 4), "lost_s": round(lost, 3),
                     "points": len(secs)})],
        advice=list(_GROWTH_ADVICE),
    )


def _tail_drop(secs: pd.Series, ctx: RuleContext) -> tuple[pd.Series, float] | None:
    """The final stretch of step times at least ``tail_ratio`` x the median before it.

    The stretch and the pace settle together: the final run of points slow against the
    median of the points before it, recomputed until the run stops growing (a handful of
    linear passes, not one median per candidate length)."""
    values = secs.to_numpy(dtype="float64")
    n_before = int(ctx["tail_min_before"])
    if len(values) < n_before + int(ctx["tail_points"]):
        return None
    ratio = float(ctx["tail_ratio"])
    k = 0
    for _ in range(_TAIL_PASSES):
        pace = float(np.median(values[:len(values) - k]))
        slow = values >= ratio * pace
        run = int(np.argmin(slow[::-1])) if not slow.all() else len(values)
        if run <= k:
            break
        k = run
        if len(values) - k < n_before:
            return None  # slow from (nearly) the start: no pace of its own to drop from
    if k < int(ctx["tail_points"]):
        return None
    return secs.iloc[len(values) - k:], float(np.median(values[:len(values) - k]))


def _tail_finding(ctx: RuleContext, source: str, origin: str, tail: pd.Series,
                  pace: float) -> Finding:
    """The finding for a run that ended at a fraction of its speed."""
    first, last = int(tail.index[0]), int(tail.index[-1])
    worst = float(tail.max()) / pace
    return ctx.finding(
        message=f"The run slowed down sharply at the end: its last {len(tail)} printed "
                f"throughputs (steps {first}-{last}) are {float(tail.min()) / pace:.2g}-"
                f"{worst:.2g}x slower per step than its median pace before; it did not recover.",
        severity=Severity.ERROR, confidence=0.6, cause="slowing_down", step=first,
        evidence=[Evidence(
            summary=f"{origin}: step time {seconds(pace)} (median before step {first}) -> "
                    + ", ".join(f"{seconds(float(v))} at step {int(s)}"
                                for s, v in tail.items()),
            source=source, steps=(first, last),
            numbers={"pace_s": round(pace, 6), "last_s": round(float(tail.iloc[-1]), 6),
                     "slowdown": round(worst, 3), "points": len(tail)})],
        advice=["check what else ran on the host or the GPU when it slowed (nvidia-smi, top): "
                "another job, a throttling GPU (nvidia-smi -q -d PERFORMANCE,TEMPERATURE), "
                "swapping",
                "watch host and GPU memory across the run: a steady rise is a leak",
                "log loss.item() rather than the tensor; clear metric buffers and caches"],
    )
