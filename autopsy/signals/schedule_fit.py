"""Fitting helpers for :mod:`autopsy.signals.schedule`: the warm-up's end and the decay shape."""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

CONSTANT_TOL = 0.01  # post-peak LR varying by less than 1% of the peak is constant
MAX_STEP_DROPS = 10  # a "step" schedule has at most this many drops
UNKNOWN_RMS = 0.05  # best fit worse than 5% of the peak (RMS) -> "unknown"
_COSINE_PERIODS = np.geomspace(1.0, 8.0, 48)  # cosine fits: observed span / half-period


def _line(x0: float, y0: float, x1: float, y1: float) -> tuple[float, float]:
    """Slope and intercept of the line through two points."""
    slope = (y1 - y0) / (x1 - x0)
    return slope, y0 - slope * x0


def linear_peak(x: np.ndarray, y: np.ndarray, p: int) -> tuple[float, float]:
    """Refine the end of a warm-up whose peak sparse logging may have skipped.

    The warm-up line runs through the two points before the largest one (``p``); when
    ``y[p]`` lies on it (within 1e-5), the peak was logged and is kept. If the
    LR after ``p`` falls, the decay line runs through the two points after ``p`` and the
    peak is where the lines meet, when that lies strictly between ``x[p-1]`` and
    ``x[p+1]`` at a value from ``y[p]`` to ``1.5·y[p]``. If the LR after ``p`` stays at
    the peak, the warm-up ends where the warm-up line reaches ``y[p]`` (if in
    ``(x[p-1], x[p]]``). Otherwise ``(x[p], y[p])``.
    """
    peak = float(y[p])
    if p < 2:
        return float(x[p]), peak
    a_w, b_w = _line(x[p - 2], y[p - 2], x[p - 1], y[p - 1])
    if a_w <= 0 or abs(a_w * x[p] + b_w - peak) <= 1e-5 * abs(peak):
        return float(x[p]), peak  # no ramp, or the peak itself is on the ramp: it was logged
    if p + 1 < x.size and abs(y[p + 1] - peak) <= 1e-6 * abs(peak):
        xe = (peak - b_w) / a_w
        return (float(xe), peak) if x[p - 1] < xe <= x[p] else (float(x[p]), peak)
    if p + 2 >= x.size:
        return float(x[p]), peak
    a_d, b_d = _line(x[p + 1], y[p + 1], x[p + 2], y[p + 2])
    if a_d >= 0:
        return float(x[p]), peak
    xe = (b_d - b_w) / (a_w - a_d)
    ye = a_w * xe + b_w
    if x[p - 1] < xe < x[p + 1] and peak <= ye <= 1.5 * peak:
        return float(xe), float(ye)
    return float(x[p]), peak


def warmup_length(x: np.ndarray, y: np.ndarray, p: int, peak_step: float) -> float:
    """Warm-up length: ``peak_step`` minus where the ramp starts.

    The ramp starts at ``x[0]``, or where the line through the first two points crosses 0
    when that lies within one logging interval before ``x[0]`` and not before step 0 (a
    ramp from 0 whose first point was not logged). At least 1.
    """
    start = float(x[0])
    if p >= 1 and y[0] > 0 and y[1] > y[0]:
        a, b = _line(x[0], y[0], x[1], y[1])
        zero = -b / a
        if max(0.0, x[0] - (x[1] - x[0])) <= zero <= x[0]:
            start = zero
    return max(1.0, peak_step - start)


def _rms(r: np.ndarray) -> float:
    return float(np.sqrt(np.mean(r * r)))


def _fit_linear(u: np.ndarray, v: np.ndarray) -> float:
    a = np.column_stack([np.ones_like(u), u])
    coef = np.linalg.lstsq(a, v, rcond=None)[0]
    return _rms(a @ coef - v) if coef[1] <= 0 else math.inf


def _cosine_rms(u: np.ndarray, v: np.ndarray, c: float) -> float:
    a = np.column_stack([np.ones_like(u), 0.5 * (1.0 + np.cos(np.pi * u / c))])
    coef = np.linalg.lstsq(a, v, rcond=None)[0]
    return _rms(a @ coef - v) if coef[1] >= 0 else math.inf


def _fit_cosine(u: np.ndarray, v: np.ndarray) -> float:
    """Best cosine RMS over c: a grid on [1, 8], then refined between the grid neighbours."""
    rms = [_cosine_rms(u, v, c) for c in _COSINE_PERIODS]
    i = int(np.argmin(rms))
    if not math.isfinite(rms[i]):
        return math.inf
    lo = _COSINE_PERIODS[max(i - 1, 0)]
    hi = _COSINE_PERIODS[min(i + 1, _COSINE_PERIODS.size - 1)]
    return min(rms[i], _golden_min(lambda c: _cosine_rms(u, v, c), lo, hi))


def _golden_min(f: Callable[[float], float], lo: float, hi: float, tol: float = 1e-6) -> float:
    """Minimum of ``f`` on ``[lo, hi]`` by golden-section search (``f`` unimodal there).

    In place of ``scipy.optimize.minimize_scalar``: importing scipy.optimize adds about
    40 MB of resident memory and 0.2 s for one scalar search (``bench/scipy_copies.py``);
    ``tests/signals/test_schedule_fit.py`` checks both find the same minimum.
    """
    ratio = (math.sqrt(5.0) - 1.0) / 2.0
    a, b = lo, hi
    c, d = b - ratio * (b - a), a + ratio * (b - a)
    fc, fd = f(c), f(d)
    best = min(fc, fd, f(lo), f(hi))
    while b - a > tol:
        if fc <= fd:
            b, d, fd = d, c, fc
            c = b - ratio * (b - a)
            fc = f(c)
        else:
            a, c, fc = c, d, fd
            d = a + ratio * (b - a)
            fd = f(d)
        best = min(best, fc, fd)
    return best


def _fit_exponential(u: np.ndarray, v: np.ndarray) -> float:
    if np.any(v <= 0):
        return math.inf
    a = np.column_stack([np.ones_like(u), u])
    coef = np.linalg.lstsq(a, np.log(v), rcond=None)[0]
    return _rms(np.exp(a @ coef) - v) if coef[1] < 0 else math.inf


def _is_step(v: np.ndarray) -> bool:
    """Piecewise constant: at most 10 drops, only drops, at least half the pairs equal."""
    d = np.diff(v)
    changed = ~np.isclose(v[1:], v[:-1], rtol=1e-4, atol=0.0)
    drops = int(changed.sum())
    return 1 <= drops <= MAX_STEP_DROPS and bool(np.all(d[changed] < 0)) and drops * 2 <= d.size


def classify_decay(
    xs: np.ndarray, ys: np.ndarray, peak: float, *, has_warmup: bool
) -> tuple[str, float]:
    """Classify the decay from the peak: returns ``(shape, rms residual / peak)``.

    Values are divided by ``peak`` and steps mapped to ``u`` in [0, 1]. "constant" when
    ``(max - min) / peak < 1%`` (a lone peak point is "constant" without warm-up, else
    "unknown"); "step" by :func:`_is_step`; else least-squares fits of ``a + b·u``
    (b <= 0), ``a + b·(1 + cos(pi·u/c))/2`` (b >= 0, c in [1, 8]) and ``exp(a + b·u)``
    (b < 0). The lowest RMS wins; "unknown" when even that exceeds 5%. The cosine starts
    flat at the peak (no linear term), so a straight line, even a noisy or short one, is
    not taken for a cosine.
    """
    if xs.size == 1:
        return ("unknown" if has_warmup else "constant"), math.nan
    v = ys / peak
    if float(v.max() - v.min()) < CONSTANT_TOL:
        return "constant", float(np.std(v))
    if xs.size >= 4 and _is_step(v):
        return "step", math.nan
    if xs.size < 3:
        return "unknown", math.nan
    u = (xs - xs[0]) / (xs[-1] - xs[0])
    fits = {"linear": _fit_linear(u, v), "cosine": _fit_cosine(u, v),
            "exponential": _fit_exponential(u, v)}
    best = min(fits, key=fits.__getitem__)  # ties go to the first: linear
    if fits[best] > UNKNOWN_RMS:
        return "unknown", fits[best]
    return best, fits[best]
