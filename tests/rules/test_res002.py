"""RES002 torn-checkpoint: a checkpoint of the run is torn or damaged."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

import autopsy
from autopsy.api import diagnose
from autopsy.model import Finding
from autopsy.rules.engine import Diagnosis

SAMPLES = Path(__file__).resolve().parents[2] / "sample_runs"


def _diagnose(path: Path) -> Diagnosis:
    if not path.exists():
        pytest.fail(f"{path.name} is not there")
    return diagnose(autopsy.load_run(path))


def _res002(d: Diagnosis) -> list[Finding]:
    return [f for f in d.findings if f.code == "RES002"]


def test_fires_on_truncated_weights() -> None:
    found = _res002(_diagnose(SAMPLES / "ckpt_hf_truncated_weights"))
    assert found and found[0].cause == "torn_checkpoint"
    assert "checkpoint-8" in found[0].message
    assert any("model.safetensors" in e.summary for e in found[0].evidence)


def test_fires_on_a_save_without_trainer_state() -> None:
    found = _res002(_diagnose(SAMPLES / "ckpt_hf_torn_save"))
    assert found and any("trainer_state.json" in e.summary for e in found[0].evidence)


def _copy_good(tmp_path: Path) -> Path:
    src = SAMPLES / "ckpt_hf_good"
    if not src.exists():
        pytest.fail("ckpt_hf_good is not there")
    run = tmp_path / "run"
    shutil.copytree(src, run)
    return run


def test_fires_naming_every_damaged_checkpoint_back_to_a_good_one(tmp_path: Path) -> None:
    run = _copy_good(tmp_path)
    for name in ("checkpoint-8", "checkpoint-4"):
        (run / name / "optimizer.pt").write_bytes(b"")
    d = diagnose(autopsy.load_run(run))
    found = _res002(d)
    assert found and "checkpoint-8" in found[0].message and "checkpoint-4" in found[0].message
    assert "no checkpoint of this run is resumable" in " ".join(found[0].advice)


def test_near_miss_passes_when_only_an_older_one_is_damaged(tmp_path: Path) -> None:
    # a resume picks checkpoint-8, which is complete: analyze does not read further back
    run = _copy_good(tmp_path)
    (run / "checkpoint-4" / "optimizer.pt").write_bytes(b"")
    d = diagnose(autopsy.load_run(run))
    assert not _res002(d) and not [f for f in d.findings if f.code == "RES001"]


def test_near_miss_passes_on_intact_checkpoints() -> None:
    assert not _res002(_diagnose(SAMPLES / "ckpt_hf_good"))
    assert not _res002(_diagnose(SAMPLES / "ckpt_hf_optimizer_missing"))  # missing, not torn
