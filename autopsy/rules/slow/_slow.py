"""What the slow rules share: the first logged step, number formatting, timing evidence."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from autopsy.model.finding import Evidence
from autopsy.model.run import Run
from autopsy.rules.context import RuleContext
from autopsy.signals.steptime import (
    StepTimes,
    StepTimeStats,
    all_tag_step_times,
    all_throughput_step_times,
    all_wall_step_times,
    arrival_lags,
    step_walls,
)


def _cached(ctx: RuleContext, key: tuple[object, ...], make: object) -> object:
    """``ctx.shared[key]``, computed by ``make()`` the first time (once per engine run)."""
    return ctx.cached(key, make)  # type: ignore[arg-type]


def walls(run: Run, ctx: RuleContext) -> pd.DataFrame:
    """:func:`step_walls` of the run, computed once for every slow rule."""
    return _cached(ctx, ("slow.walls",), lambda: step_walls(run))  # type: ignore[return-value]


def wall_times(run: Run, ctx: RuleContext) -> dict[int | None, StepTimes]:
    """Wall-time step times of every rank (``skip_first`` of the rule), computed once."""
    skip = int(ctx["skip_first"])
    return _cached(ctx, ("slow.wall_times", skip), lambda: all_wall_step_times(  # type: ignore
        run, skip_first=skip, walls=walls(run, ctx)))


def tag_times(run: Run, ctx: RuleContext) -> dict[int | None, StepTimes]:
    """Step times of every rank from explicit tags, computed once."""
    skip = int(ctx["skip_first"])
    return _cached(ctx, ("slow.tag_times", skip),  # type: ignore[return-value]
                   lambda: all_tag_step_times(run, skip_first=skip))


def _global_batch(run: Run) -> float | None:
    """Samples per optimizer step of the whole job, from the config (None if unknown)."""
    values = []
    for key in ("per_device_train_batch_size", "gradient_accumulation_steps", "world_size"):
        v = run.config.get(key)
        if key == "per_device_train_batch_size" and not isinstance(v, (int, float)):
            return None
        ok = isinstance(v, (int, float)) and not isinstance(v, bool) and v > 0
        values.append(float(v) if ok else 1.0)
    return values[0] * values[1] * values[2]


def throughput_times(run: Run, ctx: RuleContext,
                     lower_bound: bool = False) -> dict[int | None, StepTimes]:
    """Step times from throughput tags (it/s; samples/s with the config's batch), once.
    ``lower_bound``: a unit whose amount per step is unknown counts as one, a lower bound
    of every step (for relative measures: a trend, a drop)."""
    skip = int(ctx["skip_first"])
    return _cached(ctx, ("slow.throughput_times", skip, lower_bound),  # type: ignore[return-value]
                   lambda: all_throughput_step_times(run, skip_first=skip,
                                                     samples_per_step=_global_batch(run),
                                                     lower_bound=lower_bound))


def trend_times(run: Run, ctx: RuleContext, rank: int | None = None) -> StepTimes | None:
    """The step times a trend is fitted to: an explicit tag, else the throughput the run
    printed, else wall-time deltas. The throughput comes before the wall clock here: a
    framework measures it over the steps it timed (evaluation and checkpoint pauses left
    out), while wall deltas between log lines take in those pauses and depend on the step
    numbers the reader inferred (``[Epoch e][Batch b]`` logs without the epoch length)."""
    return (_pick(tag_times(run, ctx), rank)
            or _pick(throughput_times(run, ctx, lower_bound=True), rank)
            or _pick(wall_times(run, ctx), rank))


def lags(run: Run, ctx: RuleContext) -> pd.DataFrame:
    """:func:`arrival_lags` of the run, computed once."""
    return _cached(ctx, ("slow.lags",),  # type: ignore[return-value]
                   lambda: arrival_lags(run, walls(run, ctx)))


def _pick(every: dict[int | None, StepTimes], rank: int | None) -> StepTimes | None:
    if rank is None and None not in every:
        ranked = sorted(r for r in every if r is not None)
        return every[ranked[0]] if ranked else None
    return every.get(rank)


def reference_times(run: Run, ctx: RuleContext, rank: int | None = None) -> StepTimes | None:
    """The step times of ``rank`` (None: the single process, else the lowest rank): an
    explicit tag, else wall-time deltas, else a throughput tag."""
    return (_pick(tag_times(run, ctx), rank) or _pick(wall_times(run, ctx), rank)
            or _pick(throughput_times(run, ctx), rank))


def seconds(value: float) -> str:
    """``0.0715 s``, ``1.2 ms``, ``3.4 min``: a duration, readably."""
    if not math.isfinite(value):
        return str(value)
    if abs(value) < 0.01:
        return f"{value * 1000:.2g} ms" if abs(value) < 0.001 else f"{value * 1000:.1f} ms"
    if abs(value) < 120:
        return f"{value:.3g} s"
    return f"{value / 60:.1f} min"


def first_step(run: Run, rank: int | None = None) -> int | None:
    """The first step the run (or ``rank``) logged anything at."""
    df = run.scalars
    if df.empty:
        return None
    steps = df["step"]
    if rank is not None:
        steps = steps[(df["rank"] == rank).to_numpy(dtype=bool, na_value=False)]
    return int(steps.min()) if len(steps) else None


def times_evidence(times: StepTimes, stats: StepTimeStats, what: str = "step time") -> Evidence:
    """The step-time summary as evidence: median, spread, points, where from."""
    who = f"rank {times.rank}: " if times.rank is not None else ""
    origin = {"wall_time": "wall time between logged steps", "step_time": "the step_time tag",
              "step_time_ms": "the step_time_ms tag"}.get(times.origin, times.origin)
    idx = times.seconds.index
    return Evidence(
        summary=f"{who}{what} median {seconds(stats.median)} (robust spread "
                f"{seconds(stats.spread)}) over {stats.n} steps, from {origin}"
                + (f"; first step(s) {list(times.dropped)[:3]} left out as warm-up"
                   if times.dropped else ""),
        source=times.source, tag=None if times.origin == "wall_time" else times.origin,
        steps=(int(idx.min()), int(idx.max())) if len(idx) else None,
        numbers={"median_s": round(stats.median, 6), "spread_s": round(stats.spread, 6),
                 "points": stats.n},
    )


def median(s: pd.Series) -> float:
    """The median of the finite values of ``s`` (NaN when none)."""
    v = s.to_numpy(dtype="float64")
    v = v[np.isfinite(v)]
    return float(np.median(v)) if v.size else math.nan
