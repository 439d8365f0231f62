"""SLOW007 slow-stretch: a sustained stretch several times slower than the run's own pace."""

from __future__ import annotations

import numpy as np
from repo_paths import public_run
from slow_runs import findings, jitter, timed_run

import autopsy
from autopsy.api import diagnose
from autopsy.model import Family, Severity


def test_fires_on_a_published_mxnet_log_slow_for_its_first_700_batches() -> None:
    # public corpus, dev half: Speedometer at ~15 samples/s for batches 100-700, then ~513
    run = autopsy.load_run(public_run(
        "mxnet_speed_15_samples_per_sec_for_700_batches_then_513_issue_3554"))
    d = diagnose(run)
    assert d.verdict.family is Family.SLOW and d.verdict.code == "SLOW007"
    (f,) = findings(run, "SLOW007")
    assert f.severity is Severity.ERROR and f.step == 100
    assert f.evidence[0].numbers["ratio"] > 20 and f.evidence[0].numbers["share"] > 0.9


def test_fires_on_a_slow_middle_stretch_with_its_cost() -> None:
    secs = jitter(200, 0.5)
    secs[80:120] *= 4  # 40 steps at 2 s instead of 0.5 s: 60 s lost of 160 s
    (f,) = findings(timed_run({None: secs}), "SLOW007")
    assert f.severity is Severity.ERROR and 80 <= f.step <= 82
    assert 0.3 < f.evidence[0].numbers["share"] < 0.45
    assert "in the middle" in f.message


def test_near_misses_pass() -> None:
    # jitter of 30% around one pace: no stretch three times slower
    assert findings(timed_run({None: jitter(200, 0.5, rel=0.3)}), "SLOW007") == []
    # two slow steps in a row: stalls (SLOW003/SLOW006), not a stretch
    secs = jitter(200, 0.5)
    secs[[50, 51, 120, 121]] *= 6
    assert findings(timed_run({None: secs}), "SLOW007") == []
    # a slow stretch that cost under warn_share of the run: not reported
    secs = jitter(300, 0.5)
    secs[100:104] *= 3.5  # 5 s lost of ~155 s
    assert findings(timed_run({None: secs}), "SLOW007") == []


def test_a_moderate_stretch_is_a_warning_not_the_verdict() -> None:
    secs = jitter(200, 0.5)
    secs[100:110] *= 5  # 20 s lost of 120 s: a sixth of the run
    run = timed_run({None: secs})
    (f,) = findings(run, "SLOW007")
    assert f.severity is Severity.WARNING
    assert diagnose(run).verdict.code != "SLOW007"
    assert np.isclose(f.evidence[0].numbers["points"], 10)
