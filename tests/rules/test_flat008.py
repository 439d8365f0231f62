"""FLAT008 accuracy-zero: an accuracy at 0 at every logged point beside a loss that does not
fall."""

from __future__ import annotations

from repo_paths import public_run
from runs import synthetic_run

import autopsy
from autopsy.api import diagnose
from autopsy.model import Family, Finding, Run


def _flat008(run: Run) -> list[Finding]:
    return [f for f in diagnose(run).findings if f.code == "FLAT008"]


def test_fires_on_a_bert_pretraining_log_whose_mlm_accuracy_stays_zero() -> None:
    # a published horovodrun stdout (public corpus, dev half): loss 11.17 and mlm_acc 0.000
    # at steps 1040-1110 while sop_acc wanders around 0.5
    run = autopsy.load_run(public_run(
        "bert_tf24_horovod_pretrain_loss_11_17_mlm_acc_zero_issue_45"))
    d = diagnose(run)
    assert d.verdict.family is Family.NOT_DECREASING and d.verdict.code == "FLAT008"
    (f,) = _flat008(run)
    assert f.step == 1040 and f.cause == "chance_level"
    assert f.evidence[0].tag == "mlm_acc" and f.evidence[0].numbers["points"] == 8


def test_fires_on_an_mxnet_speedometer_log_with_no_loss() -> None:
    # a published MXNet log (public corpus, dev half): accuracy=0.000000 and
    # top_k_accuracy_5=0.000000 at every Speedometer line of a ResNet-50 fine-tune
    run = autopsy.load_run(public_run(
        "mxnet_resnet50_finetune_8gpu_train_accuracy_0_000000_top5_zero_issue_5326"))
    (f,) = _flat008(run)
    assert f.step == 1550  # the first zero, of the top-5 accuracy


def test_near_miss_a_regression_whose_accuracy_metric_reads_zero_passes() -> None:
    # Keras metrics=['accuracy'] on a regression: 0.0000 every epoch while the loss falls
    run = synthetic_run({"accuracy": [0.0] * 8,
                         "loss": [0.9, 0.5, 0.3, 0.2, 0.15, 0.12, 0.1, 0.09]})
    assert _flat008(run) == []


def test_near_misses_pass() -> None:
    # four zeros: the first logging intervals of a run that may still start to learn
    assert _flat008(synthetic_run({"accuracy": [0.0] * 4, "loss": [7.0] * 4})) == []
    # one right prediction in the batch: not zero
    assert _flat008(synthetic_run({"accuracy": [0, 0, 0.0078125, 0, 0, 0],
                                   "loss": [8.9] * 6})) == []
    # the top-1 accuracy is zero but the top-5 accuracy climbs: the model learns
    assert _flat008(synthetic_run({"accuracy": [0.0] * 6,
                                   "top5_accuracy": [0.01, 0.05, 0.1, 0.2, 0.3, 0.4]})) == []
