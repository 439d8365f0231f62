"""Stack dumps of hung jobs: py-spy and faulthandler (``ranklogs.stacks``, ``signals.stacks``,
HANG007, and the stacks as a clue of HANG001).

The fixtures in ``tests/fixtures/stack_dumps/`` are real: ``make.py`` beside them ran
3-rank torchrun jobs on CPU in which one rank stops (in its DataLoader's ``__getitem__``, in
``torch.save`` to a blocking file) while the others wait in the gradient all_reduce; every
rank's ``faulthandler.dump_traceback_later`` wrote its stacks to its log (``rank<N>.log``)
and ``py-spy dump`` was run on every rank (``pyspy_rank<N>.txt``).
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from repo_paths import REPO

import autopsy
from autopsy.api import diagnose
from autopsy.model import Family
from autopsy.readers.ranklogs.stacks import parse_faulthandler, parse_pyspy
from autopsy.signals.stacks import group_ranks, phase, rank_stacks

FIXTURES = REPO / "tests" / "fixtures" / "stack_dumps"
DATA = "rank1_stuck_in_data_loading"
SAVE = "rank0_stuck_in_checkpoint_save"


def _case(tmp_path: Path, name: str, which: str) -> Path:
    src = FIXTURES / name
    assert src.is_dir(), f"missing fixture {src}"
    out = tmp_path / f"{name}_{which}"
    out.mkdir()
    for f in src.iterdir():
        if which == "all" or (which == "pyspy") == f.name.startswith("pyspy_"):
            shutil.copy(f, out / f.name)
    return out


@pytest.mark.parametrize("which", ["all", "pyspy", "faulthandler"])
@pytest.mark.parametrize(("name", "rank", "where"), [(DATA, 1, "data loading"),
                                                    (SAVE, 0, "checkpoint save")])
def test_the_rank_stopped_elsewhere_is_named_with_its_phase(
        tmp_path: Path, which: str, name: str, rank: int, where: str) -> None:
    run = autopsy.load_run(_case(tmp_path, name, which))
    v = diagnose(run).verdict
    assert (v.family, v.cause, tuple(v.ranks), v.code) == (Family.HANG, "dead_rank", (rank,),
                                                            "HANG007")
    assert f"stopped in {where}" in v.message and "all_reduce" in v.message


def test_stacks_are_grouped_and_phased() -> None:
    run = autopsy.load_run(FIXTURES / DATA)
    stacks = rank_stacks(run.events)
    assert sorted(stacks) == [0, 1, 2]
    assert group_ranks(stacks) == [[0, 2], [1]]
    assert phase(stacks[1]) == "data loading"
    assert phase(stacks[0]) == "a collective (all_reduce)"
    assert stacks[1].where().startswith("__getitem__ at ")


def test_parsers_read_both_writers_exactly() -> None:
    fault = parse_faulthandler(
        "Current thread 0x00007f1c93404b80 (most recent call first):",
        ['  File "/job/train.py", line 20 in __getitem__',
         '  File "/job/train.py", line 39 in <module>', "", "Thread 0x0000 ..."])
    assert fault is not None and fault["current"] and fault["main"]
    assert [f["function"] for f in fault["frames"]] == ["__getitem__", "<module>"]
    spy = parse_pyspy('Thread 11792 (active+gil): "Thread-3"',
                      ["    wait (threading.py:320)", "        Arguments:",
                       "            self: <Condition at 0x7f>", "    run (worker.py:12)",
                       'Thread 11793 (idle): "MainThread"'])
    assert spy is not None and not spy["main"] and spy["state"] == "active+gil"
    assert [(f["function"], f["line"]) for f in spy["frames"]] == [("wait", 320), ("run", 12)]
    assert parse_pyspy("Thread 5 (idle)", ["not a frame"]) is None


def test_with_timeouts_the_stacks_are_a_clue_of_hang001(tmp_path: Path) -> None:
    run_dir = _case(tmp_path, DATA, "faulthandler")
    for f in (REPO / "tests" / "fixtures" / "flight_recorder" / "rank1_never_enters").glob(
            "nccl_trace_rank_?"):
        shutil.copy(f, run_dir / f.name)
    d = diagnose(autopsy.load_run(run_dir))
    assert d.verdict.code == "HANG001" and tuple(d.verdict.ranks) == (1,)
    (hang,) = [f for f in d.findings if f.code == "HANG001"]
    assert any("stack dumps show rank(s) [1] in data loading" in e.summary
               for e in hang.evidence)


def test_the_fixture_script_still_makes_the_situation(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-c",
         f"import sys; sys.path.insert(0, {str(FIXTURES)!r}); import make; "
         f"make.make({DATA!r}, __import__('pathlib').Path({str(tmp_path / DATA)!r}), 29751, "
         "pyspy=False)"],
        capture_output=True, text=True, timeout=180)
    assert done.returncode == 0, done.stderr[-2000:]
    v = diagnose(autopsy.load_run(tmp_path / DATA)).verdict
    assert (v.code, tuple(v.ranks)) == ("HANG007", (1,))
