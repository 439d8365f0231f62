"""LR-schedule reconstruction from the logged learning rate.

The schedule is read off the series itself (never from the config): where the warm-up ends,
the peak, the shape of the decay after it, and the warm restarts. It works on sparse logging
(an LR every N steps): a linear warm-up's end and peak are found where the warm-up line and
the decay line meet, even when no point was logged there.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd

from autopsy.signals._common import finite_xy
from autopsy.signals.schedule_fit import classify_decay, linear_peak, warmup_length

SHAPES = ("constant", "linear", "cosine", "step", "exponential", "unknown")
PEAK_BAND = 0.05  # "peak" = within 5% of the peak
WARMUP_FRAC = 0.95  # no warm-up when the first LR is at least 95% of the peak
RESTART_RISE = 0.2  # a restart lifts the LR by at least 20% of its cycle's peak ...
RESTART_DECAYED = 0.9  # ... from a trough at most 90% of that peak


@dataclass(frozen=True)
class Schedule:
    """A learning-rate schedule reconstructed by :func:`reconstruct_schedule`.

    Attributes:
        warmup_steps: length of the warm-up in steps (0 when the LR starts at its peak):
            ``peak_step`` minus the step where the warm-up ramp starts (the first logged
            step, or where the ramp line crosses 0 when that lies within one logging
            interval before it and not before step 0). For a ramp from 0 this equals the
            trainer's warmup_steps.
        peak: the peak LR (the largest logged value, or the meeting point of the warm-up
            and decay lines when sparse logging skipped it).
        peak_step: the step where the warm-up ends and the peak is reached.
        shape: the decay after the peak (up to the first restart after it), one of
            ``constant, linear, cosine, step, exponential, unknown``.
        restarts: steps where the LR jumps back up after having decayed (warm restarts,
            or a relaunch whose warm-up starts again).
        first: the first logged LR.
        final: the last logged LR.
        n: finite points used.
        peak_end: the last step, before the first restart after the peak, whose LR is still
            within 5% of the peak (the end of the "peak" phase).
        first_step: the first logged step.
        last_step: the last logged step.
        residual: RMS residual of the chosen decay fit, in units of the peak (NaN if none).
    """

    warmup_steps: int
    peak: float
    peak_step: int
    shape: str
    restarts: tuple[int, ...]
    first: float
    final: float
    n: int
    peak_end: int = 0
    first_step: int = 0
    last_step: int = 0
    residual: float = math.nan


def _restarts(x: np.ndarray, y: np.ndarray) -> list[int]:
    """Steps of warm restarts: a trough after a decay, followed by a substantial rise.

    Runs of equal values (rtol 1e-6) are merged. A trough (a run lower than both
    neighbours) is a restart when its value is at most ``RESTART_DECAYED`` × the peak of its
    cycle so far and the LR then rises by at least ``RESTART_RISE`` × that peak before the
    next trough. The restart step is the trough's when the LR fell into it suddenly (a drop
    of at least 10% of the cycle peak and over 3× the decrement just before: a relaunch
    whose warm-up starts again), else the first step after it (a warm restart's jump).
    """
    same = np.isclose(y[1:], y[:-1], rtol=1e-6, atol=0.0)
    starts = np.flatnonzero(np.r_[True, ~same])
    v = y[starts]
    m = v.size
    if m < 3:
        return []
    troughs = (np.flatnonzero((v[1:-1] < v[:-2]) & (v[1:-1] < v[2:])) + 1).tolist()
    out: list[int] = []
    cycle = 0
    for j, r in enumerate(troughs):
        cyc_peak = float(v[cycle:r].max())
        nxt = troughs[j + 1] if j + 1 < len(troughs) else m
        if v[r] > RESTART_DECAYED * cyc_peak or v[r:nxt].max() - v[r] < RESTART_RISE * cyc_peak:
            continue
        drop = v[r - 1] - v[r]
        before = v[r - 2] - v[r - 1] if r >= 2 else 0.0
        sudden = drop >= 0.1 * cyc_peak and drop > 3.0 * max(before, 0.0)
        out.append(int(x[starts[r] if sudden else starts[r + 1]]))
        cycle = r
    return out


def reconstruct_schedule(lr: pd.Series) -> Schedule | None:
    """Reconstruct the LR schedule from a learning-rate series (None if < 2 finite points).

    - ``peak``/``peak_step``: the largest LR and the first step within 1e-6 of it, refined
      for a linear warm-up by :func:`~autopsy.signals.schedule_fit.linear_peak`.
    - No warm-up when ``first >= 0.95 · peak``; otherwise ``warmup_steps`` as in
      :class:`Schedule`.
    - ``restarts`` as in :func:`_restarts`.
    - ``shape``: :func:`~autopsy.signals.schedule_fit.classify_decay` on the points from the
      peak to the first restart after it: "constant" if they vary by < 1% of the peak,
      "step" if piecewise constant with at most 10 drops, else the best of linear, cosine
      and exponential fits by RMS residual, "unknown" when even the best residual exceeds
      5% of the peak.
    """
    x, y = finite_xy(lr)
    if x.size < 2:
        return None
    peak = float(y.max())
    p = int(np.flatnonzero(y >= peak - 1e-6 * abs(peak))[0])
    restarts = _restarts(x, y)
    after = [r for r in restarts if r > x[p]]
    end = int(np.searchsorted(x, after[0])) if after else x.size
    xs, ys = x[p:end], y[p:end]
    has_warmup = bool(y[0] < WARMUP_FRAC * peak)
    peak_step, peak_hat = float(x[p]), peak
    if has_warmup:
        peak_step, peak_hat = linear_peak(x, y, p)
    shape, resid = classify_decay(xs, ys, peak, has_warmup=has_warmup)
    in_band = np.flatnonzero(ys >= (1.0 - PEAK_BAND) * peak_hat)
    peak_end = float(xs[in_band[-1]]) if in_band.size else peak_step
    if in_band.size and in_band.size != in_band[-1] + 1:  # left the band, then came back
        gaps = np.flatnonzero(np.diff(in_band) > 1)
        peak_end = float(xs[in_band[gaps[0]]])
    return Schedule(
        warmup_steps=round(warmup_length(x, y, p, peak_step)) if has_warmup else 0,
        peak=float(peak_hat),
        peak_step=round(peak_step),
        shape=shape,
        restarts=tuple(restarts),
        first=float(y[0]),
        final=float(y[-1]),
        n=int(x.size),
        peak_end=round(peak_end),
        first_step=int(x[0]),
        last_step=int(x[-1]),
        residual=resid,
    )


def phase_at(schedule: Schedule, step: int) -> str:
    """Where ``step`` sits in the schedule: "warmup", "peak", "decay" or "restart".

    - "restart": within ``max(warmup_steps, span // 20, 1)`` steps at or after a restart
      (span = last_step - first_step); after that window, a later cycle is "peak" for as
      long as the first cycle's peak phase lasted, then "decay".
    - "warmup": before ``peak_step`` when there is a warm-up.
    - "peak": from ``peak_step`` to ``peak_end`` (always, for a constant schedule).
    - "decay": after ``peak_end``.
    """
    s = schedule
    window = max(s.warmup_steps, (s.last_step - s.first_step) // 20, 1)
    before = [r for r in s.restarts if r <= step]
    if before and before[-1] > s.peak_step:
        since = step - before[-1]
        if since < window:
            return "restart"
        return "peak" if since <= window + (s.peak_end - s.peak_step) else "decay"
    if step < s.peak_step:
        return "warmup" if s.warmup_steps > 0 else "peak"
    if s.shape == "constant" or step <= s.peak_end:
        return "peak"
    return "decay"


def lr_at(lr: pd.Series, step: int) -> float | None:
    """The LR in effect at ``step``: the last finite logged value at or before it (or None)."""
    x, y = finite_xy(lr)
    i = int(np.searchsorted(x, step, side="right")) - 1
    return float(y[i]) if i >= 0 else None
