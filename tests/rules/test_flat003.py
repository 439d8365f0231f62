"""FLAT003 lr-too-low: a flat loss with healthy gradients and an LR below the regime."""

from __future__ import annotations

from flat_cases import assert_verdict_matches_label, codes, noisy
from runs import synthetic_run

from autopsy.api import diagnose
from autopsy.model import Family


def test_fires_on_full_finetune_with_a_tiny_lr() -> None:
    run = synthetic_run({"loss": noisy(2.1, 60), "grad_norm": noisy(0.8, 60, noise=0.2)},
                        config={"learning_rate": 1e-7, "per_device_train_batch_size": 8})
    d = diagnose(run)
    assert d.verdict.family is Family.NOT_DECREASING
    assert d.verdict.cause == "lr_too_low"
    assert d.verdict.code == "FLAT003"
    assert "full fine-tuning" in d.verdict.message
    finding = next(f for f in d.findings if f.code == "FLAT003")
    assert any("1e-05..5e-05" in a for a in finding.advice)
    assert any("from scratch" in a for a in finding.advice)


def test_fires_on_lora_with_a_full_finetune_lr() -> None:
    run = synthetic_run({"loss": noisy(1.7, 60), "grad_norm": noisy(0.3, 60, noise=0.2)},
                        config={"learning_rate": 2e-5, "finetune_mode": "lora"})
    f = codes(run)["FLAT003"]
    assert f.cause == "lr_too_low"
    assert "LoRA" in f.message and "1e-04..3e-04" in f.message


def test_fires_from_the_logged_lr_peak_and_beats_chance_level() -> None:
    # from a fresh head the loss starts at ln(2); with lr 5e-8 it never leaves it
    run = synthetic_run({"loss": noisy(0.693, 40, noise=0.005), "grad_norm": noisy(0.5, 40),
                         "learning_rate": [5e-8] * 40}, config={"num_labels": 2})
    flat = [c for c in codes(run) if c.startswith("FLAT")]
    assert flat == ["FLAT003"]
    assert "peak logged LR" in codes(run)["FLAT003"].evidence[-1].summary


def test_fires_with_lower_confidence_without_grad_norm() -> None:
    with_grad = synthetic_run({"loss": noisy(2.0, 40), "grad_norm": noisy(0.5, 40)},
                              config={"learning_rate": 1e-7})
    without = synthetic_run({"loss": noisy(2.0, 40)}, config={"learning_rate": 1e-7})
    assert codes(without)["FLAT003"].confidence < codes(with_grad)["FLAT003"].confidence


def test_near_miss_lora_lr_in_range_passes() -> None:
    run = synthetic_run({"loss": noisy(1.7, 60), "grad_norm": noisy(0.3, 60)},
                        config={"learning_rate": 2e-4, "finetune_mode": "lora"})
    found = codes(run)
    assert "FLAT003" not in found and "FLAT005" in found


def test_near_miss_slow_steady_decline_with_a_low_lr_passes() -> None:
    # 20% down over the run, noise 2%: slow, but learning
    run = synthetic_run({"loss": noisy(2.0, 200, slope=-0.2), "grad_norm": noisy(0.5, 200)},
                        config={"learning_rate": 1e-6})
    assert not any(c.startswith("FLAT") for c in codes(run))


def test_near_miss_sgd_lr_judged_on_the_sgd_range() -> None:
    run = synthetic_run({"loss": noisy(2.0, 40), "grad_norm": noisy(0.5, 40)},
                        config={"learning_rate": 5e-5, "optim": "sgd"})
    assert "SGD" in codes(run)["FLAT003"].message
    run = synthetic_run({"loss": noisy(2.0, 40), "grad_norm": noisy(0.5, 40)},
                        config={"learning_rate": 1e-2, "optim": "sgd"})
    assert "FLAT003" not in codes(run)


def test_fires_on_sample_lr_too_low_full_finetune() -> None:
    assert_verdict_matches_label("lr_too_low_full_finetune", "FLAT003")


def test_fires_on_a_zero_lr_from_the_start_however_few_points() -> None:
    # EEND's fine-tuning log: "Epoch:   1, LR: 0.0000000, Training Loss: 0.36569" x 3
    run = synthetic_run({"loss": [0.36569, 0.37642, 0.37213], "learning_rate": [0.0] * 3})
    d = diagnose(run)
    assert (d.verdict.code, d.verdict.cause, d.verdict.step) == ("FLAT003", "lr_too_low", 1)
    assert "learning rate is 0 at every logged point" in d.verdict.message


def test_zero_lr_near_misses_pass() -> None:
    # a window from late in a run (the LR decayed to 0, the loss converged): not judged
    late = synthetic_run({"loss": [0.21, 0.21, 0.20], "learning_rate": [0.0] * 3},
                         steps=[9000, 9100, 9200])
    assert "FLAT003" not in codes(late)
    # the loss falls (the LR printed with too few digits is not really 0)
    falling = synthetic_run({"loss": [2.0, 1.5, 1.1], "learning_rate": [0.0] * 3})
    assert "FLAT003" not in codes(falling)
    # an LR that is not 0 everywhere: a warm-up from 0
    warm = synthetic_run({"loss": [2.0, 2.0, 2.0], "learning_rate": [0.0, 1e-5, 2e-5]})
    assert "FLAT003" not in codes(warm)
