"""Resume signals: the boundaries between a run's segments, and the series around them.

A *boundary* is where one launch of a run ends and the next begins (a restart, segment
``k`` to ``k + 1`` of :meth:`autopsy.model.run.Run.segments`). A resume from a checkpoint
saved at step ``c`` starts the new segment at step ``c + 1``; the previous segment usually
went on past ``c`` before it died, so its *pre-crash tail* overlaps the resumed steps and
says what the run did at those steps the first time: the reference an exact resume should
reproduce.

The helpers compare the two sides of a boundary, each from float Series indexed by step:

- :func:`lr_break`: the LR the previous segment had at the resume step against the new
  segment's first LRs (a warm-up starting again, a discontinuity);
- :func:`loss_jump`: the new segment's first losses against the previous segment's at the
  same steps (or its last ones before the resume step), in units of the loss noise, and
  whether the excess decays;
- :func:`pattern_repeat`: whether the new segment's per-step loss wiggles repeat the previous
  segment's from its start (the same batches again);
- :func:`value_at`: a series' value at a step (exact, or the last before it).
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass

import numpy as np
import pandas as pd

from autopsy.model.run import Run
from autopsy.signals._common import finite_xy

MAD_SCALE = 1.4826


@dataclass(frozen=True)
class Boundary:
    """One restart of the run: segment ``previous`` ends, segment ``segment`` begins.

    A relaunch that went on exactly after the previous launch's last step does not send the
    steps back, so it stays in the same segment; it is still a boundary when it wrote its
    own event file after the previous one's (``previous_source`` and ``source`` then name
    the two files, and ``previous == segment``).

    Attributes:
        previous: the segment before the restart.
        segment: the segment after it.
        resume_step: the new segment's (or file's) first step.
        previous_first: the previous segment's (or file's) first step.
        previous_last: its last step (where it died or stopped).
        previous_source: the previous launch's event file, for a boundary inside a segment.
        source: the new launch's event file, for a boundary inside a segment.
    """

    previous: int
    segment: int
    resume_step: int
    previous_first: int
    previous_last: int
    previous_source: str | None = None
    source: str | None = None

    @property
    def replayed(self) -> int:
        """Steps the new segment repeats: the previous segment's tail from the resume step."""
        return max(0, self.previous_last - self.resume_step + 1)


def _source_codes(run: Run) -> tuple[pd.Index, np.ndarray]:
    """The scalars' sources as ``(names, per-row codes)``, without a string per row."""
    src = run.scalars["source"]
    if isinstance(src.dtype, pd.CategoricalDtype):
        return pd.Index(src.cat.categories.astype(str)), src.cat.codes.to_numpy()
    names, codes = np.unique(src.astype(str).to_numpy(), return_inverse=True)
    return pd.Index(names), codes


def _file_boundaries(run: Run) -> list[Boundary]:
    """Relaunches inside one segment: event files written one after the other whose steps
    go on (the second starts after the first's last step and after its last wall time)."""
    df = run.scalars
    if df.empty:
        return []
    names, codes = _source_codes(run)
    event_files = [i for i, n in enumerate(names) if "tfevents" in n]
    if len(event_files) < 2:
        return []
    mask = np.isin(codes, event_files)
    sub = pd.DataFrame({"segment": df["segment"].to_numpy()[mask], "code": codes[mask],
                        "step": df["step"].to_numpy()[mask],
                        "wall_time": df["wall_time"].to_numpy(dtype="float64")[mask]})
    g = sub.groupby(["segment", "code"]).agg(
        first=("step", "min"), last=("step", "max"), t0=("wall_time", "min"),
        t1=("wall_time", "max"), n=("step", "size")).reset_index()
    g = g[(g["n"] >= 2) & g["t0"].notna()]
    # consecutive files of one segment, in order of their first wall time (one sort, no
    # loop per segment: a run of a thousand segments costs no more than one of two)
    g = g.sort_values(["segment", "t0"], kind="stable")
    seg, code = g["segment"].to_numpy(), g["code"].to_numpy()
    first, last = g["first"].to_numpy(), g["last"].to_numpy()
    t0, t1 = g["t0"].to_numpy(), g["t1"].to_numpy()
    pair = (seg[1:] == seg[:-1]) & (t0[1:] > t1[:-1]) & (first[1:] > last[:-1])
    return [Boundary(previous=int(seg[i]), segment=int(seg[i]), resume_step=int(first[i + 1]),
                     previous_first=int(first[i]), previous_last=int(last[i]),
                     previous_source=str(names[code[i]]), source=str(names[code[i + 1]]))
            for i in np.flatnonzero(pair).tolist()]


def boundaries(run: Run) -> list[Boundary]:
    """The run's restarts (empty for a run of one launch): between consecutive segments (a
    segment that only disagreeing ``trainer_state.json`` copies make is none), then between
    event files that continue each other inside a segment."""
    segs = sorted(run.segments(), key=lambda s: s["segment"])
    timed = _timed_segments(run) if len(segs) > 1 else set()
    found = [
        Boundary(previous=a["segment"], segment=b["segment"], resume_step=b["first_step"],
                 previous_first=a["first_step"], previous_last=a["last_step"])
        for a, b in itertools.pairwise(segs) if b["segment"] in timed
    ]
    return found + sorted(_file_boundaries(run), key=lambda b: (b.segment, b.resume_step))


#: Sources whose segments are numbered by completeness, not by time (see docs/readers.md).
UNORDERED_SOURCES = ("trainer_state.json",)


def _timed_segments(run: Run) -> set[int]:
    """Segments that some time-ordered source (an event file, a log) contributes to.

    Copies of ``trainer_state.json`` that disagree become segments numbered by
    completeness, since the files do not say which attempt came first: such a segment
    alone says nothing about what came before what, and makes no boundary.
    """
    names, codes = _source_codes(run)
    ordered = [i for i, n in enumerate(names) if not n.endswith(UNORDERED_SOURCES)]
    seg = run.scalars["segment"].to_numpy()
    return {int(x) for x in np.unique(seg[np.isin(codes, ordered)])}


def sides(run: Run, b: Boundary, tag: str) -> tuple[pd.Series, pd.Series]:
    """``tag`` before and after the boundary: per segment, or per event file inside one."""
    if b.source is None or b.previous_source is None:
        return run.series(tag, segment=b.previous), run.series(tag, segment=b.segment)
    return (run.series(tag, segment=b.previous, source=b.previous_source),
            run.series(tag, segment=b.segment, source=b.source))


def new_side(run: Run, b: Boundary) -> tuple[float, int]:
    """The new side's first wall time (NaN if unknown) and last step."""
    df = run.scalars
    mask = (df["segment"] == b.segment).to_numpy()
    if b.source is not None:
        names, codes = _source_codes(run)
        mask = mask & (codes == (names.get_loc(b.source) if b.source in names else -2))
    if not mask.any():
        return math.nan, b.resume_step
    wall = df["wall_time"].to_numpy(dtype="float64")[mask]
    wall = wall[np.isfinite(wall)]
    return (float(wall.min()) if wall.size else math.nan,
            int(df["step"].to_numpy()[mask].max()))


def value_at(s: pd.Series, step: int) -> tuple[float, int] | None:
    """``(value, step)`` of the last finite point at or before ``step``, or None."""
    x, y = finite_xy(s)
    i = int(np.searchsorted(x, step, side="right")) - 1
    return (float(y[i]), int(x[i])) if i >= 0 else None


def _after(s: pd.Series, step: int, n: int) -> tuple[np.ndarray, np.ndarray]:
    """The first ``n`` finite points at or after ``step``."""
    x, y = finite_xy(s)
    keep = x >= step
    return x[keep][:n], y[keep][:n]


@dataclass(frozen=True)
class LrBreak:
    """The learning rate across a boundary, at the new segment's step that departs most.

    Attributes:
        expected: the previous segment's LR at ``step`` (interpolated between its points when
            it logged on both sides, else its last value before).
        got: the new segment's LR at ``step``.
        step: the new step compared: of the new segment's first ``head`` points, the one
            whose LR departs most from the previous segment's.
        ratio: ``got / expected`` (inf when ``expected`` is 0 and ``got`` is not).
        climb: points the new LR keeps rising from ``step`` on (a warm-up's ramp).
        climb_to: the new LR at the end of that climb.
        previous_climbing: whether the previous segment was itself still rising there (a
            resume inside the warm-up: a rising LR is then no restart).
    """

    expected: float
    got: float
    step: int
    ratio: float
    climb: int
    climb_to: float
    previous_climbing: bool

    @property
    def warmup_again(self) -> bool:
        """The new LR starts well below the expected one and climbs (a warm-up again)."""
        return self.ratio < 0.5 and self.climb >= 2 and not self.previous_climbing


def _expected(px: np.ndarray, py: np.ndarray, step: float) -> float | None:
    """The previous LR at ``step``: interpolated inside its range, else its last value."""
    if px.size == 0 or step < px[0]:
        return None
    if step <= px[-1]:
        return float(np.interp(step, px, py))
    return float(py[-1])


def _ratio(got: float, expected: float) -> float:
    if expected > 0:
        return got / expected
    return math.inf if got > 0 else 1.0


def lr_break(previous: pd.Series, new: pd.Series, resume_step: int,
             *, head: int = 3, window: int = 20) -> LrBreak | None:
    """Compare the LR on both sides of a boundary (None when either side has no LR).

    ``head``: how many of the new segment's first points are compared (a fresh scheduler
    built before the optimizer's state is loaded shows the restart one step late);
    ``window``: how many points a climb is followed for.
    """
    px, py = finite_xy(previous)
    nx, ny = _after(new, resume_step, head + window)
    best: tuple[float, int, float, float] | None = None
    for i in range(min(head, nx.size)):
        exp = _expected(px, py, float(nx[i]))
        if exp is None:
            continue
        r = _ratio(float(ny[i]), exp)
        dev = abs(math.log(r)) if 0 < r < math.inf else math.inf
        if best is None or dev > best[0]:
            best = (dev, i, exp, r)
    if best is None:
        return None
    _, i, expected, ratio = best
    climb = 0
    while i + climb + 1 < ny.size and ny[i + climb + 1] > ny[i + climb] * (1 + 1e-9):
        climb += 1
    before = py[px <= nx[i]][-3:]
    previous_climbing = bool(before.size >= 2 and np.all(np.diff(before) > 0))
    return LrBreak(expected=expected, got=float(ny[i]), step=int(nx[i]), ratio=float(ratio),
                   climb=climb, climb_to=float(ny[i + climb]),
                   previous_climbing=previous_climbing)


def noise(y: np.ndarray) -> float:
    """Robust per-point noise: ``1.4826 · MAD`` of the first differences, over √2."""
    if y.size < 3:
        return math.nan
    d = np.diff(y)
    return float(MAD_SCALE * np.median(np.abs(d - np.median(d))) / math.sqrt(2.0))


@dataclass(frozen=True)
class LossJump:
    """The loss right after a boundary against what the previous segment showed.

    Attributes:
        reference: median of the reference losses over the ``head`` resumed steps where
            the excess is largest (a run of them starting within the first ``head + 1``
            points): the previous segment's losses at the same steps, or its level before.
        after: median of the new segment's losses over those steps.
        ratio: ``after / reference`` (NaN when the reference is not positive).
        score: the median excess over those steps in units of the noise of the previous
            segment's losses (a single-point blip does not move a median of three).
        left: the excess over the reference at the end of ``window``, as a fraction of the
            initial excess (below 0.5: it decayed).
        same_steps: whether the reference is the previous segment's loss at the same steps
            (its pre-crash tail) rather than its last values before the resume step.
        steps: the first and last new steps looked at.
    """

    reference: float
    after: float
    ratio: float
    score: float
    left: float
    same_steps: bool
    steps: tuple[int, int]

    @property
    def decayed(self) -> bool:
        """The excess fell to at most half of its initial value within the window."""
        return self.left <= 0.5


def loss_jump(previous: pd.Series, new: pd.Series, resume_step: int, *, head: int = 3,
              window: int = 20, before: int = 20) -> LossJump | None:
    """Measure a loss jump at a boundary (None without enough points on either side).

    The reference of each new step is the previous segment's loss at that step when it was
    logged there (a resume from a checkpoint older than the crash replays those steps),
    else the median of the previous segment's last ``before`` losses before the resume
    step. ``head`` new points give the jump, the last ``head`` of ``window`` what is left.
    """
    px, py = finite_xy(previous)
    nx, ny = _after(new, resume_step, window)
    tail = py[px < resume_step][-before:]
    if nx.size < 2 * head or tail.size < 5:
        return None
    level = float(np.median(tail))
    at = np.minimum(np.searchsorted(px, nx), px.size - 1)
    logged = px[at] == nx  # the previous segment logged this step too
    ref = np.where(logged, py[at], level)
    excess = ny - ref
    runs = [float(np.median(excess[k:k + head])) for k in range(min(head, excess.size - head) + 1)]
    k_max = int(np.argmax(runs))
    first = runs[k_max]
    last = float(np.median(excess[-head:]))
    sigma = noise(tail)
    reference = float(np.median(ref[k_max:k_max + head]))
    after = float(np.median(ny[k_max:k_max + head]))
    floor = max(sigma, 1e-3 * abs(level), 1e-12) if math.isfinite(sigma) else abs(level) * 0.05
    return LossJump(
        reference=reference, after=after,
        ratio=after / reference if reference > 0 else math.nan,
        score=first / floor,
        left=last / first if first > 0 else 1.0,
        same_steps=bool(logged[k_max:k_max + head].all()), steps=(int(nx[0]), int(nx[-1])),
    )


def _detrend(y: np.ndarray, half: int = 3) -> np.ndarray:
    """``y`` minus its centred rolling median (window ``2·half + 1``)."""
    s = pd.Series(y)
    return y - s.rolling(2 * half + 1, center=True, min_periods=1).median().to_numpy()


def _corr(a: np.ndarray, b: np.ndarray) -> float:
    if a.size < 3 or np.std(a) == 0 or np.std(b) == 0:
        return math.nan
    return float(np.corrcoef(a, b)[0, 1])


@dataclass(frozen=True)
class PatternRepeat:
    """The new segment's loss wiggles against the previous segment's.

    Attributes:
        from_start: correlation of the detrended losses with the previous segment's at the
            same offset from its first step (the same batches again, when high).
        same_step: the correlation at the same steps, where they overlap (NaN if too few).
        points: points compared from the start.
    """

    from_start: float
    same_step: float
    points: int


def pattern_repeat(previous: pd.Series, new: pd.Series, previous_first: int,
                   resume_step: int, *, points: int = 40) -> PatternRepeat | None:
    """Correlate the new segment's per-step loss with the previous one's (None if < 8 pairs).

    Both are detrended by a rolling median first, so a falling loss does not correlate by
    itself; only the step-to-step pattern (which batch was hard) does.
    """
    px, py = finite_xy(previous)
    nx, ny = finite_xy(new)
    nx, ny = nx[nx >= resume_step], ny[nx >= resume_step]
    px, py = px[px >= previous_first], py[px >= previous_first]
    n = min(points, nx.size, px.size)
    if n < 8:
        return None
    offs_new = nx[:n] - resume_step
    offs_prev = px[:n] - previous_first
    if not np.array_equal(offs_new, offs_prev):  # align on offsets both have
        common = np.intersect1d(nx - resume_step, px - previous_first)[:points]
        if common.size < 8:
            return None
        ny_c = ny[np.searchsorted(nx - resume_step, common)]
        py_c = py[np.searchsorted(px - previous_first, common)]
    else:
        ny_c, py_c = ny[:n], py[:n]
    from_start = _corr(_detrend(ny_c), _detrend(py_c))
    both = np.intersect1d(nx, px)
    same = math.nan
    if both.size >= 8:
        same = _corr(_detrend(ny[np.searchsorted(nx, both)]),
                     _detrend(py[np.searchsorted(px, both)]))
    return PatternRepeat(from_start=from_start, same_step=same, points=int(ny_c.size))
