"""NAN007 nan-from-masked-labels: a loss logged as 0 beside a grad norm that is NaN from the
first step (every label masked, the loss 0/0). Fixtures: public runs of the corpus's dev
half (HF trainer_state.json files as published) and synthetic runs."""

from __future__ import annotations

import math

import pytest
from repo_paths import public_run
from runs import synthetic_run

import autopsy
from autopsy.api import diagnose
from autopsy.model import Family


@pytest.mark.parametrize("name", ["hf_pink_stage1_loss_0_grad_norm_nan_issue_6",
                                  "hf_time_moe_loss_0_grad_norm_nan_issue_31"])
def test_fires_on_published_runs_with_a_zero_loss_and_a_nan_grad_norm(name: str) -> None:
    v = diagnose(autopsy.load_run(public_run(name))).verdict
    assert (v.code, v.family, v.cause) == ("NAN007", Family.NAN_INF, "labels_masked")


def test_near_miss_passes_when_a_grad_norm_is_finite() -> None:
    # a skipped fp16 step logs one NaN grad norm; the others are finite: not a masked run
    run = synthetic_run({"loss": [0.0] * 10, "grad_norm": [math.nan] + [0.0] * 9})
    assert not [f for f in diagnose(run).findings if f.code == "NAN007"]


def test_near_miss_passes_when_the_loss_is_not_zero() -> None:
    run = synthetic_run({"loss": [2.3] * 10, "grad_norm": [math.nan] * 10})
    assert not [f for f in diagnose(run).findings if f.code == "NAN007"]
