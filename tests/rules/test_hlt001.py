"""HLT001 loss-decreasing: vouches only for a finite, falling loss."""

from __future__ import annotations

import math

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
    run = synthetic_run({"loss": [2.0, 1.5, 1.0]})
    assert diagnose(run).verdict.family is Family.UNKNOWN
