"""SLOW006 irregular-stalls: long stalls at no period, with their cost."""

from __future__ import annotations

import numpy as np
from slow_runs import findings, jitter, timed_run

from autopsy.model import Severity


def test_fires_on_irregular_stalls_that_cost_a_large_share() -> None:
    secs = jitter(300, 0.5)
    for step, extra in ((37, 10.0), (58, 6.0), (141, 12.0), (142, 4.0), (263, 9.0)):
        secs[step - 1] += extra
    (f,) = findings(timed_run({None: secs}), "SLOW006")
    assert f.severity is Severity.ERROR and f.cause == "irregular_stall" and f.step == 37
    assert f.evidence[0].numbers["stalls"] == 5


def test_near_miss_periodic_stalls_and_rare_hiccups_pass() -> None:
    secs = jitter(300, 0.5)
    secs[np.arange(49, 300, 50)] += 3.0  # periodic: SLOW003's
    run = timed_run({None: secs})
    assert findings(run, "SLOW006") == []
    assert findings(run, "SLOW003")
    secs = jitter(300, 0.5)
    for step in (40, 170, 260):
        secs[step - 1] += 0.6  # 1.8 s of 150 s
    assert findings(timed_run({None: secs}), "SLOW006") == []
