"""FLAT006 eval-accuracy-frozen: the eval accuracy never moved from its first value."""

from __future__ import annotations

from runs import synthetic_run

from autopsy.api import diagnose
from autopsy.model import Family, Finding, Run


def _flat006(run: Run) -> list[Finding]:
    return [f for f in diagnose(run).findings if f.code == "FLAT006"]


def _run(evals: list[float], train: list[float] | None = None) -> Run:
    series = {"eval_accuracy": {i: v for i, v in enumerate(evals)}}
    if train is not None:
        series["loss"] = {i: v for i, v in enumerate(train)}
    return synthetic_run(series)


def test_fires_on_a_majority_class_accuracy_at_every_eval() -> None:
    # a segmentation model scoring the background share at every epoch (float32 logging
    # wobbles in the 8th digit) while its training loss falls
    evals = [0.9866071939468384, 0.9866071343421936, 0.9866071343421936, 0.986607015132904,
             0.9866071343421936, 0.9866071939468384, 0.9866071343421936, 0.9866071343421936]
    train = [1.39, 0.48, 0.105, 0.078, 0.057, 0.055, 0.054, 0.052]
    d = diagnose(_run(evals, train))
    assert (d.verdict.family, d.verdict.code, d.verdict.cause) == (
        Family.NOT_DECREASING, "FLAT006", "chance_level")
    (f,) = [f for f in d.findings if f.code == "FLAT006"]
    assert f.evidence[0].numbers["frozen"] == 8 and f.step == 0


def test_fires_with_a_few_flips() -> None:
    assert _flat006(_run([0.6, 0.6, 0.6, 0.6, 0.5833, 0.6, 0.6, 0.6]))


def test_near_miss_an_accuracy_that_improves_passes() -> None:
    assert not _flat006(_run([0.6, 0.61, 0.64, 0.66, 0.7, 0.71, 0.71, 0.72]))


def test_near_miss_a_converged_accuracy_that_moved_first_passes() -> None:
    # a small eval set: 19/20 at every eval after the model learned, not from the first
    assert not _flat006(_run([0.55, 0.8, 0.95, 0.95, 0.95, 0.95, 0.95, 0.95]))


def test_near_miss_a_solved_eval_set_and_too_few_evals_pass() -> None:
    assert not _flat006(_run([1.0] * 8))
    assert not _flat006(_run([0.6, 0.6, 0.6, 0.6]))


def test_fires_on_an_eval_loss_frozen_when_no_eval_accuracy_is_logged() -> None:
    # vanzytay/pytorch_sentiment_rnn#3: "Test loss=0.90144944190979" after every epoch
    run = synthetic_run({"loss": [0.9545, 0.9512, 0.9512, 0.9487, 0.9512, 0.9487, 0.9487,
                                  0.9512], "eval_loss": [0.90144944190979] * 8})
    (f,) = [f for f in diagnose(run).findings if f.code == "FLAT006"]
    assert f.cause == "chance_level" and "eval loss" in f.message
    moving = synthetic_run({"loss": [1.0, 0.9, 0.8, 0.7, 0.6, 0.5],
                            "eval_loss": [1.1, 1.0, 0.95, 0.9, 0.88, 0.87]})
    assert all(f.code != "FLAT006" for f in diagnose(moving).findings)
