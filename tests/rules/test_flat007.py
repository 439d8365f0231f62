"""FLAT007 accuracy-at-chance: no loss logged, the accuracy sits at 1/k throughout."""

from __future__ import annotations

from runs import synthetic_run

from autopsy.api import diagnose
from autopsy.model import Family

# apache/mxnet#4395: MNIST (10 classes) on two GPUs, train accuracy per 100 batches
STUCK = [0.103125, 0.105625, 0.099844, 0.098750, 0.107500, 0.092031, 0.094219, 0.101250,
         0.097812, 0.103125]


def _flat007(series: dict[str, list[float]]) -> list:
    return [f for f in diagnose(synthetic_run(series)).findings if f.code == "FLAT007"]


def test_fires_on_an_accuracy_at_one_in_ten() -> None:
    d = diagnose(synthetic_run({"accuracy": STUCK, "eval_accuracy": [0.100916] * 2}))
    assert d.verdict.family is Family.NOT_DECREASING and d.verdict.code == "FLAT007"
    (f,) = [f for f in d.findings if f.code == "FLAT007"]
    assert f.cause == "chance_level" and f.evidence[0].numbers["classes"] == 10


def test_fires_on_a_binary_accuracy_at_half_in_percent() -> None:
    (f,) = _flat007({"accuracy": [50.2, 49.1, 50.8, 49.7, 50.4, 49.9]})
    assert f.evidence[0].numbers["classes"] == 2


def test_near_misses_pass() -> None:
    assert not _flat007({"accuracy": [0.10, 0.15, 0.25, 0.40, 0.55, 0.70]})  # it learns
    assert not _flat007({"accuracy": [0.62, 0.63, 0.61, 0.62, 0.63]})  # flat, not 1/k
    assert not _flat007({"accuracy": STUCK[:4]})  # too few points
    # the eval accuracy is well above chance: the train metric is not the whole story
    assert not _flat007({"accuracy": STUCK, "eval_accuracy": [0.35] * 5})
    # a loss is logged: the loss rules judge the run
    assert not _flat007({"accuracy": STUCK, "loss": [2.30] * 10})
