"""The committed sample checkpoints: `autopsy ckpt`'s audit agrees with each label."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from autopsy.ckpt import audit_path

SAMPLES = Path(__file__).resolve().parents[2] / "sample_runs"
CKPT_SAMPLES = sorted(
    p.name for p in SAMPLES.iterdir()
    if p.is_dir() and (SAMPLES / f"{p.name}.label.json").exists()
    and "components" in json.loads((SAMPLES / f"{p.name}.label.json").read_text())
) if SAMPLES.exists() else []


def _label(name: str) -> dict[str, Any]:
    return json.loads((SAMPLES / f"{name}.label.json").read_text(encoding="utf-8"))


def test_there_are_checkpoint_samples() -> None:
    # sample_runs/ is committed: no samples (moved, labels renamed) is a failure, not a skip,
    # or every parametrized case below would vanish and the suite still pass.
    assert len(CKPT_SAMPLES) >= 5


@pytest.mark.parametrize("name", CKPT_SAMPLES)
def test_audit_matches_the_label(name: str) -> None:
    label = _label(name)
    report = audit_path(SAMPLES / name, scan_values=bool(label.get("scan_values")))
    picked = report.picked
    assert report.resumable is label["resumable"], picked.findings
    root = SAMPLES / name
    assert Path(picked.path).relative_to(root).as_posix() == label["checkpoint"]
    newest = report.newest_resumable
    assert (Path(newest.path).relative_to(root).as_posix() if newest else None) \
        == label["newest_resumable"]
    status = {c.name: c.status.value for c in picked.components}
    for component, expected in label["components"].items():
        assert status[component] == expected, (component, status)
    if label.get("checkpoint_world_size") and picked.world_size is not None:
        assert picked.world_size == label["checkpoint_world_size"]
    if label.get("culprit_rank") is not None:
        ranks = {r for f in picked.findings for r in f.ranks}
        assert label["culprit_rank"] in ranks
    if label["cause"] is not None:
        assert label["cause"] in {f.cause for f in picked.findings}
    for key in label.get("nonfinite_tensors", {}):
        assert any(e.key == key for f in picked.findings for e in f.evidence)
