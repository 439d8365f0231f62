"""FLAT001 labels-masked: a loss of exactly 0 (or constant) with zero gradients."""

from __future__ import annotations

import math

from flat_cases import assert_verdict_matches_label, codes, falling, noisy
from runs import synthetic_run

from autopsy.api import diagnose
from autopsy.model import Family


def test_fires_on_zero_loss_and_zero_grad_norm() -> None:
    run = synthetic_run({"loss": [0.0] * 40, "grad_norm": [0.0] * 40, "learning_rate": [2e-5] * 40})
    d = diagnose(run)
    assert d.verdict.family is Family.NOT_DECREASING
    assert d.verdict.cause == "labels_masked"
    assert d.verdict.code == "FLAT001"
    assert d.verdict.step == 1
    assert [f.code for f in d.findings if f.code.startswith("FLAT")] == ["FLAT001"]


def test_passes_on_hf_filtered_nan_loss_logged_as_zero() -> None:
    # logging_nan_inf_filter: a NaN loss (0/0 over no labels) is logged as 0, grad norm NaN:
    # a NaN run whose root is the masking (nan_inf / labels_masked), NAN007's, not FLAT001's
    run = synthetic_run({"loss": [0.0] * 30, "grad_norm": [math.nan] * 30})
    assert "FLAT001" not in codes(run)
    d = diagnose(run)
    assert (d.verdict.code, d.verdict.cause) == ("NAN007", "labels_masked")


def test_fires_on_constant_loss_with_zero_grads() -> None:
    run = synthetic_run({"loss": [2.7725887] * 30, "grad_norm": [0.0] * 30})
    found = codes(run)
    assert set(c for c in found if c.startswith("FLAT")) == {"FLAT001"}
    assert "constant" in found["FLAT001"].message


def test_fires_without_grad_norm_on_an_exactly_zero_loss() -> None:
    found = codes(synthetic_run({"loss": [0.0] * 30}))
    assert "FLAT001" in found and found["FLAT001"].confidence < 0.9


def test_near_miss_flat_but_varying_loss_with_zero_grads_is_frozen_not_masked() -> None:
    run = synthetic_run({"loss": noisy(2.0, 40), "grad_norm": [0.0] * 40})
    found = codes(run)
    assert "FLAT001" not in found and "FLAT002" in found


def test_near_miss_loss_that_falls_to_zero_passes() -> None:
    run = synthetic_run({"loss": falling(2.0, 0.0, 60, noise=0.0), "grad_norm": noisy(0.5, 60)})
    assert not any(c.startswith("FLAT") for c in codes(run))


def test_fires_on_a_single_point_of_zero_loss_and_zero_grad_norm() -> None:
    # one Trainer log line {'loss': 0.0, 'grad_norm': 0.0, ...} (Qwen2.5-VL issue): no
    # training signal at all, however few the points (the plateau test needs 10)
    run = synthetic_run({"loss": [0.0], "grad_norm": [0.0], "learning_rate": [9.7e-6]})
    d = diagnose(run)
    assert (d.verdict.code, d.verdict.cause) == ("FLAT001", "labels_masked")


def test_near_miss_few_zero_losses_with_a_gradient_pass() -> None:
    # a fitted training set prints loss 0.0 (rounded) while gradients still flow
    run = synthetic_run({"loss": [0.0] * 5, "grad_norm": [0.003, 0.002, 0.004, 0.002, 0.003]})
    assert "FLAT001" not in codes(run)


def test_fires_on_sample_labels_masked() -> None:
    assert_verdict_matches_label("labels_masked", "FLAT001")
