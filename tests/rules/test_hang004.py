"""HANG004 init-hang: ranks that never joined the rendezvous or barrier."""

from __future__ import annotations

from dataclasses import replace

import pandas as pd
from hang_runs import events_run, load

from autopsy.api import diagnose


def _find(run: object) -> dict[str, object]:
    return {f.code: f for f in diagnose(run).findings}


def test_fires_on_the_monitored_barrier_naming_the_missing_rank() -> None:
    v = diagnose(load("monitored_barrier_gloo")).verdict
    assert (v.code, v.cause, v.ranks) == ("HANG004", "init_hang", (1,))
    assert "HANG001" not in _find(load("monitored_barrier_gloo"))


def test_fires_on_store_barrier_counts() -> None:
    f = _find(load("rendezvous_timeout"))["HANG004"]
    assert "6/8" in f.message
    assert "3/4" in _find(load("store_clients_timeout"))["HANG004"].message


def test_near_miss_passes_on_a_plain_collective_timeout() -> None:
    run = events_run([(0, 7, "nccl_timeout", {"SeqNum": 40, "OpType": "ALLREDUCE"})])
    assert "HANG004" not in _find(run)


def test_fires_on_a_timeout_line_without_a_line_number() -> None:
    run = events_run([(None, None, "rendezvous_timeout", {"expected": 4, "joined": 3})])
    run = replace(run, events=run.events.assign(line=pd.array([None], dtype="Int64")))
    f = _find(run)["HANG004"]
    assert "3/4" in f.message and f.evidence[0].line is None
