"""Robust trend: the Theil–Sen slope of a series against its steps."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd

from autopsy.signals._common import even_subsample, finite_xy
from autopsy.signals.theilsen import theilslopes


@dataclass(frozen=True)
class Trend:
    """A Theil–Sen line fitted to (step, value), or to (step, log value) when ``log``.

    Attributes:
        slope: change per step (of the value, or of its natural log when ``log``).
        intercept: the fitted value (or log value) at step 0.
        low: lower end of the 95% confidence interval of ``slope``.
        high: upper end of the 95% confidence interval of ``slope``.
        n: points used (after dropping non-finite ones and subsampling).
        log: whether the fit was on the natural log of the values.
        start: the fitted value at the first step used (back-transformed when ``log``).
        end: the fitted value at the last step used (back-transformed when ``log``).
        rel_change: ``end / start - 1`` (NaN when ``start == 0``).
    """

    slope: float
    intercept: float
    low: float
    high: float
    n: int
    log: bool
    start: float
    end: float
    rel_change: float


def theil_sen(s: pd.Series, *, log: bool = False, max_points: int = 1000) -> Trend | None:
    """Fit a Theil–Sen line (as ``scipy.stats.theilslopes``, 95% CI) to a series.

    Only finite points enter (and, when ``log``, only positive ones; the fit is then on
    ``ln(value)``, so ``slope`` is the per-step change of the log and ``exp(slope) - 1``
    the relative change per step). When more than ``max_points`` remain, an evenly spaced
    subsample of ``max_points`` (first and last kept) is used, since the estimator is
    O(n²). Returns None when fewer than 3 points remain or all steps are equal.
    """
    x, y = finite_xy(s)
    if log:
        keep = y > 0
        x, y = x[keep], np.log(y[keep])
    if x.size < 3 or x[0] == x[-1]:
        return None
    idx = even_subsample(x.size, max_points)
    x, y = x[idx], y[idx]
    res = theilslopes(y, x, alpha=0.95)
    slope, intercept = float(res[0]), float(res[1])
    start = intercept + slope * float(x[0])
    end = intercept + slope * float(x[-1])
    if log:
        start, end = math.exp(start), math.exp(end)
    rel = end / start - 1.0 if start != 0 else math.nan
    return Trend(
        slope=slope,
        intercept=intercept,
        low=float(res[2]),
        high=float(res[3]),
        n=int(x.size),
        log=log,
        start=float(start),
        end=float(end),
        rel_change=float(rel),
    )
