"""A run that left only its stdout log is diagnosed from the metric lines it printed."""

from __future__ import annotations

import shutil
from pathlib import Path

from repo_paths import SAMPLE_RUNS

import autopsy
from autopsy.model import Family


def test_only_train_log_still_gives_the_nan_verdict(tmp_path: Path) -> None:
    shutil.copy(SAMPLE_RUNS / "nan_after_grad_spike" / "train.log", tmp_path / "train.log")
    run = autopsy.load_run(tmp_path)
    assert [s.reader for s in run.sources] == ["ranklogs"]
    verdict = autopsy.api.diagnose(run).verdict
    assert (verdict.family, verdict.cause, verdict.step) == (Family.NAN_INF, "lr_too_high", 8)


def test_only_train_log_of_a_healthy_run_is_healthy(tmp_path: Path) -> None:
    shutil.copy(SAMPLE_RUNS / "healthy_hf_trainer" / "train.log", tmp_path / "train.log")
    verdict = autopsy.api.diagnose(autopsy.load_run(tmp_path)).verdict
    assert verdict.family is Family.HEALTHY
