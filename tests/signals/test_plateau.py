"""Plateau test: change over the window against rel_tol and the noise."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import autopsy
from autopsy.signals import Plateau, plateau_test

SAMPLES = Path(__file__).resolve().parents[2] / "sample_runs"

RNG = np.random.default_rng(11)


def test_flat_noisy_series_is_flat() -> None:
    s = pd.Series(2.3 + RNG.normal(0, 0.02, 400))
    p = plateau_test(s)
    assert isinstance(p, Plateau)
    assert p.is_flat
    assert abs(p.rel_change) < 0.05
    assert p.noise == pytest.approx(0.02 / 2.3, rel=0.2)
    assert p.start_level == pytest.approx(2.3, abs=0.02)
    assert p.end_level == pytest.approx(2.3, abs=0.02)
    assert p.n == 400


def test_slow_decline_is_not_a_plateau() -> None:
    # 3.0 -> 2.4 over the window (-20%), noise 1%: a slow but real decline
    steps = np.arange(500)
    s = pd.Series(3.0 - 0.6 * steps / 499 + RNG.normal(0, 0.03, 500), index=steps)
    p = plateau_test(s)
    assert p is not None and not p.is_flat
    assert p.slope < 0
    assert p.rel_change == pytest.approx(-0.6 / 2.7, rel=0.15)


def test_change_within_the_noise_is_flat() -> None:
    # -10% drift but 15% noise: the drift is within 2x the noise
    steps = np.arange(300)
    s = pd.Series(1.0 - 0.1 * steps / 299 + RNG.normal(0, 0.15, 300), index=steps)
    p = plateau_test(s)
    assert p is not None
    assert abs(p.rel_change) > 0.05
    assert p.is_flat
    strict = plateau_test(s, noise_k=0.0)
    assert strict is not None and not strict.is_flat


def test_fast_drop_then_flat_is_not_flat() -> None:
    # the drop fills the first 30% of the window, then the series is flat
    y = np.r_[np.linspace(5.0, 1.0, 60), np.full(140, 1.0)] + RNG.normal(0, 0.01, 200)
    p = plateau_test(pd.Series(y))
    assert p is not None and not p.is_flat
    assert p.start_level > 1.5 * p.end_level


def test_rel_tol_is_the_threshold() -> None:
    s = pd.Series(np.linspace(1.0, 1.04, 100))  # +4%, no noise
    assert plateau_test(s, rel_tol=0.05).is_flat  # type: ignore[union-attr]
    assert not plateau_test(s, rel_tol=0.03).is_flat  # type: ignore[union-attr]


def test_exactly_constant_including_zero() -> None:
    for level in (0.0, 0.6931):
        p = plateau_test(pd.Series([level] * 50))
        assert p is not None and p.is_flat and p.rel_change == 0.0 and p.noise == 0.0


def test_too_few_finite_points() -> None:
    s = pd.Series([1.0] * 9 + [np.nan, np.inf])
    assert plateau_test(s) is None
    assert plateau_test(s, min_points=5) is not None


def test_sample_runs() -> None:
    healthy = autopsy.load_run(SAMPLES / "healthy_hf_trainer").series("loss")
    p = plateau_test(healthy)
    assert p is not None and not p.is_flat and p.rel_change < -0.5
    tail = plateau_test(healthy.loc[50:])  # the last 11 points still fall ~25%
    assert tail is not None and not tail.is_flat
