"""The Theil–Sen line with Sen's (1968) confidence interval, in numpy.

The same estimator and interval as ``scipy.stats.theilslopes`` (the ``separate``
intercept; the test suite checks they agree), written here because importing
``scipy.stats`` adds about 60 MB of resident memory and 0.4 s to an autopsy process
(``bench/scipy_copies.py``, figures in ``docs/performance.md``), a third of autopsy's
memory budget on a large distributed job. The normal quantile is the standard library's
``statistics.NormalDist().inv_cdf`` (Wichura's AS241, accurate to about 1e-16, as
``scipy.special.ndtri``): importing ``scipy.special`` alone took 0.19 s of every run.
"""

from __future__ import annotations

from statistics import NormalDist
from typing import NamedTuple

import numpy as np


class TheilSenLine(NamedTuple):
    """Median slope, intercept, and the slope's confidence interval."""

    slope: float
    intercept: float
    low_slope: float
    high_slope: float


def _tie_term(values: np.ndarray) -> float:
    """Sum of t(t-1)(2t+5) over the groups of ``t`` tied values."""
    _, counts = np.unique(values, return_counts=True)
    t = counts[counts > 1].astype(np.float64)
    return float(np.sum(t * (t - 1) * (2 * t + 5)))


def theilslopes(y: np.ndarray, x: np.ndarray, alpha: float = 0.95) -> TheilSenLine:
    """Theil–Sen slope of ``y`` on ``x`` with a two-sided ``alpha`` confidence interval.

    The slope is the median of the slopes of all pairs with distinct ``x``; the
    intercept ``median(y) - slope * median(x)``; the interval takes the order
    statistics of the pairwise slopes given by Sen (1968), eq. 2.6, with ties.
    Memory is one float64 per pair: callers subsample long series.

    Raises:
        ValueError: fewer than two distinct ``x`` values.
    """
    y = np.asarray(y, dtype=np.float64)
    x = np.asarray(x, dtype=np.float64)
    i, j = np.triu_indices(len(x), k=1)
    dx = x[j] - x[i]
    keep = dx > 0
    if not keep.any():
        raise ValueError("all x values are identical")
    slopes = np.sort((y[j][keep] - y[i][keep]) / dx[keep])
    slope = float(np.median(slopes))
    intercept = float(np.median(y) - slope * np.median(x))
    a = 1.0 - alpha if alpha > 0.5 else alpha
    z = NormalDist().inv_cdf(a / 2.0)
    n, nt = len(y), len(slopes)
    sigsq = (n * (n - 1) * (2 * n + 5) - _tie_term(x) - _tie_term(y)) / 18.0
    try:
        sigma = float(np.sqrt(sigsq))
        upper = min(int(np.round((nt - z * sigma) / 2.0)), nt - 1)
        lower = max(int(np.round((nt + z * sigma) / 2.0)) - 1, 0)
        low, high = float(slopes[lower]), float(slopes[upper])
    except (ValueError, IndexError):
        low = high = float("nan")
    return TheilSenLine(slope, intercept, low, high)
