"""Chainer ``LogReport`` files (``result/log``), written the way ``LogReport`` writes them:
``json.dump(log, f, indent=4)`` after each report."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import autopsy
from autopsy.readers import chainer_log


def _report(epoch: int, per_epoch: int = 847) -> dict[str, float]:
    return {"main/loss": 0.05 / epoch, "main/accuracy": 0.9 + epoch / 1000,
            "validation/main/loss": 0.04 / epoch, "validation/main/accuracy": 0.9 + epoch / 500,
            "epoch": epoch, "iteration": epoch * per_epoch, "elapsed_time": 11.27 * epoch}


def _write(root: Path, records: list[dict[str, float]]) -> Path:
    out = root / "result"
    out.mkdir(parents=True, exist_ok=True)
    with open(out / "log", "w") as f:  # chainer.training.extensions.LogReport's own call
        json.dump(records, f, indent=4)
    return out / "log"


def test_log_report_is_read_with_its_tags(tmp_path: Path) -> None:
    _write(tmp_path, [_report(e) for e in range(1, 6)])
    run = autopsy.load_run(tmp_path)
    assert [s.reader for s in run.sources] == ["chainer_log"]
    assert list(run.series("loss").index) == [847, 1694, 2541, 3388, 4235]
    assert run.series("loss").iloc[0] == 0.05
    assert run.series("eval_loss").iloc[-1] == 0.04 / 5
    assert run.has("accuracy") and run.has("eval_accuracy")
    assert autopsy.diagnose(run).verdict.family.value == "healthy"


def test_sniff_needs_the_name_and_a_report_array(tmp_path: Path) -> None:
    log = _write(tmp_path, [_report(1)])
    assert chainer_log.sniff(log)
    other = tmp_path / "log.txt"
    other.write_text(log.read_text())
    assert not chainer_log.sniff(other)
    plain = tmp_path / "x" / "log"
    plain.parent.mkdir()
    plain.write_text("[\n    1,\n    2\n]\n")
    assert not chainer_log.sniff(plain)


def test_a_broken_record_costs_itself(tmp_path: Path) -> None:
    log = _write(tmp_path, [_report(e) for e in range(1, 4)])
    text = log.read_text().replace('"main/loss": 0.025', '"main/loss": 0.025,,', 1)
    log.write_text(text)
    part = chainer_log.read(log, "result/log")
    assert part.scalars is not None
    steps = sorted(set(part.scalars.loc[part.scalars["tag"] == "loss", "step"]))
    assert steps == [847, 2541]
    assert sum(p.count or 1 for p in part.problems) == 1


def test_an_oversized_record_costs_itself(tmp_path: Path,
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """A record past MAX_RECORD_BYTES (a hostile or broken file) is skipped, counted, and
    the records after it are read; memory follows the cap, not the record."""
    big = dict(_report(2), note="x" * 5000)
    log = _write(tmp_path, [_report(1), big, _report(3)])
    monkeypatch.setattr(chainer_log, "MAX_RECORD_BYTES", 1000)
    part = chainer_log.read(log, "result/log")
    assert part.scalars is not None
    steps = sorted(set(part.scalars.loc[part.scalars["tag"] == "loss", "step"]))
    assert steps == [847, 2541]
    assert sum(p.count or 1 for p in part.problems) == 1
