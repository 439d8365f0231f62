"""First non-finite step and all non-finite steps."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

import autopsy
from autopsy.signals import first_non_finite, non_finite_steps

SAMPLES = Path(__file__).resolve().parents[2] / "sample_runs"


def series(values: list[float], steps: list[int] | None = None) -> pd.Series:
    index = pd.Index(steps if steps is not None else range(len(values)), name="step")
    return pd.Series(values, index=index, dtype="float64")


def test_all_finite_gives_none_and_empty() -> None:
    s = series([1.0, 2.0, 1e300, -1e300, 0.0])
    assert first_non_finite(s) is None
    bad = non_finite_steps(s)
    assert bad.dtype == np.int64
    assert bad.size == 0


def test_empty_series() -> None:
    assert first_non_finite(series([])) is None
    assert non_finite_steps(series([])).size == 0


def test_nan_inf_and_minus_inf_are_all_found_by_step_label() -> None:
    s = series([1.0, np.inf, 2.0, np.nan, -np.inf], steps=[10, 20, 30, 40, 50])
    assert first_non_finite(s) == 20
    assert non_finite_steps(s).tolist() == [20, 40, 50]


def test_step_order_not_index_order() -> None:
    s = series([np.nan, 1.0, np.inf], steps=[300, 100, 200])
    assert first_non_finite(s) == 200
    assert non_finite_steps(s).tolist() == [200, 300]


def test_sample_run_nan_after_grad_spike() -> None:
    run = autopsy.load_run(SAMPLES / "nan_after_grad_spike")
    assert first_non_finite(run.series("loss")) == 8
    assert first_non_finite(run.series("grad_norm")) == 8
    assert non_finite_steps(run.series("loss")).tolist() == list(range(8, 41))
    assert first_non_finite(run.series("learning_rate")) is None


def test_healthy_sample_run_is_finite() -> None:
    run = autopsy.load_run(SAMPLES / "healthy_hf_trainer")
    for tag in ("loss", "grad_norm", "learning_rate", "eval_loss"):
        assert first_non_finite(run.series(tag)) is None
