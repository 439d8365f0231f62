"""The rank-log fast path (rg / GNU grep offsets) gives exactly the pure-Python results.

Every fixture folder, and a generated multi-block log with planted failures, an
over-long line and markers near block edges, is read with each search engine
(``AUTOPSY_RANKLOGS_SEARCH`` = ``python``, ``grep``, ``rg``); the events and scalars
frames and the problems must be identical. An engine whose tool is not on PATH is
skipped with the reason.
"""

from __future__ import annotations

import io
import random
import shutil
from pathlib import Path

import pandas as pd
import pytest

from autopsy.readers.ranklogs import fastpath, lines, scan
from autopsy.readers.ranklogs.reader import read_group, sniff
from autopsy.readers.ranklogs.scan import scan_file

FIXTURES = Path(__file__).parent / "fixtures" / "ranklogs"
CASES = sorted(p.name for p in FIXTURES.iterdir() if p.is_dir())
#: ``grep-offsets``: grep's offsets with its line numbers dropped, as rg gives them
#: (the scanner then counts lines itself).
ENGINES = ("grep", "grep-offsets", "rg")


def _drop_lines(monkeypatch: pytest.MonkeyPatch) -> None:
    real = fastpath.marker_offsets

    def offsets_only(path: Path) -> fastpath.Found | None:
        found = real(path)
        return None if found is None else fastpath.Found(found.offsets, None, found.covered)

    monkeypatch.setattr(scan, "marker_offsets", offsets_only)


def _need(engine: str) -> None:
    exe = {"grep": "grep", "grep-offsets": "grep", "rg": "rg"}[engine]
    engine = engine.split("-")[0]
    fastpath._tool.cache_clear()
    if engine == "rg":
        # the test extra installs the ripgrep wheel: its rg sits beside this Python (not
        # always on PATH), which is where autopsy looks first; missing, the test fails
        assert fastpath._tool("rg") is not None, (
            "no rg beside this Python nor on PATH: `pip install -e '.[test]'` installs it")
        return
    if shutil.which(exe) is None:
        pytest.skip(f"`{exe}` not on PATH: the {engine} fast path cannot run here")
    if fastpath._tool(engine) is None:
        pytest.skip(f"`{exe}` on PATH is not usable as a fast path (GNU grep needed)")


def _read(paths: list[Path], rels: list[str], engine: str,
          monkeypatch: pytest.MonkeyPatch) -> tuple[pd.DataFrame, pd.DataFrame, list[str]]:
    monkeypatch.setattr(fastpath, "MIN_BYTES", 0)  # small files too
    if engine == "grep-offsets":
        _drop_lines(monkeypatch)
        engine = "grep"
    else:
        monkeypatch.setattr(scan, "marker_offsets", fastpath.marker_offsets)
    monkeypatch.setenv(fastpath.ENV, engine)
    assert fastpath.engine() == engine
    part = read_group(paths, rels)
    return part.events, part.scalars, [repr(p) for p in part.problems]


def _same(a: tuple[pd.DataFrame, pd.DataFrame, list[str]],
          b: tuple[pd.DataFrame, pd.DataFrame, list[str]]) -> None:
    pd.testing.assert_frame_equal(a[0], b[0])
    pd.testing.assert_frame_equal(a[1], b[1])
    assert a[2] == b[2]


def _logs(folder: Path) -> tuple[list[Path], list[str]]:
    paths = sorted(p for p in folder.rglob("*") if p.is_file() and sniff(p))
    return paths, [p.relative_to(folder).as_posix() for p in paths]


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("case", CASES)
def test_fixture_identical(case: str, engine: str, monkeypatch: pytest.MonkeyPatch) -> None:
    _need(engine)
    paths, rels = _logs(FIXTURES / case)
    assert paths, case
    slow = _read(paths, rels, "python", monkeypatch)
    _same(_read(paths, rels, engine, monkeypatch), slow)


def _planted_log(path: Path, huge: bool) -> None:
    """A log of many small blocks: metric lines, noise, tqdm bars, failures, maybe a huge
    line (which sends a whole file to the pure-Python search)."""
    rng = random.Random(7)
    out = io.StringIO()
    for step in range(1, 3001):
        for i in range(5):
            out.write(f"[2026-01-01 10:00:{i:02d},000] [INFO] [x.py:{i}] shard {rng.random()}\n")
        if step % 2:
            out.write(f"step {step} loss {2.0 - step / 1e4:.4f} lr 3e-4\n")
        else:
            out.write("{'loss': %.4f, 'grad_norm': 1.5, 'learning_rate': 3e-05, 'epoch': 0.1}\n"
                      % (2 - step / 1e4))
            out.write("\r".join(f" {step // 30}%|#         | {step}/3000 [00:01<00:02,  2.00it/s]"
                                for _ in range(2)) + "\n")
        if step == 1000 and huge:
            out.write("x" * 200_000 + " loss 5 step=3 Killed\n")  # over-long line
        if step == 1500:
            out.write("Grad overflow on iteration 1500\n")
        if step == 2000:
            out.write("[E1218 20:27:41.532175021 ProcessGroupNCCL.cpp:616] [Rank 3] Watchdog "
                      "caught collective operation timeout: WorkNCCL(SeqNum=4481, "
                      "OpType=ALLREDUCE, NumelIn=26214400, NumelOut=26214400, "
                      "Timeout(ms)=600000) ran for 600083 milliseconds before timing out.\n")
    out.write("Traceback (most recent call last):\n"
              '  File "/workspace/train.py", line 187, in main\n'
              "    loss.backward()\n"
              "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 3 "
              "has a total capacity of 79.10 GiB of which 1.21 GiB is free.\n")
    path.write_text(out.getvalue(), encoding="utf-8")


@pytest.mark.parametrize("huge", [False, True])
@pytest.mark.parametrize("engine", ENGINES)
def test_generated_identical(engine: str, huge: bool, tmp_path: Path,
                             monkeypatch: pytest.MonkeyPatch) -> None:
    _need(engine)
    log = tmp_path / "rank3.log"
    _planted_log(log, huge)
    used: list[bool] = []
    real = scan._scan_text

    def spy(*args: object, **kwargs: object) -> scan.FileResult | None:
        got = real(*args, **kwargs)  # type: ignore[arg-type]
        used.append(args[3] is not None and got is not None)
        return got

    monkeypatch.setattr(scan, "_scan_text", spy)
    for block in (1 << 20, 70_000, 300_000):
        monkeypatch.setattr(lines, "BLOCK_BYTES", block)
        monkeypatch.setattr(lines, "CARRY_WINDOW", block // 4)
        slow = _read([log], ["rank3.log"], "python", monkeypatch)
        kinds = set(slow[0]["kind"])
        assert {"nccl_timeout", "oom", "traceback", "overflow_skip"} <= kinds
        used.clear()
        _same(_read([log], ["rank3.log"], engine, monkeypatch), slow)
        if not huge:  # a line cut to its tail makes the fast path give up: no claim then
            assert any(used), "the fast path did not run"


def test_block_hits_rejects_bad_offsets(tmp_path: Path) -> None:
    """Offsets that do not land on a marker are not trusted (bytes.find instead)."""
    from array import array

    data = b"noise\nstep 1 loss 2\nmore\n"
    good = fastpath.Found(array("q", [data.index(b"loss")]), array("q", [2]), len(data))
    assert fastpath.block_hits(data, 0, good) == ([6], [2])
    bad = fastpath.Found(array("q", [2]), None, len(data))
    assert fastpath.block_hits(data, 0, bad) is None
    assert fastpath.block_hits(data, 0, fastpath.Found(array("q"), None, 3)) is None
    assert fastpath.block_hits(data, -1, good) is None  # block not a plain slice


def test_python_engine_runs_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    log = tmp_path / "rank0.log"
    log.write_text("step 1 loss 2.0\n", encoding="utf-8")
    monkeypatch.setattr(fastpath, "MIN_BYTES", 0)
    monkeypatch.setenv(fastpath.ENV, "python")
    assert fastpath.marker_offsets(log) is None
    assert len(scan_file(log, "rank0.log").scalars) == 1


def test_small_files_stay_in_process(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _need("grep")
    log = tmp_path / "rank0.log"
    log.write_text("step 1 loss 2.0\n", encoding="utf-8")
    monkeypatch.setenv(fastpath.ENV, "grep")
    assert fastpath.marker_offsets(log) is None  # below MIN_BYTES
    monkeypatch.setattr(fastpath, "MIN_BYTES", 0)
    found = fastpath.marker_offsets(log)
    assert found is not None and list(found.offsets) == [7] and list(found.lines or []) == [1]


def test_a_stuck_search_tool_is_killed_and_the_file_searched_here(tmp_path, monkeypatch) -> None:
    """A tool that never answers (a hung mount, say) is killed after TIMEOUT_S; its empty
    output is not taken as "no markers"."""
    from autopsy.readers.ranklogs import fastpath

    log = tmp_path / "rank0.log"
    log.write_text("step 1 loss 1.0\n", encoding="utf-8")
    monkeypatch.setattr(fastpath, "MIN_BYTES", 0)
    monkeypatch.setattr(fastpath, "TIMEOUT_S", 0.3)
    monkeypatch.setattr(fastpath, "_tool", lambda choice: ("grep", "sleep"))
    monkeypatch.setattr(fastpath, "_command", lambda kind, exe, path, markers=(): ["sleep", "20"])
    assert fastpath.marker_offsets(log) is None


def test_the_search_tool_runs_under_a_memory_limit(tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """A line longer than the tool's memory limit (the tools hold a whole line) makes the
    tool fail, and the file is searched in Python (which keeps a line's last 64 KiB)."""
    from autopsy.readers.ranklogs import fastpath

    _need("rg")
    monkeypatch.setenv(fastpath.ENV, "rg")
    monkeypatch.setattr(fastpath, "MIN_BYTES", 0)
    monkeypatch.setattr(fastpath, "TOOL_MEMORY", 64 << 20)
    normal = tmp_path / "rank0.log"
    normal.write_bytes(b"step 1 loss 2.0\n" * 1000 + b"RuntimeError: CUDA out of memory.\n")
    found = fastpath.marker_offsets(normal)
    assert found is not None and len(found.offsets) > 0
    long = tmp_path / "rank1.log"
    with open(long, "wb") as fh:
        fh.write(b"step 1 loss 2.0\n")
        fh.write(b"0.1234, " * (10 << 20))  # an 80 MB line
        fh.write(b"\nstep 2 loss nan\n")
    assert fastpath.marker_offsets(long) is None
    result = scan_file(long, "rank1.log")
    assert [p.kind for p in result.problems] == ["long_line"]
    assert sorted(r[0] for r in result.scalars.rows()) == [1, 2]
