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


def test_one_stall_of_hours_among_short_steps_is_a_finding() -> None:
    # one epoch of 14.7 h among epochs of 14 s (a log that counts epochs): one stall, more
    # than half of the run's time and well over lone_min_s
    secs = [14.0, 14.2, 13.9, 53049.9, 14.1, 14.0, 13.8]
    (f,) = findings(timed_run({None: secs}), "SLOW006")
    assert f.severity is Severity.ERROR and f.step == 4
    assert f.evidence[0].numbers["stalls"] == 1
    assert f.message.startswith("1 stall at irregular steps")


def test_near_miss_one_short_pause_in_an_excerpt_passes() -> None:
    # one 30 s pause among 0.66 s steps: most of a short excerpt, but a routine pause
    secs = [0.66, 0.65, 0.66, 0.66, 30.68, 0.66]
    assert findings(timed_run({None: secs}), "SLOW006") == []
