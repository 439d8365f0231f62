"""The rank-log reader's worker processes: same results as one process, in order, and a
broken pool falls back to scanning in this process."""

from __future__ import annotations

from concurrent.futures import Future
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from autopsy.readers.ranklogs import reader
from autopsy.readers.ranklogs.reader import read_group

NCCL = ("[E1122 10:27:41.532175021 ProcessGroupNCCL.cpp:616] [Rank {r}] Watchdog caught "
        "collective operation timeout: WorkNCCL(SeqNum=4481, OpType=ALLREDUCE, NumelIn=1, "
        "NumelOut=1, Timeout(ms)=600000) ran for 600083 milliseconds before timing out.")


def _logs(tmp_path: Path, n: int = 6) -> list[Path]:
    paths = []
    for rank in range(n):
        path = tmp_path / f"rank{rank}.log"
        lines = [f"2026-11-22 10:00:{s:02d},000 INFO step {s + 1} loss {2.0 - s / 100:.4f} "
                 f"grad_norm 0.5 lr 0.1" for s in range(40 + rank)]
        if rank != 3:
            lines.append(NCCL.format(r=rank))
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")
        paths.append(path)
    return paths


def _same(a: Any, b: Any) -> None:
    """Two reads gave the same scalars, events (details aside) and problems."""
    strs = {"tag": str, "raw_tag": str, "source": str}
    pd.testing.assert_frame_equal(a.scalars.astype(strs).reset_index(drop=True),
                                  b.scalars.astype(strs).reset_index(drop=True))
    ev = {"source": str, "kind": str}
    pd.testing.assert_frame_equal(
        a.events.drop(columns=["details"]).astype(ev).reset_index(drop=True),
        b.events.drop(columns=["details"]).astype(ev).reset_index(drop=True))
    assert list(a.events["details"]) == list(b.events["details"])
    assert sorted(map(repr, a.problems)) == sorted(map(repr, b.problems))


def test_workers_give_what_one_process_gives_in_the_order_given(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    paths = _logs(tmp_path)
    rels = [p.name for p in paths]
    serial = read_group(paths, rels)
    monkeypatch.setattr(reader, "PARALLEL_BYTES", 0)
    parallel = read_group(paths[::-1], rels[::-1])
    again = read_group(paths, rels)
    _same(again, serial)
    sources = list(dict.fromkeys(parallel.scalars["source"].astype(str)))
    assert sources == rels[::-1]
    assert sorted(parallel.events["rank"].dropna().astype(int).tolist()) == [0, 1, 2, 4, 5]
    strs = {"source": str, "tag": str, "raw_tag": str}
    keys = ["source", "tag", "step"]
    pd.testing.assert_frame_equal(
        parallel.scalars.astype(strs).sort_values(keys).reset_index(drop=True),
        serial.scalars.astype(strs).sort_values(keys).reset_index(drop=True))


class _BrokenPool:
    """A pool that cannot start work (as when processes are not allowed)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self.submitted = 0

    def __enter__(self) -> _BrokenPool:
        return self

    def __exit__(self, *exc: Any) -> None:
        return None

    def submit(self, *args: Any, **kwargs: Any) -> Future[Any]:
        raise RuntimeError("cannot start a process here")


class _DyingPool(_BrokenPool):
    """A pool whose workers die (their futures fail)."""

    def submit(self, *args: Any, **kwargs: Any) -> Future[Any]:
        future: Future[Any] = Future()
        future.set_exception(RuntimeError("A process in the process pool was terminated"))
        return future


@pytest.mark.parametrize("pool", [_BrokenPool, _DyingPool])
def test_a_broken_pool_falls_back_to_this_process(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, pool: type) -> None:
    paths = _logs(tmp_path, 4)
    rels = [p.name for p in paths]
    serial = read_group(paths, rels)
    monkeypatch.setattr(reader, "PARALLEL_BYTES", 0)
    monkeypatch.setattr(reader, "ProcessPoolExecutor", pool)
    fallback = read_group(paths, rels)
    _same(fallback, serial)


class _RaisingPool(_BrokenPool):
    """A pool whose worker raised ValueError for one file (the others are fine)."""

    def submit(self, fn: Any, path: Path, rel: str, cap: int | None = None) -> Future[Any]:
        future: Future[Any] = Future()
        if rel == "rank1.log":
            future.set_exception(ValueError("bad bytes"))
        else:
            future.set_result(fn(path, rel, cap))
        return future


def test_a_file_a_worker_could_not_scan_is_scanned_here(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    paths = _logs(tmp_path, 4)
    rels = [p.name for p in paths]
    serial = read_group(paths, rels)
    monkeypatch.setattr(reader, "PARALLEL_BYTES", 0)
    monkeypatch.setattr(reader, "ProcessPoolExecutor", _RaisingPool)
    _same(read_group(paths, rels), serial)  # one worker's error costs no other file
