"""HANG007 stack-odd-one-out: the rank whose stack differs from the majority's is stuck.

Fixtures: real py-spy and faulthandler dumps of hung 3-rank torchrun jobs
(``tests/fixtures/stack_dumps/``, made by the ``make.py`` there)."""

from __future__ import annotations

import shutil
from pathlib import Path

from repo_paths import REPO

import autopsy
from autopsy.api import diagnose
from autopsy.model import Family, Severity

FIXTURES = REPO / "tests" / "fixtures" / "stack_dumps"


def _copy(tmp_path: Path, name: str, keep: str) -> Path:
    src = FIXTURES / name
    assert src.is_dir(), f"missing fixture {src}"
    out = tmp_path / name
    out.mkdir()
    for f in src.glob(keep):
        shutil.copy(f, out / f.name)
    return out


def test_fires_on_a_rank_stuck_in_data_loading_while_the_others_all_reduce() -> None:
    d = diagnose(autopsy.load_run(FIXTURES / "rank1_stuck_in_data_loading"))
    (f,) = [f for f in d.findings if f.code == "HANG007"]
    assert f.family is Family.HANG and f.cause == "dead_rank" and f.ranks == (1,)
    assert f.severity is Severity.ERROR
    assert "stopped in data loading" in f.message and "wait in a collective (all_reduce)" \
        in f.message
    assert "DataLoader timeout" in f.advice[0]


def test_near_misses_pass(tmp_path: Path) -> None:
    # two ranks: neither is the odd one out
    two = _copy(tmp_path, "rank1_stuck_in_data_loading", "pyspy_rank[01].txt")
    assert "HANG007" not in {f.code for f in diagnose(autopsy.load_run(two)).findings}
    # every rank in the same place: no culprit from the stacks
    same = _copy(tmp_path, "rank0_stuck_in_checkpoint_save", "pyspy_rank[12].txt")
    shutil.copy(same / "pyspy_rank1.txt", same / "pyspy_rank0.txt")
    assert "HANG007" not in {f.code for f in diagnose(autopsy.load_run(same)).findings}
