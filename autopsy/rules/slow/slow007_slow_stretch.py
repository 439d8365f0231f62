"""SLOW007: a sustained stretch of the run ran several times slower than the run's own pace."""

from __future__ import annotations

import numpy as np
import pandas as pd

from autopsy.model.finding import Evidence, Family, Finding, Severity
from autopsy.model.run import Run
from autopsy.rules.context import RuleContext
from autopsy.rules.registry import rule
from autopsy.rules.slow._slow import seconds, trend_times
from autopsy.rules.slow.thresholds import SLOW007


@rule(
    code="SLOW007",
    name="slow-stretch",
    family=Family.SLOW,
    thresholds=SLOW007,
)
def slow_stretch(run: Run, ctx: RuleContext) -> Finding | None:
    """A stretch of the run went several times slower than the run itself can go.

    What happened:
        The run's best sustained pace is the lowest median of ``window`` consecutive logged
        step times (from a step-time tag, else the printed throughput, else the wall clock
        between log lines; the first ``skip_first`` steps of each segment left out). A slow
        stretch is at least ``min_stretch`` consecutive points whose steps took ``ratio``
        times that pace or more. The time the stretch lost (above the best pace) is an
        error from ``share`` of the run's step time, a warning from ``warn_share``; at least
        ``min_points`` step times are needed. A slow start that lasts (an MXNet run at 15
        samples/s for 700 batches, then 513 samples/s), a slow middle, or a tail that never
        recovers: the run showed it could go faster and for a long while did not.

    Why it happens:
        Something outside the model changed the pace for a while: a cold page cache or a
        network filesystem on the first pass over the data, another job sharing the GPU or
        the host, swapping under host memory pressure, CPU frequency or thermal throttling,
        a data loader whose workers were starved or restarted. Stalls of one or two points
        are SLOW003/SLOW006's; a pace that keeps getting worse is SLOW004's.

    How to fix:
        Line the stretch's wall times up with the host's metrics (other processes on the
        GPU, I/O wait, memory and swap, CPU clocks); warm the data (stage it on local disk,
        pre-read it once); pin the job to a dedicated device; raise ``num_workers`` and
        ``prefetch_factor`` if the loader was the bottleneck.

    Evidence shown:
        The stretch's steps, its median step time against the best sustained pace, and the
        time it lost with its share of the run's step time.
    """
    times = trend_times(run, ctx)
    if times is None or not times.reliable:
        return None
    secs = times.seconds.to_numpy(dtype="float64")
    gaps = times.gaps.reindex(times.seconds.index).fillna(1).to_numpy(dtype="float64")
    steps = times.seconds.index.to_numpy()
    w = max(1, int(ctx["window"]))
    if secs.size < max(int(ctx["min_points"]), w) or not np.isfinite(secs).all():
        return None
    best = float(pd.Series(secs).rolling(w).median().min())  # one pass, not a median a point
    if best <= 0:
        return None
    slow = secs >= ctx["ratio"] * best
    lost = np.where(slow, (secs - best) * gaps, 0.0)
    total = float((secs * gaps).sum())
    stretch = _costliest_stretch(slow, lost, int(ctx["min_stretch"]))
    if stretch is None or total <= 0:
        return None
    lo, hi = stretch
    cost = float(lost[lo:hi].sum())
    share = cost / total
    if share < ctx["warn_share"]:
        return None
    severity = Severity.ERROR if share >= ctx["share"] else Severity.WARNING
    pace = float(np.median(secs[lo:hi]))
    where = ("from the start" if lo == 0 else "to the end" if hi == secs.size
             else "in the middle")
    first, last = int(steps[lo]), int(steps[hi - 1])
    return ctx.finding(
        message=f"Steps {first}-{last} ({where} of the logged run) ran "
                f"{pace / best:.1f}x slower than the run's best sustained pace "
                f"({seconds(pace)} against {seconds(best)} a step): {seconds(cost)} lost, "
                f"{share:.0%} of the run's step time.",
        severity=severity, confidence=0.55, step=first,
        evidence=[Evidence(
            summary=f"{hi - lo} consecutive points at {seconds(pace)} a step (median), the "
                    f"best {w} in a row {seconds(best)}; time lost {seconds(cost)} of "
                    f"{seconds(total)} ({times.origin})",
            source=times.source, steps=(first, last),
            numbers={"points": hi - lo, "pace_s": pace, "best_s": best, "ratio": pace / best,
                     "lost_s": round(cost, 4), "share": round(share, 4)})],
        advice=["line the slow steps' wall times up with the host's metrics: other processes "
                "on the GPU, I/O wait, memory and swap, CPU clocks",
                "stage the data on local disk (or read it once before training) so that a "
                "cold cache or a network filesystem does not set the pace",
                "raise DataLoader num_workers/prefetch_factor if the loader was the bottleneck, "
                "and run on a dedicated device"],
    )


def _costliest_stretch(slow: np.ndarray, lost: np.ndarray,
                       min_len: int) -> tuple[int, int] | None:
    """The [lo, hi) bounds of the run of consecutive slow points, ``min_len`` long at least,
    that lost the most time."""
    best: tuple[float, int, int] | None = None
    i, n = 0, slow.size
    while i < n:
        if not slow[i]:
            i += 1
            continue
        j = i
        while j < n and slow[j]:
            j += 1
        if j - i >= min_len:
            cost = float(lost[i:j].sum())
            if best is None or cost > best[0]:
                best = (cost, i, j)
        i = j
    return None if best is None else (best[1], best[2])
