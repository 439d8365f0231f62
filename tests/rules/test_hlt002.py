"""HLT002 loss-scale-search: a few fp16 overflow skips while the scaler finds its scale are
normal. Fixtures: public dev-half runs, and DeepSpeed's message format."""

from __future__ import annotations

from pathlib import Path

from repo_paths import public_run

import autopsy
from autopsy.api import diagnose
from autopsy.model import Family


def _ds_lines(scales: list[float]) -> str:
    return "".join(
        f"[2023-03-01 10:00:{i:02d},000] [INFO] [stage_1_and_2.py:1769:step] [deepspeed] "
        f"OVERFLOW! Rank 0 Skipping step. Attempted loss scale: {s:g}, reducing to {s / 2:g}\n"
        for i, s in enumerate(scales))


def test_fires_on_a_published_early_search() -> None:
    path = public_run("deepspeed_fp16_overflow_first_steps_hysteresis_issue_931")
    d = diagnose(autopsy.load_run(path))
    assert (d.verdict.code, d.verdict.family) == ("HLT002", Family.HEALTHY)


def test_fires_on_a_search_that_settles(tmp_path: Path) -> None:
    (tmp_path / "train.log").write_text(_ds_lines([2.0 ** p for p in range(32, 26, -1)]))
    d = diagnose(autopsy.load_run(tmp_path))
    assert d.verdict.code == "HLT002"


def test_near_miss_passes_when_the_scale_collapses(tmp_path: Path) -> None:
    (tmp_path / "train.log").write_text(_ds_lines([2.0 ** p for p in range(16, -1, -1)]))
    d = diagnose(autopsy.load_run(tmp_path))
    assert d.verdict.family is Family.NAN_INF
    assert not [f for f in d.findings if f.code == "HLT002"]


def test_near_miss_passes_when_a_traceback_follows(tmp_path: Path) -> None:
    (tmp_path / "train.log").write_text(
        _ds_lines([65536.0, 32768.0])
        + "Traceback (most recent call last):\n"
          '  File "/workspace/train.py", line 9, in main\n'
          "    raise KeyError('input_ids')\n"
          "KeyError: 'input_ids'\n")
    d = diagnose(autopsy.load_run(tmp_path))
    assert d.verdict.code == "CRASH001"
    assert not [f for f in d.findings if f.code == "HLT002"]
