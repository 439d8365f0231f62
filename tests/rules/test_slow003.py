"""SLOW003 periodic-stalls: stalls every N steps, with their cost."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from slow_runs import findings, jitter, timed_run

import autopsy
from autopsy.api import diagnose
from autopsy.model import Family, Severity

SAMPLE = Path(__file__).resolve().parents[2] / "sample_runs"


def test_fires_on_the_checkpoint_stall_sample_run() -> None:
    d = diagnose(autopsy.load_run(SAMPLE / "slow_periodic_checkpoint_stalls"))
    v = d.verdict
    assert (v.family, v.cause, v.code, v.step) == (Family.SLOW, "periodic_stall", "SLOW003", 20)
    found = next(f for f in d.findings if f.code == "SLOW003")
    assert "save_steps=20" in found.message
    assert found.evidence[1].numbers["share"] > 0.5


def test_fires_on_a_period_without_config_and_warns_when_cheap() -> None:
    secs = jitter(300, 0.5)
    secs[np.arange(49, 300, 50)] += 3.0  # 6 stalls of 3 s: 18 s of 168 s
    (f,) = findings(timed_run({None: secs}), "SLOW003")
    assert f.severity is Severity.ERROR and "every 50 steps" in f.message and f.step == 50
    secs = jitter(300, 0.5)
    secs[np.arange(49, 300, 50)] += 1.2  # 7 s of 157 s: a warning
    (f,) = findings(timed_run({None: secs}), "SLOW003")
    assert f.severity is Severity.WARNING


def test_near_miss_passes_on_cheap_evals_and_a_slow_first_step() -> None:
    secs = jitter(200, 0.4)
    secs[0] = 60.0  # compile / warm-up
    secs[1] = 10.0
    secs[np.arange(19, 200, 20)] += 0.2  # a 0.2 s eval every 20 steps: 1% of the run
    run = timed_run({None: secs}, config={"eval_steps": 20})
    assert findings(run, "SLOW003") == []
    assert diagnose(run).verdict.family is not Family.SLOW


def test_near_miss_passes_on_the_healthy_trainer_run() -> None:
    d = diagnose(autopsy.load_run(SAMPLE / "healthy_hf_trainer"))
    assert d.verdict.family is Family.HEALTHY
    assert all(not f.code.startswith("SLOW") for f in d.findings)


def test_fires_from_a_throughput_log_without_time_stamps() -> None:
    from autopsy.model import make_scalars

    rate = np.full(200, 2.0)  # DeepSpeed-style samples/sec, global batch 16: 8 s per step
    rate[np.arange(24, 200, 25)] = 0.5  # every 25 steps a 32 s step
    run = timed_run({None: jitter(5, 1.0)}, config={"per_device_train_batch_size": 4,
                                                     "world_size": 4, "save_steps": 25})
    run.scalars = make_scalars(range(1, 201), "samples/sec", rate)
    (f,) = findings(run, "SLOW003")
    assert f.step == 25 and "save_steps=25" in f.message
