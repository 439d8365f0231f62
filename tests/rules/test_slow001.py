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
    # starved from its first step: no step began it (docs/labels.md: slow, else null)
    assert (v.family, v.cause, v.code, v.step) == (Family.SLOW, "data_starvation", "SLOW001", None)
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


def test_fires_on_a_loader_that_stalls_every_few_steps() -> None:
    # the median step waits for nothing, but every 8th step waits 6 s for its batch (the
    # workers cannot keep up): most of the time is spent waiting (LeRobot's data_s/updt_s)
    n = 64
    data = np.full(n, 0.001)
    data[7::8] = 6.0
    run = timed_run({None: jitter(n, 0.3) + data}, tags={"data_time": {None: data},
                                                         "compute_time": {None: jitter(n, 0.3)}})
    (f,) = findings(run, "SLOW001")
    assert f.severity is Severity.ERROR and f.cause == "data_starvation"


def test_near_miss_passes_on_one_slow_batch_in_a_long_run() -> None:
    n = 400  # one 6 s wait over 400 steps of 0.3 s: 5% of the time
    data = np.full(n, 0.001)
    data[200] = 6.0
    run = timed_run({None: jitter(n, 0.3) + data}, tags={"data_time": {None: data},
                                                         "compute_time": {None: jitter(n, 0.3)}})
    assert findings(run, "SLOW001") == []


def test_fires_on_one_averaged_line_of_a_starved_paddle_run(tmp_path: Path) -> None:
    # PaddleDetection prints an averaged batch_cost/data_cost at each epoch start; a log of
    # one such line mid-run has no warm-up to leave out
    (tmp_path / "train.log").write_text(
        "[12/22 16:25:45] ppdet.engine INFO: Epoch: [18] [0/4] learning_rate: 0.000713 loss: "
        "1.525035 loss_cls: 0.844636 eta: 0:35:24 batch_cost: 8.5667 data_cost: 7.8027 ips: "
        "2.8015 images/s\n")
    v = diagnose(autopsy.load_run(tmp_path)).verdict
    assert (v.family, v.cause) == (Family.SLOW, "data_starvation")


def test_near_miss_the_first_prefetch_of_a_log_stepped_from_an_epoch_passes() -> None:
    """A 1-based epoch log (``Epoch: [1] [0/1412]`` is step 1412, samudra#231): its first
    line waits 9.3 s of an 18.7 s step for the first prefetch, then nothing. The warm-up
    skip cannot tell step 1412 is a launch's first; the summed share leaves it out."""
    from runs import synthetic_run

    steps = [1412, 1413, 1414, 1415, 1416]
    run = synthetic_run({"step_time": [18.672, 0.645, 0.646, 0.645, 0.647],
                         "data_wait_time": [9.3, 0.0, 0.0, 0.0, 0.0],
                         "loss": [1.46, 1.45, 1.44, 1.43, 1.42]}, steps=steps)
    assert findings(run, "SLOW001") == []
