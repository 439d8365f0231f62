"""DIV003 loss-unbounded-below: a loss that goes negative and runs away."""

from __future__ import annotations

import numpy as np
from repo_paths import public_run
from runs import synthetic_run

import autopsy
from autopsy.api import diagnose
from autopsy.model import Family, Finding, Run


def _div003(run: Run) -> list[Finding]:
    return [f for f in diagnose(run).findings if f.code == "DIV003"]


def test_fires_on_a_published_keras_log_whose_bce_runs_away_below_zero() -> None:
    # public corpus, dev half: a Keras CSVLogger file, loss -3.4e4 -> -6.5e7 over 70 epochs
    run = autopsy.load_run(public_run("keras_csv_ecg_loss_negative_unbounded_diverging"))
    d = diagnose(run)
    assert d.verdict.family is Family.DIVERGING and d.verdict.code == "DIV003"
    (f,) = _div003(run)
    assert f.cause == "bad_data" and f.step == 0
    assert f.evidence[0].numbers["factor"] > 100


def test_fires_when_a_loss_crosses_zero_and_runs_away() -> None:
    loss = [0.9, 0.5, 0.1, -2.0, -30.0, -400.0, -5000.0]
    run = synthetic_run({"loss": loss})
    (f,) = _div003(run)
    assert f.step == int(run.series("loss").index[3])  # the first step below zero for good


def test_near_misses_pass() -> None:
    # a VAE's negative ELBO-style loss settling a few times below its start: bounded
    elbo = list(-100 - 200 * (1 - np.exp(-np.arange(30) / 5)))
    assert _div003(synthetic_run({"loss": elbo})) == []
    # a Gaussian NLL crossing zero and settling at -3
    assert _div003(synthetic_run({"loss": list(1 - 4 * (1 - np.exp(-np.arange(20) / 4)))})) == []
    # one wild negative value at the end: not a steady fall
    wild = [2.0, 2.1, 1.9, 2.0, 2.05, 1.95, -500.0]
    assert _div003(synthetic_run({"loss": wild})) == []
    # a positive loss: DIV001's, not this rule's
    assert _div003(synthetic_run({"loss": [1.0, 5.0, 50.0, 500.0, 5000.0]})) == []


def test_a_last_point_back_above_zero_is_judged_not_a_rule_error() -> None:
    """The median of the last points is far below zero while the very last one is not: the
    rule still judges the run (a rule that raises would only be a skip)."""
    run = synthetic_run({"loss": [0.5, -10.0, -200.0, -5000.0, -60000.0, 3.0]})
    d = diagnose(run)
    assert not [s for s in d.skipped if s.code == "DIV003"]
    assert [f.code for f in d.findings if f.code == "DIV003"] == ["DIV003"]
