"""HANG005 collective-mismatch-detected: fail-fast mismatch, the odd rank out."""

from __future__ import annotations

from dataclasses import replace

import pandas as pd
from hang_runs import events_run, load

from autopsy.api import diagnose


def test_fires_on_the_detail_fingerprints_of_a_real_run() -> None:
    v = diagnose(load("ddp_collective_mismatch_detail")).verdict
    assert (v.code, v.family.value, v.cause, v.ranks, v.step) == (
        "HANG005", "crash", "collective_mismatch", (3,), 8)
    assert "TensorShape [2] instead of [1]" in v.message


def test_fires_on_gloo_size_error_naming_the_detecting_rank() -> None:
    v = diagnose(load("collective_mismatch_gloo_no_detail")).verdict
    assert (v.code, v.ranks) == ("HANG005", (1,))


def test_near_miss_two_ranks_without_majority_names_both() -> None:
    f = {x.code: x for x in diagnose(load("collective_mismatch_detail")).findings}["HANG005"]
    assert f.ranks == (0, 1) and "no majority" in f.message


def test_passes_over_a_silent_mismatch_and_a_stall() -> None:
    for name in ("ddp_collective_mismatch_silent", "ddp_rank_stall_timeout"):
        assert "HANG005" not in {f.code for f in diagnose(load(name)).findings}


def test_fires_on_a_mismatch_line_without_rank_or_line_number() -> None:
    run = events_run([(None, None, "collective_mismatch", {})])
    run = replace(run, events=run.events.assign(line=pd.array([None], dtype="Int64")))
    f = {x.code: x for x in diagnose(run).findings}["HANG005"]
    assert f.ranks == () and f.evidence[0].line is None
    assert f.advice[0].startswith("make every rank call the same collective")
