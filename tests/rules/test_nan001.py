"""NAN001 nan-after-blowup: a NaN after a grad-norm spike or a loss explosion."""

from __future__ import annotations

import pytest
from nan_runs import (
    NAN,
    bad_batch_run,
    blowup_run,
    flat_grad,
    label,
    label_causes,
    nan_explanations,
    noisy,
    sample,
)
from runs import synthetic_run

from autopsy.api import diagnose
from autopsy.model import Family, Severity
from autopsy.rules.settings import Settings


def test_fires_on_the_sample_nan_after_grad_spike() -> None:
    d = diagnose(sample("nan_after_grad_spike"))
    expected = label("nan_after_grad_spike")
    assert d.verdict.family is Family.NAN_INF
    assert d.verdict.code == "NAN001"
    assert d.verdict.cause == "lr_too_high"
    assert d.verdict.cause in label_causes(expected, "lr_too_high")
    assert d.verdict.step == (expected or {}).get("first_bad_step", 8) == 8
    finding = next(f for f in d.findings if f.code == "NAN001")
    assert "no warm-up" in finding.message and "max_grad_norm=0.0" in finding.message
    assert any("max_grad_norm=1.0" in a for a in finding.advice)
    assert any("warm-up" in a for a in finding.advice)
    assert any("from 12 to" in a for a in finding.advice)
    spike = next(e for e in finding.evidence if e.tag == "grad_norm")
    assert spike.numbers["step"] == 6 and spike.numbers["ratio"] > 10
    assert any(e.source == "training_args.bin" for e in finding.evidence)
    assert finding.severity is Severity.CRITICAL


def test_fires_lr_too_high_for_a_high_adam_lr() -> None:
    d = diagnose(blowup_run(lr=3e-3))
    assert (d.verdict.code, d.verdict.cause, d.verdict.step) == ("NAN001", "lr_too_high", 64)
    finding = next(f for f in d.findings if f.code == "NAN001")
    assert "no warm-up" in finding.message and "no gradient clipping" in finding.message


def test_fires_no_clipping_when_the_lr_is_sane() -> None:
    run = blowup_run(lr=3e-5, config={"warmup_ratio": 0.05})
    d = diagnose(run)
    assert (d.verdict.code, d.verdict.cause) == ("NAN001", "no_clipping")
    assert "not unusual" in next(f for f in d.findings if f.code == "NAN001").message


def test_fires_no_warmup_for_an_early_blowup_at_full_lr() -> None:
    run = blowup_run(lr=3e-5, spike_at=8, nan_at=12, config={"max_grad_norm": 1.0})
    d = diagnose(run)
    assert (d.verdict.code, d.verdict.cause, d.verdict.step) == ("NAN001", "no_warmup", 12)


def test_fires_sgd_regime_uses_its_own_range() -> None:
    run = blowup_run(lr=0.05, config={"optim": "sgd", "warmup_ratio": 0.05})
    assert diagnose(run).verdict.cause == "no_clipping"  # 0.05 is an ordinary SGD LR
    run = blowup_run(lr=2.0, config={"optim": "sgd", "warmup_ratio": 0.05})
    assert diagnose(run).verdict.cause == "lr_too_high"


def test_fires_on_a_loss_explosion_without_grad_norm() -> None:
    d = diagnose(blowup_run(grad=False))
    assert (d.verdict.code, d.verdict.cause, d.verdict.step) == ("NAN001", "lr_too_high", 64)
    finding = next(f for f in d.findings if f.code == "NAN001")
    assert "exploded" in finding.message


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_fires_on_other_seeds(seed: int) -> None:
    assert diagnose(blowup_run(seed=seed)).verdict.code == "NAN001"


def test_near_miss_passes_a_nan_out_of_a_flat_grad_norm() -> None:
    d = diagnose(bad_batch_run())
    assert all(f.code != "NAN001" for f in d.findings)


def test_near_miss_passes_a_spike_that_recovered_long_before() -> None:
    loss, grad = noisy(100, 3.0, 1.0, 0.03, 0), flat_grad(100, 1.0, 1)
    grad[19] = 30.0
    for i in range(79, 100):
        loss[i] = grad[i] = NAN
    d = diagnose(synthetic_run({"loss": loss, "grad_norm": grad}))
    assert all(f.code != "NAN001" for f in d.findings)
    assert d.verdict.code == "NAN002"


def test_near_miss_passes_a_spike_the_grad_norm_came_back_from() -> None:
    loss, grad = noisy(100, 3.0, 1.0, 0.03, 0), flat_grad(100, 1.0, 1)
    grad[76] = 20.0  # three points before the NaN, then back to normal
    for i in range(79, 100):
        loss[i] = grad[i] = NAN
    d = diagnose(synthetic_run({"loss": loss, "grad_norm": grad}))
    assert d.verdict.code == "NAN002"


def test_one_nan_finding_explains_the_event() -> None:
    for run in (sample("nan_after_grad_spike"), blowup_run(), blowup_run(grad=False)):
        found = nan_explanations(diagnose(run).findings)
        assert [f.code for f in found] == ["NAN001"]


def test_thresholds_are_overridable() -> None:
    strict = Settings(overrides={code: {"spike_ratio": 1e30, "explosion_factor": 1e30}
                                 for code in ("NAN001", "NAN002", "NAN005", "NAN004")})
    d = diagnose(blowup_run(), strict)
    assert d.verdict.code == "NAN002"  # no spike counts any more: a flat-grad NaN


@pytest.mark.parametrize("name", ["healthy_hf_trainer", "resumed_after_stop",
                                  "overfitting_small_data", "diverging_finite",
                                  "loss_spikes_recover", "lr_too_low_full_finetune",
                                  "fp16_warmup_skips_healthy"])
def test_passes_on_sample_runs_without_nan(name: str) -> None:
    d = diagnose(sample(name))
    assert all(not f.code.startswith("NAN") for f in d.findings)
