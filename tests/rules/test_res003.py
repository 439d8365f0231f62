"""RES003 unsafe-checkpoint-pickle: a checkpoint pickle would run code when loaded."""

from __future__ import annotations

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


def _res003(d: Diagnosis) -> list[Finding]:
    return [f for f in d.findings if f.code == "RES003"]


def test_fires_on_the_hostile_sample_and_nothing_runs(tmp_path: Path) -> None:
    before = set(Path("/tmp").glob("*PWNED*")) | set(SAMPLES.glob("*PWNED*"))
    d = _diagnose(SAMPLES / "ckpt_hf_hostile_pickle")
    after = set(Path("/tmp").glob("*PWNED*")) | set(SAMPLES.glob("*PWNED*"))
    assert after == before
    found = _res003(d)
    assert found and found[0].cause == "unsafe_pickle" and found[0].severity.value == "error"
    assert "system" in found[0].message
    assert any("training_args.bin" in (e.source or "") for e in found[0].evidence)
    assert d.verdict.family is Family.RESUME


def test_near_miss_passes_over_numpy_rng_and_training_args() -> None:
    # rng_state.pth names numpy globals and training_args.bin TrainingArguments: benign
    for name in ("ckpt_hf_good", "ckpt_accelerate_good", "healthy_hf_trainer"):
        assert not _res003(_diagnose(SAMPLES / name)), name
