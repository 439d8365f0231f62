"""DIV002 loss-spikes: loss spikes that come back, a warning with their place in the schedule."""

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


def _div002(run: Run) -> list[Finding]:
    return [f for f in diagnose(run).findings if f.code == "DIV002"]


def _decay(n: int, sigma: float, seed: int = 0) -> np.ndarray:
    noise = np.exp(np.random.default_rng(seed).normal(0.0, sigma, n))
    return (2 * np.exp(-np.arange(n) / 100) + 1) * noise


def test_fires_on_two_isolated_spikes_and_names_the_batches() -> None:
    loss = _decay(300, 0.05, 1)
    loss[150] *= 2.5
    loss[151] *= 1.8
    loss[220:222] *= [2.0, 1.5]
    lr = np.r_[np.linspace(1.5e-4, 3e-3, 20), np.linspace(3e-3, 1e-5, 280)]
    run = synthetic_run({"loss": loss, "learning_rate": lr},
                        config={"max_grad_norm": 1.0, "warmup_steps": 20})
    d = diagnose(run)
    assert d.verdict.family is Family.HEALTHY  # a warning, not a failure
    (f,) = _div002(run)
    assert f.severity is Severity.WARNING
    assert f.step == 151 and f.cause == "bad_data"
    assert "steps 151, 221" in f.message
    assert any("inspect the batch(es) at step 151 and 221" in a for a in f.advice)
    assert any(e.numbers.get("phase") == "decay" for e in f.evidence)


def test_fires_on_spikes_at_the_peak_without_clipping() -> None:
    loss = _decay(300, 0.03, 2)
    for s in (30, 60, 90, 120):
        loss[s:s + 3] *= [3.0, 2.0, 1.3]
    lr = np.r_[np.linspace(1e-4, 1e-3, 25), np.full(275, 1e-3)]
    run = synthetic_run({"loss": loss, "learning_rate": lr},
                        config={"max_grad_norm": 0.0, "learning_rate": 1e-3})
    (f,) = _div002(run)
    assert f.cause == "no_clipping"
    assert f.step == 31
    assert "4 times" in f.message
    assert any(a == "clip gradients: max_grad_norm=1.0" for a in f.advice)
    assert any("lower the peak LR (learning_rate=0.001 -> 0.0005)" in a for a in f.advice)
    assert any("adam_beta2" in a for a in f.advice)


def test_fires_with_lr_too_high_when_clipped_spikes_repeat_at_the_peak() -> None:
    loss = _decay(300, 0.03, 3)
    for s in (40, 80, 120):
        loss[s:s + 2] *= [2.5, 1.6]
    lr = np.r_[np.linspace(1e-4, 1e-3, 25), np.full(275, 1e-3)]
    (f,) = _div002(synthetic_run({"loss": loss, "learning_rate": lr},
                                 config={"max_grad_norm": 1.0}))
    assert f.cause == "lr_too_high"


def test_near_miss_passes_over_a_spike_that_does_not_come_back() -> None:
    loss = np.r_[_decay(100, 0.03, 4), np.full(50, 6.0)]
    assert not _div002(synthetic_run({"loss": loss}))


def test_near_miss_passes_over_one_odd_batch() -> None:
    loss = _decay(200, 0.05, 5)
    loss[120] *= 2.0  # one point out, straight back: ordinary
    assert not _div002(synthetic_run({"loss": loss}))


def test_near_miss_passes_when_the_loss_falls_to_a_logged_zero_with_a_nan_grad_norm() -> None:
    """HF's NaN filter can log loss 0.0 once the grad norm is NaN: that is no recovery."""
    loss = [3.3, 3.4, 3.7, 4.2, 3.9, 4.6, 3.5, 3.4, 3.6, 3.3, 3.5, 950.0, 3e4, 2e6] + [0.0] * 10
    grad = [1.0] * 13 + [float("nan")] * 11
    assert not _div002(synthetic_run({"loss": loss, "grad_norm": grad}))
    assert not _div002(synthetic_run({"loss": loss}))


@pytest.mark.parametrize("sigma", [0.01, 0.05, 0.1, 0.3])
@pytest.mark.parametrize("seed", range(10))
def test_near_miss_passes_over_a_noisy_healthy_decay(sigma: float, seed: int) -> None:
    assert not _div002(synthetic_run({"loss": _decay(300, sigma, seed)}))


@pytest.mark.parametrize("name", ["healthy_hf_trainer", "resumed_after_stop",
                                  "nan_after_grad_spike", "overfitting_small_data"])
def test_passes_on_sample_runs_without_recovering_spikes(name: str) -> None:
    assert not _div002(autopsy.load_run(SAMPLES / name))


def test_fires_on_the_loss_spikes_recover_sample() -> None:
    label_file = SAMPLES / "loss_spikes_recover.label.json"
    if not label_file.exists():
        pytest.fail("sample_runs/loss_spikes_recover is not made yet")
    label = json.loads(label_file.read_text())
    run = autopsy.load_run(SAMPLES / "loss_spikes_recover")
    d = diagnose(run)
    assert d.verdict.family.value == label["family"] == "healthy"  # a warning, not a failure
    (f,) = _div002(run)
    assert [e.numbers["step"] for e in f.evidence if e.tag == "loss"] == label["spike_steps"]
    assert f.step == label["spike_steps"][0]
    assert f.cause == "bad_data"  # back at the next step each time: corrupted batches
    assert any(", ".join(map(str, label["spike_steps"])) in a for a in f.advice)
