"""Small helpers shared by the signal modules."""

from __future__ import annotations

import numpy as np
import pandas as pd


def finite_xy(s: pd.Series) -> tuple[np.ndarray, np.ndarray]:
    """Return ``(steps, values)`` of the finite points of ``s``, sorted by step, as float64."""
    x = np.asarray(s.index, dtype="float64")
    y = np.asarray(s.to_numpy(dtype="float64", na_value=np.nan), dtype="float64")
    keep = np.isfinite(y) & np.isfinite(x)
    x, y = x[keep], y[keep]
    order = np.argsort(x, kind="stable")
    return x[order], y[order]


def even_subsample(n: int, max_points: int) -> np.ndarray:
    """Indices of at most ``max_points`` evenly spaced points out of ``n`` (first and last kept)."""
    if n <= max_points:
        return np.arange(n)
    return np.unique(np.linspace(0, n - 1, max(2, max_points)).round().astype(np.int64))
