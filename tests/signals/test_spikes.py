"""Robust spike score against the trailing median/MAD."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import autopsy
from autopsy.signals import Spike, find_spikes, spike_scores

SAMPLES = Path(__file__).resolve().parents[2] / "sample_runs"


def noisy(n: int = 200, seed: int = 0, level: float = 1.0, sd: float = 0.05) -> pd.Series:
    rng = np.random.default_rng(seed)
    return pd.Series(level + rng.normal(0, sd, n), index=pd.Index(np.arange(n) * 10, name="step"))


def test_columns_index_and_min_periods() -> None:
    s = noisy(50)
    df = spike_scores(s, window=10, min_periods=5)
    assert list(df.columns) == ["value", "baseline", "mad", "score", "ratio"]
    assert df.index.tolist() == s.index.tolist()
    assert df["baseline"].iloc[:5].isna().all()
    assert df["score"].iloc[:5].isna().all()
    assert df["baseline"].iloc[5:].notna().all()


def test_matches_the_formula_with_the_point_excluded() -> None:
    rng = np.random.default_rng(3)
    values = rng.lognormal(size=120)
    values[[10, 40, 41]] = [np.nan, np.inf, -np.inf]
    df = spike_scores(pd.Series(values), window=7, min_periods=3)
    seen: list[float] = []
    for i, v in enumerate(values):
        row = df.iloc[i]
        if len(seen) >= 3:
            w = np.array(seen[-7:])
            med = np.median(w)
            mad = np.median(np.abs(w - med))
            assert row["baseline"] == pytest.approx(med)
            assert row["mad"] == pytest.approx(mad)
            if np.isfinite(v):
                floor = 1e-12 + 1e-3 * abs(med)
                assert row["score"] == pytest.approx((v - med) / (1.4826 * max(mad, floor)))
                assert row["ratio"] == pytest.approx(v / med)
        if not np.isfinite(v):
            assert math.isnan(row["score"]) and math.isnan(row["ratio"])
        else:
            seen.append(float(v))


def test_clear_spike_is_found() -> None:
    s = noisy()
    s.iloc[120] = 8.0
    spikes = find_spikes(s)
    assert [sp.step for sp in spikes] == [1200]
    sp = spikes[0]
    assert isinstance(sp, Spike)
    assert sp.value == 8.0
    assert sp.baseline == pytest.approx(1.0, abs=0.05)
    assert sp.ratio == pytest.approx(8.0, rel=0.05)
    assert sp.score > 50


def test_noise_is_not_a_spike() -> None:
    # heavy-tailed noise: large z-scores happen, but never 3x the median
    rng = np.random.default_rng(5)
    s = pd.Series(1.0 + 0.2 * rng.standard_t(2, 2000).clip(-4, 4))
    df = spike_scores(s)
    assert df["score"].max() > 6  # the score alone would fire ...
    assert find_spikes(s) == []  # ... the ratio test does not


def test_big_ratio_in_a_very_noisy_window_is_not_a_spike() -> None:
    s = pd.Series([0.1, 5.0, 0.2, 4.0, 0.3, 6.0, 0.1, 5.0, 0.2, 4.0, 0.3, 12.0])
    df = spike_scores(s, window=10, min_periods=5)
    assert df["ratio"].iloc[-1] >= 3
    assert df["score"].iloc[-1] < 6
    assert 11 not in [sp.step for sp in find_spikes(s, window=10)]


def test_downward_jump_is_not_a_spike() -> None:
    s = noisy()
    s.iloc[100] = 0.01
    assert find_spikes(s) == []
    assert spike_scores(s)["score"].iloc[100] < -6


def test_flat_window_gives_large_finite_score() -> None:
    s = pd.Series([2.0] * 30 + [2.5])
    score = spike_scores(s)["score"].iloc[-1]
    assert math.isfinite(score) and score > 100
    assert find_spikes(s) == []  # 1.25x is not a 3x spike


def test_zero_baseline_gives_infinite_ratio() -> None:
    s = pd.Series([0.0] * 10 + [1.0, 0.0])
    df = spike_scores(s)
    assert df["ratio"].iloc[10] == math.inf
    assert math.isnan(df["ratio"].iloc[11])
    assert [sp.step for sp in find_spikes(s)] == [10]


def test_non_finite_points_never_enter_the_window() -> None:
    s = noisy(60)
    s.iloc[30:40] = np.nan
    s.iloc[45] = np.inf
    df = spike_scores(s)
    assert df["score"].iloc[30:40].isna().all()
    assert df["baseline"].iloc[40:].notna().all()
    assert df["baseline"].iloc[46:].between(0.9, 1.1).all()
    assert find_spikes(s) == []


def test_unsorted_index_is_read_in_step_order() -> None:
    s = noisy(100)
    s.iloc[80] = 10.0
    shuffled = s.sample(frac=1.0, random_state=0)
    assert [sp.step for sp in find_spikes(shuffled)] == [800]


def test_large_series_is_vectorised() -> None:
    rng = np.random.default_rng(7)
    s = pd.Series(1.0 + 0.01 * rng.normal(size=1_000_000))
    s.iloc[[100_000, 700_000]] = 5.0
    s.iloc[::997] = np.nan
    assert [sp.step for sp in find_spikes(s)] == [100_000, 700_000]


def test_empty_and_all_nan() -> None:
    empty = pd.Series([], dtype="float64")
    assert spike_scores(empty).shape == (0, 5)
    assert find_spikes(empty) == []
    all_nan = spike_scores(pd.Series([np.nan] * 8))
    assert all_nan[["baseline", "score"]].isna().all().all()


def test_bad_arguments() -> None:
    with pytest.raises(ValueError):
        spike_scores(noisy(), window=0)


def test_sample_run_grad_norm_spikes_before_the_nan() -> None:
    grad = autopsy.load_run(SAMPLES / "nan_after_grad_spike").series("grad_norm")
    spikes = find_spikes(grad)
    # the first step with the 5 points a window needs; the grad norm ran away from step 3
    assert [sp.step for sp in spikes] == [6, 7]  # the NaNs from step 8 are not spikes
    assert spikes[0].ratio == pytest.approx(240.25, rel=0.01)  # against steps 1..5


def test_sample_healthy_grad_norm_has_no_spike() -> None:
    grad = autopsy.load_run(SAMPLES / "healthy_hf_trainer").series("grad_norm")
    assert find_spikes(grad) == []


@pytest.mark.parametrize("width", [1, 2, 3, 5, 20, 21, 50])
def test_row_medians_equal_numpy_median(width: int) -> None:
    """The sorting median of window rows gives np.median's values exactly."""
    from autopsy.signals.spikes import _row_medians

    rng = np.random.default_rng(width)
    block = rng.standard_normal((500, width)) * 10.0 ** rng.integers(-5, 5, (500, 1))
    block[::7] = np.round(block[::7])  # ties
    assert np.array_equal(_row_medians(block), np.median(block, axis=1))
