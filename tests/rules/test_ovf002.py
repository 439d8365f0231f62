"""OVF002 eval-accuracy-falling: the eval accuracy falls after its best while training
improves, in a run that logs no eval loss."""

from __future__ import annotations

from pathlib import Path

from runs import synthetic_run

import autopsy
from autopsy.api import diagnose


def _mxnet_epochs(tmp_path: Path, train: list[float], val: list[float]) -> Path:
    """Epoch summaries as MXNet's ``Module.fit`` logs them (``Epoch[e] Train-accuracy=``,
    ``Epoch[e] Time cost=``, ``Epoch[e] Validation-accuracy=``)."""
    lines = []
    for e, (t, v) in enumerate(zip(train, val, strict=True)):
        stamp = f"2016-01-0{1 + e // 4} 0{e % 4}:43:49,904 Node[0] "
        lines += [f"{stamp}Epoch[{e}] Train-accuracy={t:.6f}",
                  f"{stamp}Epoch[{e}] Time cost=20670.702",
                  f"{stamp}Epoch[{e}] Validation-accuracy={v:.6f}"]
    path = tmp_path / "train.log"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_fires_when_val_accuracy_falls_as_train_accuracy_rises(tmp_path: Path) -> None:
    log = _mxnet_epochs(tmp_path, [0.40, 0.47, 0.52, 0.55, 0.58, 0.60],
                        [0.33, 0.38, 0.41, 0.406, 0.39, 0.37])
    d = diagnose(autopsy.load_run(log))
    assert (d.verdict.code, d.verdict.cause, d.verdict.step) == ("OVF002", "overfitting", 2)
    (f,) = [f for f in d.findings if f.code == "OVF002"]
    assert f.evidence[0].numbers["evals_after"] == 3
    assert f.evidence[1].tag == "accuracy"  # the only training accuracy (Train-accuracy)


def test_near_miss_a_dip_that_comes_back_passes(tmp_path: Path) -> None:
    log = _mxnet_epochs(tmp_path, [0.40, 0.47, 0.52, 0.55, 0.58, 0.60],
                        [0.33, 0.38, 0.41, 0.37, 0.40, 0.42])
    assert all(f.code != "OVF002" for f in diagnose(autopsy.load_run(log)).findings)


def test_near_miss_a_small_drift_below_the_best_passes(tmp_path: Path) -> None:
    log = _mxnet_epochs(tmp_path, [0.40, 0.47, 0.52, 0.55, 0.58, 0.60],
                        [0.33, 0.38, 0.41, 0.405, 0.40, 0.398])  # -3%: eval noise
    assert all(f.code != "OVF002" for f in diagnose(autopsy.load_run(log)).findings)


def test_near_miss_training_getting_worse_too_is_not_overfitting(tmp_path: Path) -> None:
    log = _mxnet_epochs(tmp_path, [0.40, 0.47, 0.52, 0.45, 0.40, 0.35],
                        [0.33, 0.38, 0.41, 0.36, 0.33, 0.30])
    assert all(f.code != "OVF002" for f in diagnose(autopsy.load_run(log)).findings)


def test_stands_aside_when_an_eval_loss_is_logged() -> None:
    run = synthetic_run({"loss": [2.0, 1.5, 1.2, 1.0, 0.8, 0.6],
                         "eval_loss": [2.0, 1.8, 1.7, 1.72, 1.71, 1.7],
                         "eval_accuracy": [0.3, 0.4, 0.45, 0.42, 0.40, 0.38]})
    assert all(f.code != "OVF002" for f in diagnose(run).findings)
