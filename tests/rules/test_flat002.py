"""FLAT002 frozen-params: a flat, batch-to-batch varying loss with a zero grad norm."""

from __future__ import annotations

import math

from flat_cases import assert_verdict_matches_label, codes, falling, noisy
from runs import synthetic_run

from autopsy.api import diagnose
from autopsy.model import Family


def test_fires_on_flat_loss_with_zero_grad_norm() -> None:
    run = synthetic_run({"loss": noisy(2.3, 50, noise=0.03), "grad_norm": [0.0] * 50,
                         "learning_rate": [2e-5] * 50})
    d = diagnose(run)
    assert d.verdict.family is Family.NOT_DECREASING
    assert d.verdict.cause == "frozen_params"
    assert d.verdict.code == "FLAT002"
    assert "exactly 0" in d.verdict.message
    finding = next(f for f in d.findings if f.code == "FLAT002")
    assert any("print_trainable_parameters" in a for a in finding.advice)


def test_fires_on_a_vanishing_but_nonzero_grad_norm() -> None:
    run = synthetic_run({"loss": noisy(1.1, 40), "grad_norm": [1e-10] * 40})
    assert codes(run)["FLAT002"].cause == "frozen_params"


def test_fires_before_chance_level_and_lr_checks() -> None:
    # at ln(4) with a tiny LR: the zero grad norm is the more basic explanation
    run = synthetic_run({"loss": noisy(1.386, 40, noise=0.01), "grad_norm": [0.0] * 40},
                        config={"num_labels": 4, "learning_rate": 1e-8})
    flat = [c for c in codes(run) if c.startswith("FLAT")]
    assert flat == ["FLAT002"]


def test_fires_with_lower_confidence_on_a_grad_norm_tiny_for_the_loss() -> None:
    # one LayerNorm bias left trainable: grad norm ~1% of the loss, LR in the usual range
    run = synthetic_run({"loss": noisy(2.2, 12, noise=0.04),
                         "grad_norm": noisy(0.03, 12, noise=0.15),
                         "learning_rate": [2.8e-5 * (1 - i / 12) for i in range(12)]},
                        steps=range(5, 65, 5), config={"vocab_size": 32})
    d = diagnose(run)
    assert d.verdict.code == "FLAT002" and d.verdict.cause == "frozen_params"
    assert d.verdict.confidence < 0.7 and "tiny" in d.verdict.message


def test_fires_on_a_tiny_grad_norm_at_chance_level() -> None:
    # at chance the cross-entropy gradient is largest: a tiny grad norm there means frozen
    run = synthetic_run({"loss": noisy(math.log(32), 40, noise=0.01),
                         "grad_norm": noisy(0.03, 40, noise=0.1)},
                        config={"vocab_size": 32, "learning_rate": 3e-5})
    assert [c for c in codes(run) if c.startswith("FLAT")] == ["FLAT002"]


def test_near_miss_healthy_grad_norm_passes() -> None:
    run = synthetic_run({"loss": noisy(2.0, 40), "grad_norm": noisy(0.4, 40, noise=0.2)},
                        config={"learning_rate": 2e-5})
    found = codes(run)
    assert "FLAT002" not in found and "FLAT005" in found


def test_near_miss_small_lora_grad_norm_passes() -> None:
    # LoRA adapters are a sliver of the model by design: a small grad norm is normal there
    run = synthetic_run({"loss": noisy(2.0, 40), "grad_norm": noisy(0.02, 40, noise=0.2)},
                        config={"learning_rate": 2e-4, "finetune_mode": "lora"})
    assert "FLAT002" not in codes(run)


def test_near_miss_zero_grad_norm_but_falling_loss_passes() -> None:
    # a run with max_grad_norm logging quirks: grad norm 0 while the loss falls is not "frozen"
    run = synthetic_run({"loss": falling(3.0, 1.0, 50), "grad_norm": [0.0] * 50})
    assert not any(c.startswith("FLAT") for c in codes(run))


def test_fires_on_sample_frozen_params() -> None:
    assert_verdict_matches_label("frozen_params", "FLAT002")
