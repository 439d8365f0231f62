"""HANG003 collective-mismatch: mismatched collectives that ended in timeouts."""

from __future__ import annotations

from hang_runs import events_run, load

from autopsy.api import diagnose


def test_fires_on_the_silent_gloo_mismatch_run() -> None:
    v = diagnose(load("ddp_collective_mismatch_silent")).verdict
    assert (v.code, v.family.value, v.cause, v.ranks, v.step) == (
        "HANG003", "hang", "collective_mismatch", (3,), 8)


def test_fires_on_a_numel_mismatch_at_one_seqnum() -> None:
    v = diagnose(load("nccl_numel_mismatch")).verdict
    assert (v.code, v.cause, v.ranks) == ("HANG003", "collective_mismatch", (3,))
    assert "1048064" in v.message


def test_near_miss_passes_when_numel_agrees() -> None:
    d = {"SeqNum": 9, "OpType": "ALLREDUCE", "NumelIn": 64}
    run = events_run([(r, 3, "nccl_timeout", d) for r in (0, 1, 2)])
    codes = {f.code for f in diagnose(run).findings}
    assert "HANG003" not in codes and "HANG001" in codes


def test_near_miss_passes_on_two_ranks_without_a_majority() -> None:
    run = events_run([(0, 3, "nccl_timeout", {"SeqNum": 9, "NumelIn": 64}),
                      (1, 3, "nccl_timeout", {"SeqNum": 9, "NumelIn": 32})])
    assert "HANG003" not in {f.code for f in diagnose(run).findings}
