"""A checkpoint that is found but cannot be read is a verdict, not "nothing here": ``ckpt``
says not resumable (exit 1) with the reason, and ``analyze`` cannot call the run healthy on
the strength of it. Exit 2 stays for a path with no checkpoint at all."""

from __future__ import annotations

import shutil
from pathlib import Path

import builders
from repo_paths import SAMPLE_RUNS

import autopsy
from autopsy.api import diagnose
from autopsy.ckpt import audit_path
from autopsy.model import Family


def test_a_run_whose_only_checkpoint_has_a_truncated_dcp_metadata(tmp_path: Path) -> None:
    src = SAMPLE_RUNS / "ckpt_dcp_good"
    assert src.is_dir(), f"missing fixture {src}"
    run_dir = tmp_path / "run"
    shutil.copytree(src, run_dir)
    (meta,) = run_dir.glob("*/.metadata")
    meta.write_bytes(meta.read_bytes()[:50])
    report = audit_path(run_dir)
    assert not report.resumable and {f.code for f in report.picked.findings} == {"CKPT020"}
    assert {c.status.value for c in report.picked.components if c.required} <= {
        "corrupt", "not_applicable"}  # never "missing": unread is not absent
    d = diagnose(autopsy.load_run(run_dir))
    assert d.verdict.family is Family.RESUME  # not "healthy": its checkpoint is unusable


def test_a_lightning_checkpoint_with_a_masked_payload_is_unsafe_not_absent(
        tmp_path: Path) -> None:
    built = builders.lightning_checkpoint(tmp_path / "run", steps=2)
    marker = tmp_path / "PWNED"
    builders.hostile_pickle(built, built.path.name if built.path.is_file() else "last.ckpt",
                            marker=marker, mask="bad_opcode")
    report = audit_path(tmp_path / "run")
    assert not report.resumable
    assert "CKPT030" in {f.code for f in report.picked.findings}
    d = diagnose(autopsy.load_run(tmp_path / "run"))
    assert d.verdict.family is Family.RESUME and d.verdict.cause == "unsafe_pickle"
    assert not marker.exists()
