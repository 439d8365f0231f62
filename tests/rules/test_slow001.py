"""SLOW001 data-starvation: data loading is most of each step."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from slow_runs import findings, jitter, timed_run

import autopsy
from autopsy.api import diagnose
from autopsy.model import Family, Severity

SAMPLE = Path(__file__).resolve().parents[2] / "sample_runs"


def test_fires_on_the_starved_sample_run() -> None:
    d = diagnose(autopsy.load_run(SAMPLE / "slow_dataloader_starved"))
    v = d.verdict
    assert (v.family, v.cause, v.code, v.step) == (Family.SLOW, "data_starvation", "SLOW001", 1)
    found = next(f for f in d.findings if f.code == "SLOW001")
    assert any("dataloader_num_workers=0" in e.summary for e in found.evidence)


def test_fires_from_compute_time_when_data_time_is_not_logged() -> None:
    n = 60
    run = timed_run({None: jitter(n, 0.5)}, tags={"compute_time": {None: jitter(n, 0.1)}})
    (f,) = findings(run, "SLOW001")
    assert f.severity is Severity.ERROR and f.cause == "data_starvation"
    assert "80%" in f.message


def test_fires_when_step_time_leaves_the_data_wait_out() -> None:
    n = 40  # a loop whose step_time is compute only: data 0.3 s, step_time 0.1 s
    run = timed_run({None: jitter(n, 0.4)}, tags={"data_time": {None: jitter(n, 0.3)},
                                                  "step_time": {None: jitter(n, 0.1)}})
    (f,) = findings(run, "SLOW001")
    assert "data_time + the step_time tag" in f.evidence[0].summary


def test_near_miss_passes_with_a_small_data_share_and_a_slow_first_batch() -> None:
    n = 80
    data = jitter(n, 0.02)
    data[0] = 5.0  # the first batch: workers starting, cache cold
    secs = jitter(n, 0.25)
    secs[0] = 6.0
    assert findings(timed_run({None: secs}, tags={"data_time": {None: data}}), "SLOW001") == []


def test_warns_between_the_two_shares() -> None:
    n = 50
    run = timed_run({None: jitter(n, 1.0)}, tags={"data_time": {None: jitter(n, 0.4)}})
    (f,) = findings(run, "SLOW001")
    assert f.severity is Severity.WARNING


def test_one_slow_rank_is_a_straggler_not_starvation_pass() -> None:
    n = 40
    data = {r: jitter(n, 0.5 if r == 3 else 0.01, seed=r) for r in range(4)}
    run = timed_run({r: np.full(n, 0.6) for r in range(4)}, tags={"data_time": data})
    assert findings(run, "SLOW001") == []
    assert [f.ranks for f in findings(run, "SLOW002")] == [(3,)]


def test_fires_from_the_step_starvation_begins() -> None:
    n = 200  # the page cache runs out at step 100: data waits from then on
    data = np.where(np.arange(1, n + 1) < 100, jitter(n, 0.02), jitter(n, 0.5))
    secs = data + jitter(n, 0.2, seed=1)
    (f,) = findings(timed_run({None: secs}, tags={"data_time": {None: data}}), "SLOW001")
    assert f.step is not None and 100 <= f.step <= 104
