"""RES001 newest-not-resumable: the checkpoint a resume picks cannot resume exactly."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

import autopsy
from autopsy.api import diagnose
from autopsy.model import Family, Finding
from autopsy.rules.engine import Diagnosis

SAMPLES = Path(__file__).resolve().parents[2] / "sample_runs"


def _diagnose(path: Path) -> Diagnosis:
    if not path.exists():
        pytest.fail(f"{path.name} is not there")
    return diagnose(autopsy.load_run(path))


def _res001(d: Diagnosis) -> list[Finding]:
    return [f for f in d.findings if f.code == "RES001"]


def test_fires_when_the_newest_checkpoint_lacks_the_optimizer() -> None:
    d = _diagnose(SAMPLES / "ckpt_hf_optimizer_missing")
    v = d.verdict
    assert (v.code, v.family, v.cause, v.step) == (
        "RES001", Family.RESUME, "missing_optimizer_state", 8)
    finding = _res001(d)[0]
    assert "checkpoint-8" in finding.message and "optimizer (missing)" in finding.message
    assert "newest resumable checkpoint is checkpoint-4" in finding.message
    assert any("resume from checkpoint-4" in a for a in finding.advice)
    assert any(e.key == "optimizer" for e in finding.evidence)


def test_fires_naming_the_rank_whose_rng_is_missing() -> None:
    d = _diagnose(SAMPLES / "ckpt_hf_rng_missing_one_rank")
    finding = _res001(d)[0]
    assert finding.cause == "rng_not_restored" and finding.ranks == (2,)


def test_fires_when_only_the_scheduler_is_missing(tmp_path: Path) -> None:
    src = SAMPLES / "ckpt_hf_good"
    if not src.exists():
        pytest.fail("ckpt_hf_good is not there")
    run = tmp_path / "run"
    shutil.copytree(src, run)
    (run / "checkpoint-8" / "scheduler.pt").unlink()
    finding = _res001(diagnose(autopsy.load_run(run)))[0]
    assert finding.cause == "scheduler_not_restored"


def test_near_miss_passes_on_a_complete_run() -> None:
    assert not _res001(_diagnose(SAMPLES / "ckpt_hf_good"))
    assert not _res001(_diagnose(SAMPLES / "healthy_hf_trainer"))


def test_near_miss_passes_on_a_final_model_without_checkpoints() -> None:
    # the root of an HF output dir holding only save_model's files is no checkpoint
    d = _diagnose(SAMPLES / "frozen_params")
    assert not _res001(d)
    assert autopsy.load_run(SAMPLES / "frozen_params").checkpoints == []


def test_near_miss_passes_on_a_weights_only_export(tmp_path: Path) -> None:
    torch = pytest.importorskip("torch")
    from safetensors.torch import save_file

    save_file({"w": torch.zeros(2, 2)}, str(tmp_path / "model.safetensors"))
    torch.save({"layer.weight": torch.zeros(2)}, tmp_path / "export.pt")
    (tmp_path / "train.log").write_text("step 1 loss 2.0\nstep 2 loss 1.5\n")
    run = autopsy.load_run(tmp_path)
    assert run.checkpoints == []
    assert not _res001(diagnose(run))
