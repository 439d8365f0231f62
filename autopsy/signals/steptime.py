"""Step times: how long each optimizer step took, per rank, and where the time went.

Where the time of a step comes from, in order of preference:

1. an explicit per-step tag: ``step_time`` (seconds; mmengine/timm ``time``,
   ``batch_time``...) or ``step_time_ms`` (Megatron's ``elapsed time per iteration``);
2. the wall time between consecutive logged steps, divided by the step gap (a run that
   logs every 10 steps gives the mean step time of each interval), taken from one
   source (the file with most time-stamped points of that rank) so that two clocks are
   never mixed;
3. a per-step throughput: ``it/s`` directly, samples/s or tokens/s with the samples or
   tokens per step (:func:`all_throughput_step_times`).

The Trainer's ``train_steps_per_second`` is a run average, not a series: see
:func:`run_average_step_time`.

Warm-up is never counted: the first ``skip_first`` step times of every segment (the
first interval after a start or restart holds compilation, allocator warm-up, cuDNN
autotuning, the first batches' prefetch) are dropped, and no interval spans a segment
boundary. So a slow first step, or a long ETA at the start, is never a finding.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from itertools import pairwise

import numpy as np
import pandas as pd

from autopsy.model.run import Run
from autopsy.signals.spikes import MAD_SCALE
from autopsy.signals.trend import Trend, theil_sen

#: Tags whose rows carry no training-step clock (written after an evaluation or at the end).
NOT_A_CLOCK_PREFIXES: tuple[str, ...] = ("eval_", "test_")
NOT_A_CLOCK: frozenset[str] = frozenset({
    "train_loss_mean", "train_runtime", "train_samples_per_second", "train_steps_per_second",
    "total_flos",
})


@dataclass(frozen=True)
class StepTimes:
    """Seconds per step of one rank, warm-up and restart boundaries removed.

    Attributes:
        rank: the rank (None for a single-process run).
        origin: ``"step_time"``, ``"step_time_ms"`` or ``"wall_time"``.
        seconds: seconds per step, indexed by the step that ended the interval.
        gaps: the step gap of each point (1 for explicit tags).
        source: the file most of the times came from (None for explicit tags).
        dropped: steps left out as warm-up (the first ones of each segment).
        resolution: the clock's resolution in seconds (1.0 for stamps in whole seconds,
            as ``%H:%M:%S`` log formats print them; 0.0 when finer or for explicit tags).
    """

    rank: int | None
    origin: str
    seconds: pd.Series
    gaps: pd.Series
    source: str | None
    dropped: tuple[int, ...] = ()
    resolution: float = 0.0

    @property
    def reliable(self) -> bool:
        """Whether the clock resolves the steps: the median step is at least 5 ticks."""
        if self.resolution <= 0:
            return True
        values = self.seconds.to_numpy(dtype="float64")
        return bool(values.size) and float(np.median(values)) >= 5 * self.resolution

    @property
    def total(self) -> float:
        """Seconds the kept steps took in all (per-step time × steps covered)."""
        return float((self.seconds * self.gaps).sum())


@dataclass(frozen=True)
class StepTimeStats:
    """Robust summary of a step-time series.

    Attributes:
        median: median seconds per step.
        spread: robust standard deviation (1.4826 × MAD).
        n: points used.
        total: seconds covered by the points.
        trend: Theil–Sen fit of seconds against step (None when too few points).
    """

    median: float
    spread: float
    n: int
    total: float
    trend: Trend | None


@dataclass(frozen=True)
class Stalls:
    """Steps far slower than the median, and whether they recur.

    Attributes:
        steps: the stall steps (the step whose interval holds the stall).
        extra_seconds: time above the median spent in them, in all.
        share: ``extra_seconds`` over the time of the whole series.
        period: the common gap between consecutive stalls (None: no regular period).
        regular: share of the gaps that equal ``period`` (within the logging interval).
        matched: the config key whose interval the stalls fall on (``save_steps``,
            ``eval_steps``), or None.
        median: the median step time they were measured against.
    """

    steps: tuple[int, ...]
    extra_seconds: float
    share: float
    period: int | None
    regular: float
    matched: str | None
    median: float


def step_walls(run: Run) -> pd.DataFrame:
    """The time stamp of every logged training step: ``rank, segment, step, wall_time``.

    One source per rank and segment (the file with most time-stamped training rows of
    that rank in that segment, so two clocks are never mixed); a step's time is its first
    stamp there. ``rank`` is -1 for rows without a rank. Evaluation and end-of-run
    summary tags are not clocks. ``attrs["sources"]`` maps each rank to its main file.
    """
    df = run.scalars
    cols = ["rank", "segment", "step", "wall_time"]
    if df.empty:
        return pd.DataFrame({c: pd.Series(dtype="float64") for c in cols})
    tag = df["tag"]
    categories = [str(c) for c in tag.cat.categories]
    allowed = np.array([i for i, t in enumerate(categories)
                        if t not in NOT_A_CLOCK and not t.startswith(NOT_A_CLOCK_PREFIXES)],
                       dtype=np.int64)
    keep = np.isfinite(df["wall_time"].to_numpy(dtype="float64", na_value=np.nan))
    keep &= np.isin(tag.cat.codes.to_numpy(), allowed)
    if not keep.any():
        return pd.DataFrame({c: pd.Series(dtype="float64") for c in cols})
    source = df["source"]
    if not isinstance(source.dtype, pd.CategoricalDtype):
        source = source.astype("category")
    cols = {
        "rank": df["rank"].to_numpy(dtype="int64", na_value=-1)[keep],
        "segment": df["segment"].to_numpy()[keep],
        "step": df["step"].to_numpy(dtype="int64")[keep],
        "wall_time": df["wall_time"].to_numpy(dtype="float64")[keep],
        "source": source.cat.codes.to_numpy()[keep],
    }
    # The points of one log line (loss, lr, grad_norm... of one step) are adjacent and
    # carry the same stamp: keep one, so the frames below are a few times smaller.
    same = np.ones(len(cols["step"]) - 1, dtype=bool)
    for values in cols.values():
        same &= values[1:] == values[:-1]
    if same.any():
        first = np.ones(len(cols["step"]), dtype=bool)
        first[1:] = ~same
        cols = {k: v[first] for k, v in cols.items()}
    sub = pd.DataFrame(cols)
    key = ["rank", "segment", "source"]
    counts = sub.groupby(key, sort=True).size().reset_index(name="n")
    best = counts.sort_values(["rank", "segment", "n"], ascending=[True, True, False],
                              kind="stable").drop_duplicates(["rank", "segment"])
    sub = sub.merge(best[key], on=key, how="inner")
    main = best.sort_values(["rank", "n"], ascending=[True, False], kind="stable")
    main = main.drop_duplicates("rank")
    names = source.cat.categories
    out = sub.groupby(["rank", "segment", "step"], sort=True)["wall_time"].min().reset_index()
    out.attrs["sources"] = {int(r): str(names[c]) for r, c in zip(
        main["rank"].tolist(), main["source"].tolist(), strict=True)}
    return out


def _intervals(rank: int | None, walls: pd.DataFrame, source: str | None,
               skip_first: int) -> StepTimes | None:
    """Per-step seconds from one rank's ``segment, step, wall_time`` rows."""
    w = walls.sort_values(["segment", "step"], kind="stable")
    seg = w["segment"].to_numpy()
    st = w["step"].to_numpy(dtype="int64")
    wt = w["wall_time"].to_numpy(dtype="float64")
    if st.size < 2:
        return None
    same = seg[1:] == seg[:-1]
    gap = st[1:] - st[:-1]
    dt = wt[1:] - wt[:-1]
    valid = same & (gap > 0) & (dt >= 0)
    # the k-th valid interval of its segment (1-based): warm-up when k <= skip_first
    ends = st[1:][valid]
    seg_of = seg[1:][valid]
    order_in_seg = pd.Series(seg_of).groupby(seg_of).cumcount().to_numpy() + 1
    warm = order_in_seg <= skip_first
    dropped = [int(x) for x in ends[warm]]
    steps_out = ends[~warm]
    secs = (dt[valid] / gap[valid])[~warm]
    gaps = gap[valid][~warm]
    # a step logged in two segments (re-run after a restart): the later segment's time wins
    last = ~pd.Series(steps_out[::-1]).duplicated().to_numpy()[::-1]
    steps_out, secs, gaps = steps_out[last], secs[last], gaps[last]
    if secs.size < 2:
        return None
    order = np.argsort(steps_out, kind="stable")
    index = pd.Index(steps_out[order], name="step")
    whole = bool(np.all(wt == np.floor(wt)))
    return StepTimes(rank, "wall_time", pd.Series(secs[order], index=index, dtype="float64"),
                     pd.Series(gaps[order], index=index, dtype="int64"), source,
                     tuple(dropped), resolution=1.0 if whole else 0.0)


def all_wall_step_times(run: Run, *, skip_first: int = 1,
                        walls: pd.DataFrame | None = None) -> dict[int | None, StepTimes]:
    """:func:`wall_step_times` of every rank at once (``None`` for rows without a rank).

    ``walls``: :func:`step_walls` of the run, when the caller has it already.
    """
    walls = step_walls(run) if walls is None else walls
    sources = walls.attrs.get("sources", {})
    plain = walls.copy(deep=False)
    plain.attrs = {}  # else every per-rank frame deep-copies the {rank: source} dict
    out: dict[int | None, StepTimes] = {}
    for r, rows in plain.groupby("rank", sort=True):
        rank = None if int(r) < 0 else int(r)
        got = _intervals(rank, rows, sources.get(int(r)), skip_first)
        if got is not None:
            out[rank] = got
    return out


def wall_step_times(run: Run, rank: int | None = None, *, skip_first: int = 1,
                    walls: pd.DataFrame | None = None) -> StepTimes | None:
    """Seconds per step from the wall time between consecutive logged steps.

    See :func:`step_walls` for the clock; intervals never span a segment boundary, and the
    first ``skip_first`` intervals of each segment are dropped. ``rank=None`` takes the
    rows without a rank, else the lowest rank. None when fewer than two intervals remain.
    """
    every = all_wall_step_times(run, skip_first=skip_first, walls=walls)
    if rank is None and None not in every:
        ranked = sorted(r for r in every if r is not None)
        return every[ranked[0]] if ranked else None
    return every.get(rank)


def all_tag_step_times(run: Run, *, skip_first: int = 1) -> dict[int | None, StepTimes]:
    """Seconds per step of every rank from ``step_time`` (s), else ``step_time_ms``.

    The first ``skip_first`` points of each segment are dropped (warm-up); ranks with
    fewer than two points left are absent.
    """
    out: dict[int | None, StepTimes] = {}
    for tag, scale in (("step_time_ms", 1e-3), ("step_time", 1.0)):  # seconds win
        for rank, seconds in rank_series(run, tag, skip_first=skip_first, scale=scale).items():
            if len(seconds) >= 2:
                ones = pd.Series(1, index=seconds.index, dtype="int64")
                out[rank] = StepTimes(rank, tag, seconds.astype("float64"), ones, None)
    return out


def tag_step_times(run: Run, rank: int | None = None, *,
                   skip_first: int = 1) -> StepTimes | None:
    """Seconds per step of one rank from an explicit ``step_time`` or ``step_time_ms`` tag.

    ``rank=None`` takes the rows without a rank, else the lowest rank. None when the
    run has neither tag for this rank, or fewer than two points remain.
    """
    every = all_tag_step_times(run, skip_first=skip_first)
    if rank is None and None not in every:
        ranked = sorted(r for r in every if r is not None)
        return every[ranked[0]] if ranked else None
    return every.get(rank)


def throughput_unit(raw_tag: str) -> str | None:
    """What a throughput tag counts per second: ``"steps"``, ``"samples"``, ``"tokens"``.

    From the raw spelling (``it/s``, ``samples_per_second``, ``tokens_per_sec``, ``wps``);
    None when it does not say (a bare ``throughput``).
    """
    raw = raw_tag.strip().lower()
    if raw in ("it/s", "its", "iter/s", "steps_per_second", "train/steps_per_second"):
        return "steps"
    if "token" in raw or "word" in raw or raw in ("wps", "train/wps"):
        return "tokens"
    if "sample" in raw or "image" in raw or "example" in raw or raw == "img/s":
        return "samples"
    return None


def all_throughput_step_times(
    run: Run, *, skip_first: int = 1, samples_per_step: float | None = None,
    tokens_per_step: float | None = None, lower_bound: bool = False,
) -> dict[int | None, StepTimes]:
    """Seconds per step from per-step throughput: ``units per step / units per second``.

    ``it/s`` needs nothing more; samples/s needs ``samples_per_step`` and tokens/s needs
    ``tokens_per_step`` (both for the whole job: DeepSpeed's and Megatron's throughputs
    are global). Ranks whose throughput cannot be converted are absent, unless
    ``lower_bound``: then a unit whose amount per step is unknown (the batch size of a
    samples/s, a bare ``Speed``) counts as one per step, which gives a lower bound of
    every step time (a step processes at least one unit) with the true relative changes.
    """
    df = run.scalars
    if df.empty:
        return {}
    mask = (df["tag"] == "throughput").to_numpy(dtype=bool)
    if not mask.any():
        return {}
    per_unit = {"steps": 1.0, "samples": samples_per_step, "tokens": tokens_per_step}
    out: dict[int | None, StepTimes] = {}
    for raw in sorted({str(r) for r in df.loc[mask, "raw_tag"].unique()}):
        unit = throughput_unit(raw)
        amount = per_unit.get(unit) if unit else None
        bound = ""
        if (not amount or not math.isfinite(amount) or amount <= 0) and lower_bound:
            amount, bound = 1.0, ", one unit per step: a lower bound"
        if not amount or not math.isfinite(amount) or amount <= 0:
            continue
        sub = df[mask & (df["raw_tag"] == raw).to_numpy(dtype=bool)]
        one = Run(root=run.root, scalars=sub, events=run.events)
        for rank, rate in rank_series(one, "throughput", skip_first=skip_first).items():
            rate = rate[rate > 0]
            if len(rate) >= 2 and rank not in out:
                seconds = amount / rate
                ones = pd.Series(1, index=seconds.index, dtype="int64")
                out[rank] = StepTimes(rank, f"throughput ({raw}{bound})",
                                      seconds.astype("float64"), ones, None)
    return out


def step_times(run: Run, rank: int | None = None, *, skip_first: int = 1,
               walls: pd.DataFrame | None = None) -> StepTimes | None:
    """The best step-time series of one rank: an explicit tag, else wall-time deltas."""
    return (tag_step_times(run, rank, skip_first=skip_first)
            or wall_step_times(run, rank, skip_first=skip_first, walls=walls))


def ranks_of(run: Run) -> list[int]:
    """The ranks that logged scalars, sorted (empty for a single-process run)."""
    if run.scalars.empty:
        return []
    return sorted(int(r) for r in run.scalars["rank"].dropna().unique())


def rank_series(run: Run, tag: str, *, skip_first: int = 1,
                scale: float = 1.0) -> dict[int | None, pd.Series]:
    """``{rank: finite values of tag × scale}`` by step; the first ``skip_first`` points of
    each segment are dropped (warm-up) where the segment starts a process: a restart, or
    the run's own first steps (not a log that starts mid-run), and never all the segment has.

    As :meth:`Run.series` per rank (a step in two segments: the later wins), in one pass
    over the frame. A run without ranks gives ``{None: series}``.
    """
    df = run.scalars
    if df.empty:
        return {}
    mask = (df["tag"] == tag).to_numpy(dtype=bool)
    if not mask.any():
        return {}
    sub = pd.DataFrame({
        "rank": df["rank"].to_numpy(dtype="float64", na_value=-1.0)[mask].astype(np.int64),
        "step": df["step"].to_numpy(dtype="int64")[mask],
        "segment": df["segment"].to_numpy()[mask],
        "value": df["value"].to_numpy(dtype="float64")[mask],
    })
    if (sub["rank"] >= 0).any():
        sub = sub[sub["rank"] >= 0]
    sub = sub.sort_values(["rank", "step", "segment"], kind="stable")
    sub = sub.drop_duplicates(["rank", "step"], keep="last")
    sub = sub[np.isfinite(sub["value"].to_numpy())]
    if skip_first > 0:
        order = sub.sort_values(["rank", "segment", "step"], kind="stable")
        groups = order.groupby(["rank", "segment"], sort=False)
        # never a whole segment: a log that prints one averaged line (PaddleDetection's
        # batch_cost at each epoch start) has no warm-up point to leave out
        # and only where the segment starts the process: a restart (segment > 0) or the
        # run's first steps; a log that starts mid-run (an excerpt, step 6019) has none
        starts = groups["step"].transform("min")
        first = ((groups.cumcount() < skip_first)
                 & (groups["step"].transform("size") > skip_first)
                 & ((order["segment"] > 0) | (starts <= skip_first)))
        sub = sub.drop(index=order.index[first.to_numpy()])
    out: dict[int | None, pd.Series] = {}
    for r, rows in sub.groupby("rank", sort=True):
        if len(rows) >= 1:
            out[None if int(r) < 0 else int(r)] = pd.Series(
                rows["value"].to_numpy() * scale,
                index=pd.Index(rows["step"].to_numpy(), name="step"), name=tag)
    return out


def summarize(seconds: pd.Series, *, exclude: Iterable[int] = ()) -> StepTimeStats | None:
    """Median, robust spread and Theil–Sen trend of a step-time series (``exclude``: steps
    left out, e.g. stalls). None when fewer than 3 points."""
    drop = set(exclude)
    s = seconds[[int(i) not in drop for i in seconds.index]] if drop else seconds
    values = s.to_numpy(dtype="float64")
    values = values[np.isfinite(values)]
    if values.size < 3:
        return None
    med = float(np.median(values))
    mad = float(np.median(np.abs(values - med)))
    return StepTimeStats(median=med, spread=MAD_SCALE * mad, n=int(values.size),
                         total=float(values.sum()), trend=theil_sen(s))


def find_stalls(times: StepTimes, *, ratio: float = 3.0, min_extra: float = 0.05,
                min_score: float = 10.0, min_count: int = 3,
                periods: dict[str, int] | None = None,
                regular_share: float = 0.6) -> Stalls | None:
    """Steps far above the median step time.

    A logged interval is a stall when the time it took beyond the median pace is at
    least ``min_extra`` seconds and ``ratio - 1`` median steps (with one step per
    interval: the step took ``ratio`` × the median), and its per-step time is
    ``min_score`` robust deviations (1.4826 × MAD) above the median. So a 2 s save in a
    10-step logging interval of 0.5 s steps is found although it adds only 0.2 s to the
    interval's mean step time.

    Their cost is the time above the median (per step × the interval's gap: a stall in a
    10-step logging interval is counted once, whole). The period is the most common gap
    between consecutive stalls (to within the logging interval); ``periods`` gives the
    config's intervals (``{"save_steps": 50, "eval_steps": 100}``): the first whose
    multiples hold at least ``regular_share`` of the stall steps (the stall falls in the
    interval ending at the multiple or in the next one) is ``matched``. None when fewer
    than ``min_count`` stalls.
    """
    s = times.seconds
    if len(s) < 3 or not times.reliable:
        return None
    med = float(np.median(s.to_numpy(dtype="float64")))
    if not math.isfinite(med) or med <= 0:
        return None
    extra_per_step = s - med
    spread = MAD_SCALE * float(np.median(np.abs(s.to_numpy(dtype="float64") - med)))
    interval_extra = extra_per_step * times.gaps.reindex(s.index).to_numpy()
    floor = max(min_extra, (ratio - 1.0) * med, 2 * times.resolution)
    slow = s[(interval_extra >= floor) & (extra_per_step > min_score * spread)
             & (extra_per_step > 0)]
    if len(slow) < min_count:
        return None
    steps = [int(i) for i in slow.index]
    extra = float(((slow - med) * times.gaps.reindex(slow.index)).sum())
    share = extra / times.total if times.total > 0 else math.nan
    interval = int(times.gaps.median()) if len(times.gaps) else 1
    diffs = [b - a for a, b in pairwise(steps)]
    period = None
    regular = 0.0
    if diffs:
        common, _ = Counter(diffs).most_common(1)[0]
        near = [d for d in diffs if abs(d - common) <= interval]
        period = round(float(np.median(near)))
        regular = len(near) / len(diffs)
    matched = None
    for key, every in (periods or {}).items():
        tol = max(interval, 1)
        if every and every > 2 * tol:  # an interval of a step or two explains any stall
            hits = sum(1 for st in steps if st % every <= tol)
            if hits >= regular_share * len(steps):
                matched = key
                break
    return Stalls(steps=tuple(steps), extra_seconds=extra, share=float(share), period=period,
                  regular=float(regular), matched=matched, median=med)


def config_periods(run: Run, keys: Iterable[str] = ("save_steps", "eval_steps")) -> dict[str, int]:
    """``{key: steps}`` for the config's positive integer intervals among ``keys``."""
    out: dict[str, int] = {}
    for key in keys:
        value = run.config.get(key)
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            continue
        if math.isfinite(value) and value >= 1 and float(value).is_integer():
            out[key] = int(value)
    return out


def run_average_step_time(run: Run) -> float | None:
    """Seconds per step from the Trainer's ``train_steps_per_second`` summary, if any."""
    s = run.series("train_steps_per_second")
    values = s.to_numpy(dtype="float64")
    values = values[np.isfinite(values) & (values > 0)]
    return float(1.0 / values[-1]) if values.size else None


def median_of_others(values: np.ndarray) -> np.ndarray:
    """For each cell of an ``(n, k)`` array (``k >= 2``), the median of its row without it:
    as ``np.median(np.delete(values, j, axis=1), axis=1)`` for every column ``j``, from one
    sort per row (O(n k log k), not O(n k^2): 1,000 ranks stay well under a second)."""
    n, k = values.shape
    order = np.argsort(values, axis=1, kind="stable")
    ordered = np.take_along_axis(values, order, axis=1)
    pos = np.empty_like(order)
    np.put_along_axis(pos, order, np.broadcast_to(np.arange(k), (n, k)), axis=1)

    def kth(i: int) -> np.ndarray:  # the i-th smallest of the others: skip the cell itself
        return np.take_along_axis(ordered, np.where(i < pos, i, i + 1), axis=1)

    m = k - 1
    return kth(m // 2) if m % 2 else (kth(m // 2 - 1) + kth(m // 2)) / 2


def arrival_lags(run: Run, walls: pd.DataFrame | None = None) -> pd.DataFrame:
    """How late each rank logs each step, against the others: one row per step, one column
    per rank, in seconds (``stamp - median of the other ranks' stamps``).

    Only steps every rank logged are kept; a step logged in two segments counts with its
    later segment. Empty with fewer than two ranks. ``attrs["resolution"]`` is 1.0 when
    every stamp is a whole second (a lag under a second is then unknowable), else 0.0.
    In a job whose ranks synchronise every step, a rank that logs *before* the
    collective and is consistently late is the one the others wait for; ranks that log
    after it show lags near zero.
    """
    walls = step_walls(run) if walls is None else walls
    walls = walls[walls["rank"] >= 0]
    if walls.empty or walls["rank"].nunique() < 2:
        return pd.DataFrame()
    walls = walls.sort_values(["rank", "step", "segment"]).drop_duplicates(
        ["rank", "step"], keep="last")
    stamps = walls["wall_time"].to_numpy(dtype="float64")
    resolution = 1.0 if stamps.size and bool(np.all(stamps == np.floor(stamps))) else 0.0
    wide = walls.pivot(index="step", columns="rank", values="wall_time").dropna()
    if wide.empty:
        return wide
    values = wide.to_numpy(dtype="float64")
    lags = values - median_of_others(values)
    out = pd.DataFrame(lags, index=wide.index, columns=[int(c) for c in wide.columns])
    out.attrs["resolution"] = resolution
    return out
