"""SLOW002 straggler: one rank slower every step while the others wait."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from slow_runs import findings, jitter, timed_run

import autopsy
from autopsy.api import diagnose
from autopsy.model import Family

SAMPLE = Path(__file__).resolve().parents[2] / "sample_runs"


def test_fires_on_the_4_rank_straggler_sample_run() -> None:
    v = diagnose(autopsy.load_run(SAMPLE / "slow_rank_straggler_4ranks")).verdict
    assert (v.family, v.cause, v.code) == (Family.SLOW, "straggler", "SLOW002")
    assert v.ranks[0] == 2 and v.step is None  # slow from its start (docs/labels.md: slow)


def test_fires_from_per_rank_compute_time() -> None:
    n = 50  # every rank's step lasts 1.2 s; rank 1 computes for 1.1 s, the others 0.5 s
    compute = {r: jitter(n, 1.1 if r == 1 else 0.5, seed=r) for r in range(8)}
    run = timed_run({r: np.full(n, 1.2) for r in range(8)}, tags={"compute_time": compute})
    (f,) = findings(run, "SLOW002")
    assert f.ranks == (1,) and f.cause == "straggler" and f.step is None  # from the start
    assert "compute_time" in f.message


def test_fires_from_late_log_lines_with_the_onset_step() -> None:
    n = 60  # rank 3 becomes slow at step 30 (its node starts throttling)
    offsets = {r: np.where(np.arange(1, n + 1) >= 30, 0.3, 0.0) if r == 3 else np.zeros(n)
               for r in range(4)}
    run = timed_run({r: np.full(n, 0.8) for r in range(4)}, offsets=offsets)
    (f,) = findings(run, "SLOW002", last_share=0.4)
    assert f.ranks == (3,) and f.step == 30


def test_near_miss_passes_on_the_healthy_4_rank_run_and_on_jitter() -> None:
    assert all(f.code != "SLOW002" for f in
               diagnose(autopsy.load_run(SAMPLE / "ddp_healthy_4ranks")).findings)
    n = 60
    rng = np.random.default_rng(0)
    offsets = {r: 0.01 * rng.standard_normal(n) for r in range(4)}  # log-time noise
    compute = {r: jitter(n, 0.5, rel=0.1, seed=r) for r in range(4)}
    run = timed_run({r: np.full(n, 0.6) for r in range(4)}, offsets=offsets,
                    tags={"compute_time": compute})
    assert findings(run, "SLOW002") == []


def test_a_single_process_run_passes() -> None:
    assert findings(timed_run({None: jitter(40, 0.5)}), "SLOW002") == []
