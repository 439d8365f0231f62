"""RES004 inconsistent-checkpoint: the newest checkpoint's states disagree."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

import autopsy
from autopsy.api import diagnose
from autopsy.model import Finding
from autopsy.rules.engine import Diagnosis

SAMPLES = Path(__file__).resolve().parents[2] / "sample_runs"


def _copy_good(tmp_path: Path) -> Path:
    src = SAMPLES / "ckpt_hf_good"
    if not src.exists():
        pytest.fail("ckpt_hf_good is not there")
    run = tmp_path / "run"
    shutil.copytree(src, run)
    return run


def _res004(d: Diagnosis) -> list[Finding]:
    return [f for f in d.findings if f.code == "RES004"]


def test_fires_when_trainer_state_disagrees_with_the_folder(tmp_path: Path) -> None:
    run = _copy_good(tmp_path)
    state_file = run / "checkpoint-8" / "trainer_state.json"
    state = json.loads(state_file.read_text())
    state["global_step"] = 11
    state_file.write_text(json.dumps(state))
    found = _res004(diagnose(autopsy.load_run(run)))
    assert found and found[0].cause == "step_mismatch"
    assert "checkpoint-8" in found[0].message and "11" in found[0].message
    assert {e.key for e in found[0].evidence} >= {"CKPT015"}


def test_fires_when_optimizer_comes_from_another_save(tmp_path: Path) -> None:
    run = _copy_good(tmp_path)
    shutil.copy2(run / "checkpoint-4" / "optimizer.pt", run / "checkpoint-8" / "optimizer.pt")
    found = _res004(diagnose(autopsy.load_run(run)))
    assert found and any(e.key in ("CKPT011", "CKPT013") for e in found[0].evidence)


def test_near_miss_passes_when_the_states_agree() -> None:
    d = diagnose(autopsy.load_run(SAMPLES / "ckpt_hf_good")) if (
        SAMPLES / "ckpt_hf_good").exists() else pytest.fail("no sample")
    assert not _res004(d)
