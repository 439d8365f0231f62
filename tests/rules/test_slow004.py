"""SLOW004 slowing-down: the step time rises over the run."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from slow_runs import findings, jitter, timed_run

import autopsy
from autopsy.api import diagnose
from autopsy.model import Severity

SAMPLE = Path(__file__).resolve().parents[2] / "sample_runs"


def test_fires_on_a_step_time_that_doubles() -> None:
    secs = np.linspace(0.5, 1.0, 400) * jitter(400, 1.0, rel=0.03)
    (f,) = findings(timed_run({None: secs}), "SLOW004")
    assert f.severity is Severity.ERROR and f.cause == "slowing_down"
    assert f.evidence[0].numbers["rel_change"] > 0.8
    assert 80 < (f.step or 0) < 160  # 25% slower than the start around step 100


def test_stalls_do_not_make_a_trend_near_miss_passes() -> None:
    secs = jitter(300, 0.5)
    secs[np.arange(200, 300, 10)] += 5.0  # stalls late in the run: SLOW003's, not a trend
    secs[0] = 40.0  # a slow first step
    assert findings(timed_run({None: secs}), "SLOW004") == []


def test_noise_on_a_tiny_cpu_run_passes() -> None:
    d = diagnose(autopsy.load_run(SAMPLE / "chance_level_classifier"))
    assert all(f.code != "SLOW004" for f in d.findings)  # 4 -> 14 ms: under min_lost_s
