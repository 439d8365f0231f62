"""HANG002 uneven-batches: a rank ran out of data and waited at a barrier."""

from __future__ import annotations

from hang_runs import events_run, load

from autopsy.api import diagnose


def _tb(func: str, line: int) -> dict[str, object]:
    return {"exception": "RuntimeError", "frames": [{"function": "main", "user": True},
                                                     {"function": func, "user": False}],
            "user_frame": {"file": "train.py", "line": line, "function": "main"}}


def test_fires_on_the_real_uneven_batches_run() -> None:
    d = diagnose(load("ddp_uneven_batches"))
    v = d.verdict
    assert (v.code, v.family.value, v.cause, v.ranks, v.step) == (
        "HANG002", "hang", "uneven_batches", (0,), 20)
    f = next(f for f in d.findings if f.code == "HANG002")
    assert any("drop_last=True" in a for a in f.advice)


def test_fires_on_a_synthetic_barrier_minority() -> None:
    t = {"backend": "gloo", "op": "recv"}
    rows = []
    for rank, func, line, step in [(0, "barrier", 90, 11), (1, "backward", 50, 12),
                                   (2, "backward", 50, 12)]:
        rows += [(rank, step, "traceback", _tb(func, line)), (rank, step, "collective_timeout", t)]
    f = {x.code: x for x in diagnose(events_run(rows)).findings}["HANG002"]
    assert f.ranks == (0,) and f.step == 12


def test_near_miss_passes_when_all_wait_in_the_same_place() -> None:
    t = {"backend": "gloo", "op": "recv"}
    rows = []
    for rank in (0, 1, 2):
        rows += [(rank, 9, "traceback", _tb("backward", 50)), (rank, 9, "collective_timeout", t)]
    codes = {x.code for x in diagnose(events_run(rows)).findings}
    assert "HANG002" not in codes and "HANG001" in codes


def test_near_miss_passes_over_a_dead_rank_and_a_mismatch() -> None:
    assert "HANG002" not in {f.code for f in diagnose(load("ddp_rank_stall_timeout")).findings}
    silent = diagnose(load("ddp_collective_mismatch_silent")).findings
    assert "HANG002" not in {f.code for f in silent}
