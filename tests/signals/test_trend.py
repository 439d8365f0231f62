"""Theil–Sen trend."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import autopsy
from autopsy.signals import Trend, theil_sen

SAMPLES = Path(__file__).resolve().parents[2] / "sample_runs"


def test_exact_line() -> None:
    s = pd.Series(3.0 + 0.5 * np.arange(100), index=np.arange(100) * 10)
    t = theil_sen(s)
    assert isinstance(t, Trend)
    assert t.slope == pytest.approx(0.05)
    assert t.intercept == pytest.approx(3.0)
    assert t.low == pytest.approx(0.05) and t.high == pytest.approx(0.05)
    assert (t.n, t.log) == (100, False)
    assert t.start == pytest.approx(3.0) and t.end == pytest.approx(3.0 + 49.5)
    assert t.rel_change == pytest.approx(49.5 / 3.0)


def test_robust_to_outliers_and_ignores_non_finite() -> None:
    rng = np.random.default_rng(0)
    y = 10.0 - 0.01 * np.arange(500) + rng.normal(0, 0.05, 500)
    y[::50] = 1e6  # 10 huge spikes
    y[7] = np.nan
    y[8] = np.inf
    t = theil_sen(pd.Series(y))
    assert t is not None
    assert t.n == 498
    assert t.slope == pytest.approx(-0.01, rel=0.02)
    assert t.low < -0.01 < t.high
    assert t.high < 0  # a real decline: the CI excludes 0


def test_noise_without_trend_has_ci_spanning_zero() -> None:
    rng = np.random.default_rng(1)
    t = theil_sen(pd.Series(5.0 + rng.normal(0, 1.0, 300)))
    assert t is not None
    assert t.low < 0 < t.high
    assert abs(t.rel_change) < 0.2


def test_log_fit_of_exponential_growth() -> None:
    steps = np.arange(1, 201)
    s = pd.Series(2.0 * 1.05**steps, index=steps)
    s.iloc[3] = -1.0  # not positive: dropped from a log fit
    t = theil_sen(s, log=True)
    assert t is not None and t.log
    assert t.n == 199
    assert t.slope == pytest.approx(math.log(1.05))
    assert t.start == pytest.approx(2.0 * 1.05)
    assert t.end == pytest.approx(2.0 * 1.05**200)
    assert t.rel_change == pytest.approx(1.05**199 - 1, rel=1e-6)


def test_too_few_points() -> None:
    assert theil_sen(pd.Series([1.0, 2.0])) is None
    assert theil_sen(pd.Series([1.0, np.nan, 2.0, np.inf])) is None
    assert theil_sen(pd.Series([1.0, -2.0, 3.0, -4.0]), log=True) is None
    assert theil_sen(pd.Series([], dtype="float64")) is None


def test_subsampling_caps_points_and_keeps_the_slope() -> None:
    n = 50_000
    s = pd.Series(1.0 + 2e-4 * np.arange(n))
    t = theil_sen(s, max_points=500)
    assert t is not None
    assert t.n <= 500
    assert t.slope == pytest.approx(2e-4)
    assert t.start == pytest.approx(1.0) and t.end == pytest.approx(1.0 + 2e-4 * (n - 1))


def test_sample_runs() -> None:
    loss = autopsy.load_run(SAMPLES / "healthy_hf_trainer").series("loss")
    down = theil_sen(loss, log=True)
    assert down is not None and down.high < 0 and down.rel_change < -0.5
    diverging = autopsy.load_run(SAMPLES / "nan_after_grad_spike").series("loss").loc[:7]
    up = theil_sen(diverging, log=True)
    assert up is not None and up.low > 0
