"""Tests for the per-rank signals: event roles and rank status."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

import autopsy
from autopsy.signals import CASCADE_KINDS, event_roles, rank_status
from autopsy.signals.ranks import RANK_COLUMNS, event_role

ROOT = Path(__file__).resolve().parents[2]
SAMPLES = ROOT / "sample_runs"
FIXTURES = ROOT / "tests" / "fixtures" / "ranklogs"


def _load(path: Path) -> autopsy.Run:
    if not path.exists():
        pytest.fail(f"{path.name} is not there")
    return autopsy.load_run(path)


@pytest.mark.parametrize(("kind", "message", "details", "role"), [
    ("oom", "CUDA out of memory", {}, "root"),
    ("host_kill", "Killed", {}, "root"),
    ("collective_mismatch", "Detected mismatch", {}, "root"),
    ("nccl_timeout", "Watchdog caught collective operation timeout", {}, "cascade"),
    ("connection_closed", "Connection closed by peer", {}, "cascade"),
    ("child_failed", "rank 0 failed", {"exitcode": -15}, "cascade"),
    ("signal", "closing signal SIGTERM", {"signal": "SIGTERM"}, "cascade"),
    ("signal", "killed", {"signal": "SIGKILL"}, "root"),
    ("traceback", "ValueError: bad", {"exception": "ValueError", "exc_message": "bad"}, "root"),
    ("traceback", "RuntimeError: x", {"exception": "RuntimeError",
                                      "exc_message": "Timed out waiting 15000ms for recv"},
     "cascade"),
    ("traceback", "RuntimeError: x", {"exception": "RuntimeError",
                                      "exc_message": "[pair.cc:553] Connection closed by peer"},
     "cascade"),
    ("error_file", "x", {"exception": "torch.distributed.DistBackendError",
                         "exc_message": "NCCL error"}, "cascade"),
    ("traceback", "ChildFailedError", {"exception": "torch.distributed.elastic.multiprocessing"
                                       ".errors.ChildFailedError"}, "cascade"),
    ("checkpoint_saved", "saved", {}, "info"),
    ("overflow_skip", "Gradient overflow", {}, "info"),
    ("nan_loss", "loss nan", {}, "info"),
])
def test_event_role_table(kind: str, message: str, details: dict, role: str) -> None:
    assert event_role(kind, message, details) == role


def test_cascade_kinds_hold_timeouts_not_roots() -> None:
    assert {"nccl_timeout", "collective_timeout", "connection_closed"} <= CASCADE_KINDS
    assert not {"oom", "host_kill", "traceback"} & CASCADE_KINDS


def test_event_roles_align_with_events() -> None:
    run = _load(SAMPLES / "ddp_rank_exception")
    roles = event_roles(run.events)
    assert roles.index.equals(run.events.index)
    rooted = run.events[roles == "root"]
    assert set(rooted["rank"].dropna().astype(int)) == {2}
    assert event_roles(run.events.iloc[:0]).empty


def test_rank_exception_statuses() -> None:
    status = rank_status(_load(SAMPLES / "ddp_rank_exception"))
    assert list(status.columns) == list(RANK_COLUMNS)
    assert list(status.index) == [0, 1, 2, 3]
    assert status.loc[2, "ended"] == "raised"
    assert bool(status.loc[2, "root"])
    assert status.loc[2, "first_error_kind"] == "traceback"
    assert status.loc[2, "first_error_step"] == 14  # the last step logged before the error
    assert "ValueError" in status.loc[2, "first_error_message"]
    assert status.loc[2, "exitcode"] == 1
    for r in (0, 1, 3):
        assert status.loc[r, "ended"] == "timed_out"
        assert not bool(status.loc[r, "root"])
        assert status.loc[r, "exitcode"] == -15
    assert (status["last_step"] == 14).all()


def test_stalled_rank_is_silent() -> None:
    status = rank_status(_load(SAMPLES / "ddp_rank_stall_timeout"))
    assert status.loc[1, "ended"] == "silent"
    assert status.loc[1, "exitcode"] == -15
    assert set(status.index[status["ended"] == "timed_out"]) == {0, 2, 3}
    assert not status["root"].any()


def test_healthy_ranks_are_ok() -> None:
    status = rank_status(_load(SAMPLES / "ddp_healthy_4ranks"))
    assert (status["ended"] == "ok").all()
    assert status["first_error_kind"].isna().all()
    assert (status["last_step"] == status["last_step"].max()).all()


def test_single_process_run_has_no_ranks() -> None:
    status = rank_status(_load(SAMPLES / "healthy_hf_trainer"))
    assert status.empty
    assert list(status.columns) == list(RANK_COLUMNS)


def test_oom_rank_is_root_and_others_time_out() -> None:
    status = rank_status(_load(FIXTURES / "nccl_watchdog_timeout_rank3_oom"))
    assert status.loc[3, "ended"] == "oom"
    assert bool(status.loc[3, "root"])
    for r in (0, 1, 2):
        assert status.loc[r, "ended"] == "timed_out"
        assert status.loc[r, "first_error_kind"] == "nccl_timeout"
        assert status.loc[r, "exitcode"] == -6


def test_host_kill_and_cpu_oom() -> None:
    status = rank_status(_load(FIXTURES / "host_oom_killed"))
    assert status.loc[1, "ended"] == "killed"
    assert status.loc[1, "exitcode"] == -9
    assert status.loc[2, "ended"] == "oom"


def test_srun_rank_stopping_earlier_is_silent() -> None:
    status = rank_status(_load(FIXTURES / "layouts_srun_mpirun_pdsh"))
    assert status.loc[1, "ended"] == "raised"
    assert status.loc[0, "ended"] == "silent"


def test_monitored_barrier_names_no_root() -> None:
    status = rank_status(_load(FIXTURES / "monitored_barrier_gloo"))
    assert status.loc[1, "ended"] == "silent"
    assert not status["root"].any()


def test_events_without_wall_time_order_by_line() -> None:
    events = pd.DataFrame({
        "rank": pd.array([0, 0], dtype="Int64"), "wall_time": [float("nan")] * 2,
        "step": pd.array([5, 4], dtype="Int64"), "kind": ["nccl_timeout", "traceback"],
        "message": ["timeout", "ValueError: x"], "source": ["a.log", "a.log"],
        "line": pd.array([9, 3], dtype="Int64"),
        "details": [{}, {"exception": "ValueError", "exc_message": "x"}],
    })

    class _Run:
        scalars = pd.DataFrame(columns=["step", "rank", "wall_time"])

    run = _Run()
    run.events = events  # type: ignore[attr-defined]
    status = rank_status(run)
    assert status.loc[0, "first_error_kind"] == "traceback"
    assert status.loc[0, "first_error_line"] == 3
    assert status.loc[0, "ended"] == "raised"


def test_went_on_past_uses_the_rank_own_steps_when_it_has_some() -> None:
    from pathlib import Path

    from autopsy.model import Run, concat_scalars, empty_events, make_scalars
    from autopsy.signals.ranks import went_on_past

    frame = concat_scalars([make_scalars([1, 2, 3], "loss", [1.0, 1.0, 1.0], rank=0),
                            make_scalars([1, 2], "loss", [1.0, 1.0], rank=1)])
    run = Run(root=Path("."), scalars=frame, events=empty_events())
    assert went_on_past(run, 2) == 3
    assert went_on_past(run, 2, rank=1) is None
    assert went_on_past(run, 2, rank=7) == 3  # a rank with no steps of its own: all count
    assert went_on_past(run, None) is None


def test_odd_details_from_logs_never_raise() -> None:
    """pids, ranks and exit codes as empty strings, lists or text: ignored, not a crash;
    a pid written as digits still links a rank-less signal row to its rank."""
    import pandas as pd

    from autopsy.model.events import EVENT_COLUMNS
    from autopsy.signals.ranks import attributed_ranks

    rows = [
        (None, float("nan"), None, "child_failed", "m", "l.log", 1, {"pid": "", "rank": [1]}),
        (None, float("nan"), None, "exit", "m", "l.log", 2, {"pid": [3], "exitcode": "x"}),
        (2, float("nan"), None, "exit", "m", "l.log", 3, {"pid": "4242", "exitcode": "-9"}),
        (None, float("nan"), None, "signal", "m", "l.log", 4, {"pid": 4242, "signal": "SIGKILL"}),
    ]
    ev = pd.DataFrame(rows, columns=list(EVENT_COLUMNS))
    ev["rank"] = ev["rank"].astype("Int64")
    assert attributed_ranks(ev).tolist()[2:] == [2, 2]
    assert attributed_ranks(ev).isna().tolist()[:2] == [True, True]
