"""The committed checkpoint samples (``sample_runs/ckpt_*``): the audit agrees with the labels.

The labels were computed by ``sample_runs/checkpoints.py``'s self-checks from what is on disk
(resumable, the checkpoint a resume picks, the expected status of each component); here
``autopsy.api.audit_checkpoint`` must say the same. The first tests need no audit: the samples
are present, small, and their labels name files that exist.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

SAMPLE_RUNS = Path(__file__).resolve().parents[2] / "sample_runs"
SAMPLES = sorted(p.name for p in SAMPLE_RUNS.glob("ckpt_*") if p.is_dir())
MAX_BYTES = 300 * 1024
HOSTILE_MARKER = Path("/tmp/autopsy_sample_hostile_pickle_ran")  # as in checkpoints.py
#: samples where the audit and the label disagree on purpose, until the lead decides
OPEN_QUESTIONS: dict[str, str] = {}
AUDITED = [
    pytest.param(n, marks=pytest.mark.xfail(strict=True, reason=OPEN_QUESTIONS[n]))
    if n in OPEN_QUESTIONS else n
    for n in SAMPLES
]


def _label(name: str) -> dict[str, Any]:
    return json.loads((SAMPLE_RUNS / f"{name}.label.json").read_text(encoding="utf-8"))


def _status(value: Any) -> str:
    """A component status as its string (a str enum or a plain string)."""
    return str(getattr(value, "value", value))


def _picked(report: Any) -> tuple[str, Any, Any]:
    """(path, components, findings) of the checkpoint a resume picks.

    The brief's API has them on the report (``.checkpoint``, ``.components``, ``.findings``);
    the audit as built keeps them on ``report.picked`` (a ``CheckpointAudit``): both read.
    """
    if hasattr(report, "checkpoint"):
        return report.checkpoint, report.components, report.findings
    return report.picked.path, report.picked.components, report.picked.findings


def _path_of(checkpoint: Any) -> str | None:
    """The path of ``report.newest_resumable`` (a path, or an audit record), or None."""
    return getattr(checkpoint, "path", checkpoint)


def _tree(folder: Path) -> dict[str, tuple[int, int]]:
    """``{relative path: (size, mtime_ns)}`` of every file under ``folder``."""
    return {
        str(p.relative_to(folder)): (p.stat().st_size, p.stat().st_mtime_ns)
        for p in folder.rglob("*")
        if p.is_file()
    }


@pytest.fixture(scope="module")
def audit() -> Any:
    """``autopsy.api.audit_checkpoint``, or a skip while the audit package does not exist."""
    pytest.importorskip("autopsy.ckpt", reason="autopsy.ckpt (helper B's audit) not there yet")
    from autopsy.api import audit_checkpoint

    return audit_checkpoint


def test_the_checkpoint_situations_are_all_there() -> None:
    causes = {_label(n)["cause"] for n in SAMPLES}
    assert {"missing_optimizer_state", "scheduler_not_restored", "rng_not_restored",
            "torn_checkpoint", "unsafe_pickle", "nonfinite_state",
            "sampler_not_restored"} <= causes
    healthy = [n for n in SAMPLES if _label(n)["family"] == "healthy"]
    assert len(healthy) >= 3 and all(_label(n)["resumable"] for n in healthy)


@pytest.mark.parametrize("name", SAMPLES)
def test_sample_is_small_and_its_label_points_at_real_files(name: str) -> None:
    label = _label(name)
    run = SAMPLE_RUNS / name
    assert sum(size for size, _ in _tree(run).values()) <= MAX_BYTES
    assert (run / label["checkpoint"]).exists()
    if label["newest_resumable"] is not None:
        assert (run / label["newest_resumable"]).exists()
    assert label["resumable"] == all(
        s in ("ok", "not_applicable") for s in label["components"].values()
    )
    assert (label["family"] == "healthy") == label["resumable"]
    if not label["resumable"]:
        assert label["first_bad_step"] is not None and label["broken"]


@pytest.mark.parametrize("name", AUDITED)
def test_audit_agrees_with_the_label(name: str, audit: Any) -> None:
    label = _label(name)
    run = SAMPLE_RUNS / name
    before = _tree(run)
    report = audit(run, scan_values=label["scan_values"])
    path, components, _ = _picked(report)
    assert report.resumable is label["resumable"], name
    assert Path(path).resolve() == (run / label["checkpoint"]).resolve()
    statuses = {c.name: _status(c.status) for c in components}
    expected = label["components"]
    assert {k: statuses.get(k) for k in expected} == expected
    newest = _path_of(report.newest_resumable)
    if label["newest_resumable"] is None:
        assert newest is None
    else:
        assert Path(newest).resolve() == (run / label["newest_resumable"]).resolve()
    assert _tree(run) == before, "the audit wrote into the sample"


def test_hostile_sample_is_reported_and_never_run(audit: Any) -> None:
    name = "ckpt_hf_hostile_pickle"
    if HOSTILE_MARKER.exists():
        os.unlink(HOSTILE_MARKER)
    report = audit(SAMPLE_RUNS / name)
    assert not HOSTILE_MARKER.exists(), "the payload ran"
    _, _, findings = _picked(report)
    assert "system" in repr(findings)  # the global is named (posix.system or os.system)
