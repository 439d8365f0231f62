"""DIV001 loss-diverging: a finite loss that rises after its minimum and stays up."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from runs import synthetic_run

import autopsy
from autopsy.api import diagnose
from autopsy.model import Family, Finding, Run, Severity

SAMPLES = Path(__file__).resolve().parents[2] / "sample_runs"


def _div001(run: Run) -> list[Finding]:
    return [f for f in diagnose(run).findings if f.code == "DIV001"]


def _noise(n: int, sigma: float, seed: int = 0) -> np.ndarray:
    return np.exp(np.random.default_rng(seed).normal(0.0, sigma, n))


def test_fires_on_a_steady_rise_at_the_peak_lr() -> None:
    loss = np.r_[np.linspace(3.0, 2.0, 100), np.linspace(2.0, 4.0, 100)] * _noise(200, 0.03)
    lr = np.r_[np.linspace(3e-4 / 20, 3e-4, 20), np.full(180, 3e-4)]
    run = synthetic_run({"loss": loss, "learning_rate": lr},
                        config={"learning_rate": 3e-4, "max_grad_norm": 0.0, "warmup_steps": 20})
    d = diagnose(run)
    assert d.verdict.code == "DIV001"
    assert d.verdict.family is Family.DIVERGING and d.verdict.cause == "lr_too_high"
    assert 98 <= d.verdict.step <= 110
    f = next(f for f in d.findings if f.code == "DIV001")
    assert f.severity is Severity.ERROR
    assert "at the peak LR" in f.message and "still rising" in f.message
    assert any(e.key == "max_grad_norm" and e.source == "config.json" for e in f.evidence)
    assert any("max_grad_norm=1.0" in a for a in f.advice)
    assert any("learning_rate=0.0003 -> 0.0001" in a for a in f.advice)


def test_fires_on_a_jump_that_stays_up() -> None:
    """A collapse to a high plateau: no trend over the plateau, but the level stayed up."""
    loss = np.r_[np.linspace(3.0, 2.0, 60), np.full(60, 7.0)] * _noise(120, 0.03, 1)
    run = synthetic_run({"loss": loss}, config={"warmup_steps": 0})
    f = _div001(run)
    assert len(f) == 1 and f[0].step in (60, 61)  # after the lowest point before the jump
    assert "stayed up" in f[0].message
    assert any("warmup_steps=" in a for a in f[0].advice)


def test_fires_on_an_explosion_in_the_last_points() -> None:
    run = synthetic_run({"loss": [*np.linspace(3.0, 2.0, 40), 30.0, 300.0, 3000.0]})
    f = _div001(run)
    assert len(f) == 1 and f[0].step == 41
    assert "exploded" in f[0].message
    assert f[0].confidence >= 0.75


def test_fires_from_the_start_when_the_loss_only_rises() -> None:
    run = synthetic_run({"loss": np.linspace(2.0, 6.0, 50) * _noise(50, 0.03, 2)})
    f = _div001(run)
    assert len(f) == 1 and f[0].step <= 5


def test_a_late_rise_with_a_decayed_lr_is_less_sure_and_points_at_the_data() -> None:
    loss = np.r_[np.linspace(3.0, 2.0, 150), np.linspace(2.0, 3.5, 50)] * _noise(200, 0.02, 3)
    lr = np.r_[np.linspace(1e-3, 1e-4, 200)]
    f = _div001(synthetic_run({"loss": loss, "learning_rate": lr}))
    assert len(f) == 1
    assert "while the LR decays" in f[0].message
    assert any("data order" in a for a in f[0].advice)
    assert f[0].confidence < 0.8


def test_near_miss_passes_over_a_spike_that_comes_back() -> None:
    bump = [2.5, 3.0, 3.5, 3.0, 2.5, 2.1, 2.0]
    loss = np.r_[np.linspace(3, 2, 60), bump, np.linspace(2.0, 1.8, 50)] * _noise(117, 0.03, 4)
    assert not _div001(synthetic_run({"loss": loss}))


def test_near_miss_passes_over_a_single_last_point_blow_up() -> None:
    assert not _div001(synthetic_run({"loss": [*np.linspace(3.0, 2.0, 40), 300.0]}))


def test_near_miss_passes_over_a_small_rise_at_the_end() -> None:
    # a 5% drift up at the end (less than min_trend_rise) is not a divergence
    loss = np.r_[np.linspace(3, 2, 60), np.linspace(2.0, 2.1, 60)] * _noise(120, 0.03, 5)
    assert not _div001(synthetic_run({"loss": loss}))


def test_fires_on_a_steady_climb_of_an_epoch_level_loss() -> None:
    # Keras prints one loss per epoch: it fell to 1.09 and climbed back for five epochs in
    # a row (+13%), giving back a third of what it had gained: the run is diverging
    loss = [1.5869, 1.2171, 1.1202, 1.0933, 1.1043, 1.1402, 1.1855, 1.2136, 1.2371]
    (f,) = _div001(synthetic_run({"loss": loss}))
    assert f.step == 5


def test_fires_on_a_sparse_loss_that_never_came_back() -> None:
    # keras-team/keras#7603 as pasted: epochs 15, 16, 380, 381 and 800 of cifar10_cnn; five
    # points, fewer than min_points, both losses up from epoch 16 on
    loss = [0.905, 0.8906, 1.5519, 1.5416, 1.8483]
    val = [0.7667, 0.7404, 1.425, 1.5032, 1.9454]
    (f,) = _div001(synthetic_run({"loss": loss, "eval_loss": val}))
    assert f.step == 3 and f.severity is Severity.ERROR  # steps count from 1
    assert "only 5 loss points" in f.message
    assert any(e.tag == "eval_loss" for e in f.evidence)


def test_near_miss_passes_over_sparse_losses_that_are_not_a_divergence() -> None:
    # one point after the best comes back near it
    assert not _div001(synthetic_run({"loss": [1.2, 0.9, 1.5, 0.95, 1.6]}))
    # the train loss rose but the eval loss kept falling: no overshoot
    assert not _div001(synthetic_run({"loss": [1.0, 0.9, 1.5, 1.6, 1.7],
                                      "eval_loss": [2.0, 1.8, 1.6, 1.5, 1.4]}))
    # three points: one bad epoch cannot be told from a rise
    assert not _div001(synthetic_run({"loss": [0.9, 1.5, 1.8]}))
    # one point after the best
    assert not _div001(synthetic_run({"loss": [2.0, 1.5, 1.2, 1.0, 1.9]}))
    # a per-batch loss as noisy after its lowest point as the gap to it (hnmizuho/AT-BSN#1:
    # BasicSR's l_all every 100 iterations): the first point happened to be the lowest
    assert not _div001(synthetic_run({"loss": [3.4186, 6.2904, 4.8104, 4.5715, 6.9138]}))


def test_a_sparse_steady_climb_has_no_noise_to_hide_in() -> None:
    (f,) = _div001(synthetic_run({"loss": [1.0, 1.5, 2.0, 2.5, 3.0]}))
    assert f.step == 2


def test_near_miss_passes_over_a_converged_loss_drifting_near_zero() -> None:
    # from 2.0 to 0.0006, then a drift to 0.0012: twice the floor, nothing lost that matters
    loss = [*np.geomspace(2.0, 0.0006, 40), *np.linspace(0.0006, 0.0012, 10)]
    assert not _div001(synthetic_run({"loss": loss}))


@pytest.mark.parametrize("sigma", [0.02, 0.1, 0.3, 0.5])
@pytest.mark.parametrize("seed", range(10))
def test_near_miss_passes_over_a_noisy_healthy_decay(sigma: float, seed: int) -> None:
    loss = (2 * np.exp(-np.arange(300) / 100) + 1) * _noise(300, sigma, seed)
    assert not _div001(synthetic_run({"loss": loss}))


def test_near_miss_passes_over_a_noisy_plateau() -> None:
    assert not _div001(synthetic_run({"loss": np.full(300, 2.3) * _noise(300, 0.1, 6)}))


def test_yields_to_the_nan_rules_when_the_loss_goes_non_finite() -> None:
    loss = [*np.linspace(3.0, 2.0, 40), *np.geomspace(4, 1e8, 10), float("nan")]
    assert not _div001(synthetic_run({"loss": loss}))
    grad = [1.0] * 49 + [float("inf")]
    assert not _div001(synthetic_run({"loss": loss[:-1], "grad_norm": grad}))


def test_passes_on_a_loss_that_is_zero_or_negative() -> None:
    assert not _div001(synthetic_run({"loss": np.linspace(-2.0, 3.0, 40)}))


@pytest.mark.parametrize("name", ["healthy_hf_trainer", "resumed_after_stop",
                                  "nan_after_grad_spike", "overfitting_small_data"])
def test_passes_on_sample_runs_that_do_not_diverge(name: str) -> None:
    assert not _div001(autopsy.load_run(SAMPLES / name))


def test_fires_on_the_diverging_finite_sample() -> None:
    label_file = SAMPLES / "diverging_finite.label.json"
    if not label_file.exists():
        pytest.fail("sample_runs/diverging_finite is not made yet")
    label = json.loads(label_file.read_text())
    d = diagnose(autopsy.load_run(SAMPLES / "diverging_finite"))
    assert d.verdict.code == "DIV001"
    assert (d.verdict.family.value, d.verdict.cause) == (label["family"], label["cause"])
    # The label marks the step after the minimum of a 9-step rolling median; the loss sits
    # on a flat floor (0.02-0.04) for several steps there, and DIV001 reports the step after
    # the floor's lowest point: a few steps later, within the label's own smoothing window.
    assert label["first_bad_step"] <= d.verdict.step < label["first_bad_step"] + 9
    f = next(f for f in d.findings if f.code == "DIV001")
    assert "during the warm-up" in f.message and "exploded" in f.message
    lr_at_rise = next(e for e in f.evidence if e.tag == "learning_rate").numbers["lr"]
    assert any(f"learning_rate={lr_at_rise / 2:.2g}" in a for a in f.advice)


def test_near_miss_passes_over_a_noisy_floor_whose_luckiest_point_is_near_the_end() -> None:
    # the loss of an untuned variant (loss_spikes_recover, seed 1): three recovered spikes,
    # then a noisy floor on which the smoothed minimum falls at step 105 by chance; the
    # last points are ordinary noise, not a divergence
    loss = (
    [1.349, 1.4031, 1.3576, 1.3406, 1.2985, 1.2895, 1.3116, 1.2279, 1.1702, 1.1858, 1.1087,
    1.1482, 1.0068, 1.0449, 0.929, 0.9752, 0.8266, 0.8246, 0.8952, 0.8027, 0.6887, 0.6837,
    0.6302, 0.6057, 0.6621, 0.5523, 0.6029, 0.6322, 0.5204, 3.2033, 0.3961, 0.5726, 0.4797,
    0.5079, 0.4369, 0.4652, 0.4787, 0.5388, 0.4331, 0.3495, 0.4487, 0.4786, 0.479, 0.4455,
    0.4429, 0.4358, 0.375, 0.4089, 0.3915, 0.3627, 0.3009, 0.3214, 0.3392, 0.2737, 5.2284,
    0.3766, 0.3504, 0.2277, 0.229, 0.3176, 0.3237, 0.339, 0.3182, 0.2396, 0.274, 0.3232,
    0.2613, 0.3278, 0.3015, 0.3528, 0.2106, 0.2999, 0.3658, 0.3321, 0.2502, 0.2496, 0.2698,
    0.3297, 0.2751, 5.9239, 0.2724, 0.2663, 0.2351, 0.2876, 0.274, 0.3076, 0.2187, 0.2679,
    0.2664, 0.2137, 0.3565, 0.2857, 0.1972, 0.3232, 0.2672, 0.2521, 0.3172, 0.2593, 0.2766,
    0.2903, 0.2477, 0.2631, 0.2036, 0.2466, 0.2626, 0.2151, 0.1717, 0.3055, 0.2857, 0.3323]
    )
    run = synthetic_run({"loss": loss})
    assert all(f.code != "DIV001" for f in diagnose(run).findings)


def test_fires_on_a_loss_logged_only_after_it_blew_up() -> None:
    """mmdet#1081's shape: three lines, the loss already 5e26 and drifting down a little:
    no best to rise from, but no real loss sits at 1e15 or more."""
    run = synthetic_run({"loss": [5.05e26, 4.94e26, 4.81e26]}, steps=[1550, 1600, 1650])
    f = _div001(run)
    assert len(f) == 1 and f[0].step == 1550
    assert "exploded" in f[0].message and "first logged point" in f[0].message
    assert diagnose(run).verdict.family is Family.DIVERGING


def test_fires_from_the_step_the_loss_reached_the_absurd_level() -> None:
    run = synthetic_run({"loss": [2.0, 1.8, 3e16, 4e16]}, steps=[10, 20, 30, 40])
    f = _div001(run)
    assert len(f) == 1 and f[0].step == 30


def test_near_miss_a_huge_loss_that_falls_below_the_bar_passes() -> None:
    """A squared error on raw targets: huge at first, under 1e15 at the end, falling."""
    run = synthetic_run({"loss": [9e15, 2e15, 8e14, 3e14, 1e14]})
    assert _div001(run) == []
    run = synthetic_run({"loss": [3.0, 2.5, 2.0, 1.9, 5e15]})  # one wild last value only
    assert not any("bar" in str(e.summary) for f in _div001(run) for e in f.evidence)


# seven TF slim lines from global step 196220 on (every 10 steps): a per-batch loss whose
# first point is its lowest, then level around 3.2
EXCERPT_STEPS = list(range(196220, 196290, 10))
EXCERPT = [2.2232, 3.2711, 3.2512, 3.7080, 3.2773, 3.0040, 3.1116]


def test_near_miss_passes_over_an_excerpt_whose_first_point_is_its_lowest() -> None:
    assert not _div001(synthetic_run({"loss": EXCERPT}, steps=EXCERPT_STEPS))


def test_fires_on_an_excerpt_whose_points_after_its_first_climb() -> None:
    climbing = [2.2, 3.0, 3.3, 3.5, 3.9, 4.2, 4.6]
    (f,) = _div001(synthetic_run({"loss": climbing}, steps=EXCERPT_STEPS))
    assert f.step == 196230


def test_fires_on_the_same_points_logged_from_the_run_start() -> None:
    # from step 10 on, the low first point is the run's start: the rise from it is shown
    (f,) = _div001(synthetic_run({"loss": EXCERPT}, steps=list(range(10, 80, 10))))
    assert f.step == 20
