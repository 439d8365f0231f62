"""Non-finite values: where a series first went NaN, +Inf or -Inf."""

from __future__ import annotations

import numpy as np
import pandas as pd


def _bad_mask(s: pd.Series) -> np.ndarray:
    values = s.to_numpy(dtype="float64", na_value=np.nan)
    return ~np.isfinite(values)


def non_finite_steps(s: pd.Series) -> np.ndarray:
    """All steps (index labels) whose value is NaN, +Inf or -Inf, in ascending order, as int64.

    The test is ``~numpy.isfinite(value)``; the series is read in step order whatever its
    index order.
    """
    steps = np.asarray(s.index, dtype="int64")[_bad_mask(s)]
    return np.sort(steps, kind="stable")


def first_non_finite(s: pd.Series) -> int | None:
    """The smallest step whose value is NaN, +Inf or -Inf, or None when every value is finite."""
    bad = non_finite_steps(s)
    return int(bad[0]) if bad.size else None
