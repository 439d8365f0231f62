"""OVF001 overfitting: eval loss rising after its minimum while the train loss falls."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
from repo_paths import public_run
from runs import synthetic_run

import autopsy
from autopsy.api import diagnose
from autopsy.model import Family, Finding, Run, Severity

SAMPLES = Path(__file__).resolve().parents[2] / "sample_runs"
EVAL_STEPS = list(range(10, 161, 10))
TRAIN = [1.0 * math.exp(-s / 30) for s in range(5, 161, 5)]  # 1.0 -> 0.005
OVERFIT = [0.9, 0.6, 0.5, 0.55, 0.62, 0.7, 0.8, 0.9, 1.0, 1.1, 1.2, 1.3, 1.4, 1.5, 1.6, 1.7]


def _ovf001(run: Run) -> list[Finding]:
    return [f for f in diagnose(run).findings if f.code == "OVF001"]


def _run(evals: list[float], train: list[float] | None = None, **config: object) -> Run:
    series: dict[str, dict[int, float]] = {"eval_loss": dict(zip(EVAL_STEPS, evals, strict=False))}
    if train is not None:
        series["loss"] = dict(zip(range(5, 161, 5), train, strict=True))
    return synthetic_run(series, config=config)


def test_fires_when_eval_rises_while_train_falls() -> None:
    run = _run(OVERFIT, TRAIN, save_steps=40, eval_steps=10, weight_decay=0.0)
    d = diagnose(run)
    assert d.verdict.code == "OVF001"
    assert d.verdict.family is Family.OVERFITTING and d.verdict.cause == "overfitting"
    assert d.verdict.step == 30  # the eval-loss minimum: the last good step
    (f,) = [f for f in d.findings if f.code == "OVF001"]
    assert f.severity is Severity.ERROR
    assert "memorised" in f.message  # train < 0.1 while eval > 1.0
    gap = next(e for e in f.evidence if e.tag == "loss").numbers["gap"]
    assert gap == pytest.approx(1.7 - TRAIN[-1], abs=0.01)
    keep = next(e for e in f.evidence if "checkpoint to keep" in e.summary)
    assert keep.numbers["checkpoint_step"] == 40  # lowest eval among the saved 40/80/120/160
    assert any("load_best_model_at_end=True" in a and "save_steps=10" in a for a in f.advice)
    assert any("weight_decay=0.01-0.1 (now 0)" in a for a in f.advice)


def test_fires_and_keeps_the_best_model_checkpoint_when_the_run_names_it() -> None:
    run = _run(OVERFIT, TRAIN, best_model_checkpoint="out/checkpoint-30")
    (f,) = _ovf001(run)
    assert any(a.startswith("keep checkpoint-30 ") for a in f.advice)
    assert any(e.key == "best_model_checkpoint" for e in f.evidence)


def test_fires_without_a_train_loss_but_says_so() -> None:
    (f,) = _ovf001(_run(OVERFIT))
    assert "not logged" in f.message
    assert f.confidence < next(iter(_ovf001(_run(OVERFIT, TRAIN)))).confidence


def test_near_miss_passes_over_an_eval_loss_wobbling_on_a_plateau() -> None:
    rng = np.random.default_rng(0)
    evals = list(np.r_[[0.9, 0.7], 0.6 * (1 + 0.03 * rng.standard_normal(14))])
    assert not _ovf001(_run(evals, TRAIN))


def test_near_miss_passes_over_a_single_high_last_eval() -> None:
    evals = [0.9, 0.7, 0.6, 0.58, 0.57, 0.56, 0.56, 0.55, 0.55, 0.54, 0.54, 0.54, 0.53,
             0.53, 0.53, 0.7]
    assert not _ovf001(_run(evals, TRAIN))


def test_near_miss_passes_when_the_eval_loss_comes_back_down() -> None:
    evals = [0.9, 0.6, 0.7, 0.8, 0.75, 0.7, 0.62, 0.6, 0.58, 0.56, 0.55, 0.55, 0.54,
             0.54, 0.53, 0.53]
    assert not _ovf001(_run(evals, TRAIN))


def test_near_miss_passes_with_too_few_evals() -> None:
    assert not _ovf001(_run([0.5, 0.9], TRAIN))


def test_passes_when_the_train_loss_rises_too() -> None:
    """Both losses rising is a divergence (DIV001), not overfitting."""
    rising = list(np.r_[np.linspace(1.0, 0.5, 6), np.linspace(0.5, 2.0, 26)])
    assert not _ovf001(_run(OVERFIT, rising))


def test_passes_when_a_rarely_logged_train_loss_rises_too() -> None:
    """Five train-loss points (an HF run logging every 500 steps) that rise after the eval
    minimum are enough to tell a divergence from overfitting."""
    series = {"eval_loss": dict(zip(EVAL_STEPS, OVERFIT, strict=False)),
              "loss": {20: 1.24, 60: 2.03, 100: 2.16, 140: 1.9, 160: 1.79}}
    assert not _ovf001(synthetic_run(series))
    falling = {"eval_loss": series["eval_loss"],
               "loss": {20: 1.24, 60: 0.9, 100: 0.6, 140: 0.4, 160: 0.3}}
    assert _ovf001(synthetic_run(falling))


def test_passes_on_the_healthy_sample() -> None:
    assert not _ovf001(autopsy.load_run(SAMPLES / "healthy_hf_trainer"))
    assert not _ovf001(autopsy.load_run(SAMPLES / "resumed_after_stop"))


def test_fires_on_the_overfitting_sample() -> None:
    d = diagnose(autopsy.load_run(SAMPLES / "overfitting_small_data"))
    assert (d.verdict.code, d.verdict.family, d.verdict.cause) == (
        "OVF001", Family.OVERFITTING, "overfitting")
    assert d.verdict.step == 20
    (f,) = [f for f in d.findings if f.code == "OVF001"]
    assert "memorised" in f.message
    assert any("checkpoint-80" in a and "retrain to step 20" in a for a in f.advice)
    label_file = SAMPLES / "overfitting_small_data.label.json"
    if label_file.exists():
        label = json.loads(label_file.read_text())
        assert (d.verdict.family.value, d.verdict.cause, d.verdict.step) == (
            label["family"], label["cause"], label["first_bad_step"])


def test_fires_when_the_epoch_at_the_best_step_is_nan() -> None:
    series: dict[str, dict[int, float]] = {
        "eval_loss": dict(zip(EVAL_STEPS, OVERFIT, strict=False)),
        "loss": dict(zip(range(5, 161, 5), TRAIN, strict=True)),
        "epoch": {s: (math.nan if s <= 30 else s / 50) for s in range(5, 161, 5)},
    }
    (f,) = _ovf001(synthetic_run(series))
    assert any("train for fewer steps (max_steps=30)" in a for a in f.advice)


def _epochs(evals: list[float], train: list[float]) -> Run:
    """One eval and one train loss per epoch (a Keras or CSV log)."""
    return synthetic_run({"eval_loss": evals, "loss": train})


def test_fires_on_an_eval_loss_climbing_every_epoch_after_its_minimum() -> None:
    # Keras, seven epochs: val_loss 0.457 -> 0.469 -> 0.498 -> 0.534 while loss halves; one
    # eval only is 10% above the minimum, but every one after it rose
    (f,) = _ovf001(_epochs([0.563, 0.523, 0.495, 0.457, 0.469, 0.498, 0.534],
                           [0.631, 0.526, 0.449, 0.371, 0.287, 0.219, 0.158]))
    assert f.step == 4


def test_near_miss_passes_over_a_noisy_eval_floor_with_a_lucky_minimum() -> None:
    # a published Keras CSVLogger file (public corpus, dev half): val_loss wanders between
    # 0.02 and 0.09 for twenty epochs with ReduceLROnPlateau; its lowest eval (0.021) is a
    # lucky one, and the evals after it are no higher than those before it
    run = autopsy.load_run(public_run("keras_csv_healthy_fingerprint_reduce_lr_plateau"))
    assert not _ovf001(run)


def test_fires_past_a_lucky_minimum_when_the_later_evals_trend_up() -> None:
    # one lucky eval early (0.95), then the eval loss climbs from 1.1 to 1.8 while the
    # train loss falls from 1.7 to 0.2
    evals = [1.45, 1.40, 1.41, 0.95, *np.linspace(1.1, 1.8, 16)]
    (f,) = _ovf001(_epochs(evals, list(np.geomspace(1.7, 0.2, 20))))
    assert f.step == 4


def _epochs(evals: list[float], train: list[float]) -> Run:
    steps = range(1, len(evals) + 1)
    return synthetic_run({"eval_loss": dict(zip(steps, evals, strict=True)),
                          "loss": dict(zip(steps, train, strict=True))})


def test_fires_on_an_eval_loss_that_never_came_back_and_drifts_up() -> None:
    """Per-epoch values of a small-data classifier (the shape of the public LeNet/Pokemon
    history): the eval loss bottoms out at epoch 8, stays 2-10% above it for 8 epochs and
    drifts up, never 10% above for two evals in a row, while the train loss falls by 40%."""
    evals = [4.4, 3.6, 3.3, 3.1, 2.9, 2.8, 2.7, 2.61, 2.67, 2.71, 2.73, 2.63, 2.71, 2.74, 2.80,
             2.86]
    train = [4.8, 3.9, 3.4, 3.1, 2.9, 2.6, 2.3, 1.90, 1.80, 1.70, 1.62, 1.55, 1.45, 1.35, 1.25,
             1.15]
    (f,) = _ovf001(_epochs(evals, train))
    assert f.step == 8 and f.cause == "overfitting"


def test_near_miss_a_lucky_minimum_then_a_flat_plateau_passes() -> None:
    """A converged binary classifier (the shape of the public ResNet18 crocodile log): one
    lucky low eval, then a flat eval loss 5-12% above it while the train loss still creeps
    down: a plateau, not overfitting."""
    rng = np.random.default_rng(3)
    evals = [0.087, 0.07, 0.06, 0.0487, *(0.053 + rng.uniform(-0.004, 0.004, 20))]
    train = [0.21, 0.12, 0.08, 0.06, *np.linspace(0.055, 0.04, 20)]
    assert _ovf001(_epochs(evals, train)) == []


def test_fires_on_a_noisy_eval_loss_whose_running_median_rises() -> None:
    # a published Keras CSVLogger file (public corpus, dev half): val_loss jumps 20-40%
    # from epoch to epoch, is lowest at epoch 18 (0.291) and its median of five evals climbs
    # from ~0.33 to ~0.42 while the train loss falls from 0.13 to 0.05-0.09
    run = autopsy.load_run(public_run(
        "keras_csv_tomato_leaf_cnn_val_loss_noisy_rise_after_epoch18_overfitting"))
    (f,) = _ovf001(run)
    assert f.step == 18 and f.cause == "overfitting"
    running = next(e for e in f.evidence if e.summary.startswith("running median"))
    assert running.numbers["rise"] >= 0.1 and running.numbers["window"] == 5


def test_fires_on_a_noisy_synthetic_rise_and_passes_on_a_converged_noisy_floor() -> None:
    """The same eval-to-eval noise (+-15%) around a level that rises by a third while the
    train loss falls fifteenfold, and around a flat level while the train loss creeps down by
    a tenth (a converged run): the first overfits, the second wanders."""
    rng = np.random.default_rng(7)
    noise = 1 + rng.uniform(-0.15, 0.15, 30)
    rising = np.r_[np.linspace(1.0, 0.6, 10), np.linspace(0.6, 0.8, 20)] * noise
    (f,) = _ovf001(_epochs(list(rising), list(np.geomspace(1.5, 0.1, 30))))
    assert 7 <= f.step <= 14
    flat = np.r_[np.linspace(1.0, 0.6, 10), np.full(20, 0.6)] * noise
    creeping = np.r_[np.geomspace(1.5, 0.5, 10), np.linspace(0.5, 0.45, 20)]
    assert _ovf001(_epochs(list(flat), list(creeping))) == []


# an eval loss that falls to ~0.05, then wanders up to ~0.07 (running median +30%) while its
# last eval is back near its minimum: the first reading does not fire (the last eval is not
# 10% above the minimum), and with the second (stale) reading switched off only the running
# median sees the rise
_WANDER = [*np.linspace(0.5, 0.06, 10), 0.05, 0.048, 0.055, 0.05, 0.052, 0.058, 0.06, 0.054,
           0.062, 0.064, 0.058, 0.066, 0.068, 0.06, 0.07, 0.072, 0.065, 0.07, 0.074, 0.052]
_NO_STALE = autopsy.load_settings(sets=["OVF001.stale_evals=1000"])


def _smoothed_only(train: list[float]) -> list[Finding]:
    found = diagnose(_epochs(_WANDER, train), _NO_STALE).findings
    return [f for f in found if f.code == "OVF001"]


def test_fires_on_a_running_median_rise_once_a_generalisation_gap_opens() -> None:
    train = list(np.r_[np.geomspace(1.0, 0.05, 10), np.linspace(0.048, 0.035, 20)])
    (f,) = _smoothed_only(train)
    assert 11 <= f.step <= 14
    running = next(e for e in f.evidence if e.summary.startswith("running median"))
    assert running.numbers["rise"] >= 0.1


def test_near_miss_a_running_median_rise_below_the_train_loss_passes() -> None:
    """The same eval curve beside a train loss above it (dropout and augmentation at training
    time): no generalisation gap opened, not overfitting."""
    train = list(np.r_[np.geomspace(1.0, 0.1, 10), np.linspace(0.1, 0.075, 20)])
    assert _smoothed_only(train) == []


def test_near_miss_a_running_median_rise_beside_a_converged_train_loss_passes() -> None:
    """The same eval curve beside a train loss that creeps down by a tenth: a converged run
    whose eval loss wanders, not one that keeps fitting its training set."""
    train = list(np.r_[np.geomspace(1.0, 0.045, 10), np.linspace(0.045, 0.04, 20)])
    assert _smoothed_only(train) == []
