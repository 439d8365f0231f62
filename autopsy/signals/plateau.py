"""Plateau test: is a series flat over its window, against its own noise?"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from autopsy.signals._common import even_subsample, finite_xy
from autopsy.signals.spikes import MAD_SCALE
from autopsy.signals.theilsen import theilslopes


@dataclass(frozen=True)
class Plateau:
    """The result of :func:`plateau_test`.

    Attributes:
        is_flat: whether the series is flat (see :func:`plateau_test` for the test).
        slope: Theil–Sen slope, per step.
        rel_change: the relative change over the window that was tested: of the fit and of
            the quarter medians, the one larger in magnitude (signed; negative = falling).
        noise: robust std of the residuals about the fit, relative to the level.
        start_level: median of the first quarter of the points.
        end_level: median of the last quarter of the points.
        n: finite points used.
    """

    is_flat: bool
    slope: float
    rel_change: float
    noise: float
    start_level: float
    end_level: float
    n: int


def plateau_test(
    s: pd.Series,
    *,
    rel_tol: float = 0.05,
    min_points: int = 10,
    noise_k: float = 2.0,
    max_points: int = 1000,
) -> Plateau | None:
    """Test whether a series is flat over its whole window.

    On the finite points (``n`` of them; None when ``n < min_points``):

    - ``level = max(|median of all points|, 1e-12)``;
    - Theil–Sen line ``a + b·step`` (on at most ``max_points`` evenly spaced points);
      ``fit_change = b · (last step - first step) / level``;
    - ``start_level``/``end_level`` = medians of the first/last ``max(1, n // 4)`` points;
      ``quarter_change = (end_level - start_level) / level``;
    - ``noise = 1.4826 · MAD(residuals about the line) / level``;
    - ``rel_change`` = whichever of ``fit_change``/``quarter_change`` is larger in magnitude.

    The series is flat iff ``|rel_change| <= max(rel_tol, noise_k · noise)``: the change
    over the window is within ``rel_tol`` of the level, or within the point-to-point noise.
    A fast drop followed by a flat tail is not flat (the quarter medians catch it).
    """
    x, y = finite_xy(s)
    n = int(x.size)
    if n < max(min_points, 3):
        return None
    q = max(1, n // 4)
    start_level, end_level = float(np.median(y[:q])), float(np.median(y[-q:]))
    level = max(abs(float(np.median(y))), 1e-12)
    idx = even_subsample(n, max_points)
    if x[0] == x[-1]:
        slope, intercept = 0.0, float(np.median(y))
    else:
        res = theilslopes(y[idx], x[idx])
        slope, intercept = float(res[0]), float(res[1])
    fit_change = slope * float(x[-1] - x[0]) / level
    quarter_change = (end_level - start_level) / level
    resid = y - (intercept + slope * x)
    noise = float(MAD_SCALE * np.median(np.abs(resid - np.median(resid))) / level)
    rel_change = fit_change if abs(fit_change) >= abs(quarter_change) else quarter_change
    is_flat = abs(rel_change) <= max(rel_tol, noise_k * noise)
    return Plateau(
        is_flat=bool(is_flat),
        slope=slope,
        rel_change=float(rel_change),
        noise=noise,
        start_level=start_level,
        end_level=end_level,
        n=n,
    )
