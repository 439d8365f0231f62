"""HANG001 collective-timeout-laggard: the rank the others waited for."""

from __future__ import annotations

from hang_runs import events_run, load

from autopsy.api import diagnose


def _codes(run: object) -> dict[str, object]:
    return {f.code: f for f in diagnose(run).findings}


def test_fires_on_the_stalled_rank_of_a_real_run() -> None:
    v = diagnose(load("ddp_rank_stall_timeout")).verdict
    assert (v.code, v.family.value, v.cause, v.ranks, v.step) == (
        "HANG001", "hang", "dead_rank", (1,), 10)


def test_fires_on_the_rank_whose_log_just_stops() -> None:
    f = _codes(load("nccl_timeout_old_format"))["HANG001"]
    assert (f.cause, f.ranks, f.step) == ("dead_rank", (2,), 301)


def test_fires_on_the_rank_a_desync_report_names() -> None:
    f = _codes(load("nccl_desync_and_heartbeat"))["HANG001"]
    assert f.cause == "dead_rank" and f.ranks == (2,)


def test_fires_on_an_equal_step_laggard_without_timeout_as_dead_rank() -> None:
    t = {"backend": "gloo", "op": "recv"}
    run = events_run([(0, 5, "collective_timeout", t), (1, 5, "collective_timeout", t),
                      (2, 5, "child_failed", {"rank": 2, "exitcode": -15})])
    f = _codes(run)["HANG001"]
    assert (f.cause, f.ranks) == ("dead_rank", (2,))
    assert "HANG002" not in _codes(run)


def test_near_miss_a_lone_timeout_without_laggard_evidence_is_nccl_timeout() -> None:
    run = events_run([(0, 7, "nccl_timeout", {"SeqNum": 40, "OpType": "ALLREDUCE"})])
    f = _codes(run)["HANG001"]
    assert f.cause == "nccl_timeout" and f.ranks == (0,)


def test_near_miss_every_logged_rank_timed_out_alike_names_no_laggard() -> None:
    f = _codes(load("node_files_uneven_batches"))["HANG001"]
    assert f.cause == "nccl_timeout" and f.ranks == (0, 1, 2)


def test_passes_over_a_healthy_run_and_an_oom_cascade() -> None:
    assert "HANG001" not in _codes(load("ddp_healthy_4ranks"))
    assert "HANG001" not in _codes(load("nccl_watchdog_timeout_rank3_oom"))
    assert "HANG001" not in _codes(load("ddp_rank_exception"))
