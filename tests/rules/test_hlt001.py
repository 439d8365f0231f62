"""HLT001 loss-decreasing: vouches only for a finite, falling loss."""

from __future__ import annotations

import math

import numpy as np
from runs import synthetic_run

from autopsy.api import diagnose
from autopsy.model import Family


def test_fires_for_a_finite_falling_loss() -> None:
    run = synthetic_run({"loss": [2.0 / (1 + 0.1 * i) for i in range(30)]})
    d = diagnose(run)
    assert d.verdict.family is Family.HEALTHY
    assert d.verdict.code == "HLT001"


def test_near_miss_passes_over_a_loss_that_does_not_fall() -> None:
    run = synthetic_run({"loss": [1.0 + 0.01 * math.sin(i) for i in range(30)]})
    assert all(f.code != "HLT001" for f in diagnose(run).findings)


def test_near_miss_passes_when_grad_norm_has_a_nan() -> None:
    run = synthetic_run({"loss": [2.0 / (1 + 0.1 * i) for i in range(30)],
                         "grad_norm": [1.0] * 29 + [float("nan")]})
    assert all(f.code != "HLT001" for f in diagnose(run).findings)


def test_too_few_points_is_unknown_not_healthy() -> None:
    run = synthetic_run({"loss": [2.0, 1.0]})
    assert diagnose(run).verdict.family is Family.UNKNOWN


def test_fires_on_three_epoch_averages() -> None:
    # a Keras/Lightning run logged once per epoch: three points that fall are enough
    d = diagnose(synthetic_run({"loss": [0.39, 0.364, 0.345]}))
    assert (d.verdict.family, d.verdict.code) == (Family.HEALTHY, "HLT001")


def test_fires_on_a_steady_fall_whose_last_point_ticks_up() -> None:
    # six points of a pre-training excerpt: first to last falls 4.9%, the fitted line 5.2%
    # with its whole 95% interval below zero
    d = diagnose(synthetic_run({"loss": [6.1384, 6.0388, 6.0348, 5.967, 5.8311, 5.8383]}))
    assert (d.verdict.family, d.verdict.code) == (Family.HEALTHY, "HLT001")
    assert "Theil-Sen" in d.findings[0].evidence[0].summary


def test_near_miss_passes_over_a_steady_fall_smaller_than_min_drop() -> None:
    # a significant but tiny fall (0.2%) is not a run that learns
    d = diagnose(synthetic_run({"loss": [2.303, 2.302, 2.301, 2.300, 2.299, 2.298]}))
    assert all(f.code != "HLT001" for f in d.findings)


def test_near_miss_passes_over_a_noisy_excerpt_with_no_clear_fall() -> None:
    d = diagnose(synthetic_run({"loss": [0.48, 0.46, 0.51, 0.47, 0.49, 0.475]}))
    assert all(f.code != "HLT001" for f in d.findings)


def test_fires_through_a_skipped_step_without_a_logged_scale() -> None:
    # the HF Trainer logs the grad norm of an fp16 step the scaler skipped as NaN, and
    # does not log the loss scale
    loss = [2.0 / (1 + 0.1 * i) for i in range(30)]
    grad = [1.0, float("nan"), float("nan")] + [1.0] * 27
    d = diagnose(synthetic_run({"loss": loss, "grad_norm": grad}))
    assert (d.verdict.family, d.verdict.code) == (Family.HEALTHY, "HLT001")


def test_fires_through_a_few_fp16_scaler_warmup_skips() -> None:
    loss = [2.0 / (1 + 0.1 * i) for i in range(30)]
    grad = [float("inf")] * 3 + [1.0] * 27
    scale = [65536.0, 32768.0, 16384.0] + [8192.0] * 27
    d = diagnose(synthetic_run({"loss": loss, "grad_norm": grad, "loss_scale": scale}))
    assert d.verdict.family is Family.HEALTHY
    assert any("skipped step" in e.summary for e in d.findings[0].evidence)


def test_near_miss_passes_over_many_skips_even_with_a_scaler() -> None:
    loss = [2.0 / (1 + 0.1 * i) for i in range(30)]
    grad = [float("inf")] * 12 + [1.0] * 18
    run = synthetic_run({"loss": loss, "grad_norm": grad, "loss_scale": [1.0] * 30})
    assert all(f.code != "HLT001" for f in diagnose(run).findings)


def test_near_miss_passes_when_a_log_reports_a_traceback() -> None:
    import pandas as pd

    run = synthetic_run({"loss": [2.0 / (1 + 0.1 * i) for i in range(30)]})
    run.events = pd.DataFrame({"rank": pd.array([2], dtype="Int64"), "wall_time": [float("nan")],
                               "step": pd.array([29], dtype="Int64"), "kind": ["traceback"],
                               "message": ["ValueError: bad batch"], "source": ["train.log"],
                               "line": pd.array([10], dtype="Int64"), "details": [{}]})
    d = diagnose(run)
    assert all(f.code != "HLT001" for f in d.findings)
    assert d.verdict.family is Family.CRASH  # CRASH001 explains it


def test_fires_when_the_run_went_on_past_a_crash() -> None:
    from repo_paths import SAMPLE_RUNS

    import autopsy

    d = diagnose(autopsy.load_run(SAMPLE_RUNS / "resumed_after_stop"))
    assert d.verdict.family is Family.HEALTHY
    crash = [f for f in d.findings if f.code == "CRASH001"]
    assert crash and crash[0].severity.value == "warning"


def test_near_miss_passes_over_a_loss_below_zero_that_keeps_falling() -> None:
    # a cross-entropy fed targets outside [0, 1] goes negative without bound: no relative
    # fall of such a loss vouches for the run
    d = diagnose(synthetic_run({"loss": [-3.4e4 * (1 + i) ** 2 for i in range(20)]}))
    assert all(f.code != "HLT001" for f in d.findings)


def test_near_miss_passes_over_a_loss_that_fell_then_turned_back_up() -> None:
    # a 13B fine-tune at LR 5e-4: 1.36 -> 0.48, then the loss climbs back to 0.8-1.0 (the
    # start of a divergence); first to last it still fell 35%
    loss = [1.36, 1.1, 0.9, 0.7, 0.55, 0.48, 0.5, 0.66, 1.04, 0.82]
    d = diagnose(synthetic_run({"loss": loss}))
    assert all(f.code != "HLT001" for f in d.findings)


def test_fires_on_a_noisy_loss_that_ends_near_its_best() -> None:
    loss = [2.0, 1.6, 1.3, 1.1, 0.9, 0.95, 0.85, 0.9, 0.88, 0.92, 0.86, 0.9]
    d = diagnose(synthetic_run({"loss": loss}))
    assert (d.verdict.family, d.verdict.code) == (Family.HEALTHY, "HLT001")


def test_fires_on_a_long_noisy_floor_with_one_luckier_stretch() -> None:
    # a loss that fell to a noisy floor; one stretch of the floor (as long as a quarter of
    # the run) sits lower by chance, as the extremes a thinned long log keeps can: the
    # end is near the floor's typical level, so the fall holds
    fall = list(np.linspace(2.5, 0.006, 40))
    lucky = [0.002, 0.006] * 50
    floor = [0.003, 0.009] * 80
    end = [0.0045, 0.0065] * 50
    d = diagnose(synthetic_run({"loss": fall + lucky + floor + end}))
    assert (d.verdict.family, d.verdict.code) == (Family.HEALTHY, "HLT001")


def test_a_run_that_logged_only_its_eval_loss_is_judged_on_it() -> None:
    """A Lightning run that logs only ``val_loss``: a falling eval loss vouches (with less
    confidence), one that turned back up does not."""
    falling = diagnose(synthetic_run({"eval_loss": np.linspace(2.3, 1.1, 10)}))
    assert falling.verdict.family is Family.HEALTHY and falling.verdict.code == "HLT001"
    assert "eval loss fell" in falling.verdict.message
    rising = diagnose(synthetic_run({"eval_loss": [2.3, 1.5, 1.1, 1.0, 1.4, 1.8, 2.0, 2.2]}))
    assert rising.verdict.family is not Family.HEALTHY
    both = diagnose(synthetic_run({"loss": np.linspace(2.3, 1.1, 10),
                                   "eval_loss": np.linspace(2.3, 1.2, 10)}))
    assert "the loss fell" in both.verdict.message


def test_with_no_loss_a_falling_perplexity_vouches() -> None:
    # awslabs/sockeye#154: a Speedometer log of perplexity only, falling from 45560 to 20052
    run = synthetic_run({"perplexity": [45560.0, 38000.0, 31500.0, 27000.0, 23400.0, 20052.0]})
    d = diagnose(run)
    assert d.verdict.family is Family.HEALTHY
    (f,) = [f for f in d.findings if f.code == "HLT001"]
    assert "perplexity fell" in f.message


def test_with_no_loss_a_rising_accuracy_vouches_in_either_scale() -> None:
    for acc in ([0.5, 0.6, 0.7, 0.8], [50.0, 60.0, 70.0, 80.0]):
        d = diagnose(synthetic_run({"accuracy": acc}))
        assert d.verdict.family is Family.HEALTHY, acc
        (f,) = [f for f in d.findings if f.code == "HLT001"]
        assert f"accuracy rose from {acc[0]:g} to {acc[-1]:g}" in f.message


def test_near_miss_passes_over_an_accuracy_that_does_not_rise() -> None:
    for acc in ([0.10, 0.11, 0.09, 0.10, 0.10, 0.11], [0.8, 0.7, 0.6, 0.5]):
        run = synthetic_run({"accuracy": acc})
        assert all(f.code != "HLT001" for f in diagnose(run).findings), acc


def test_a_loss_is_judged_before_an_accuracy() -> None:
    run = synthetic_run({"loss": [1.0 + 0.01 * math.sin(i) for i in range(30)],
                         "accuracy": [0.1 + 0.02 * i for i in range(30)]})
    assert all(f.code != "HLT001" for f in diagnose(run).findings)


def test_isolated_nan_losses_count_as_skipped_steps_only_under_a_scaler() -> None:
    """One NaN loss point under an fp16 scaler, the loss finite and falling after it: a
    skipped step. The same NaN with no scaler in sight, or two in a row, is not vouched for."""
    from runs import synthetic_run

    from autopsy.api import diagnose

    loss = [3.0 - 0.1 * i for i in range(20)]
    loss[8] = float("nan")
    scale = [1024.0] * 8 + [512.0] * 12
    found = [f for f in diagnose(synthetic_run({"loss": loss, "loss_scale": scale})).findings
             if f.code == "HLT001"]
    assert len(found) == 1
    assert not [f for f in diagnose(synthetic_run({"loss": loss})).findings if f.code == "HLT001"]
    loss[9] = float("nan")
    assert not [f for f in diagnose(synthetic_run({"loss": loss, "loss_scale": scale})).findings
                if f.code == "HLT001"]
