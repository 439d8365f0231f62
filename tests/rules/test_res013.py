"""RES013 data-position-lost: the step counter, the epoch or the batches started over."""

from __future__ import annotations

import numpy as np
from resume_runs import SAMPLE_RUNS, audit, finding, loss_curve, segmented_run

import autopsy
from autopsy.api import diagnose

W = np.random.default_rng(7).standard_normal(400)


def _loss(steps: range, level: float, offset: int) -> dict[int, float]:
    """A falling loss whose wiggle at step s is the batch's: W[s - offset]."""
    return {s: level - s / 400 + 0.05 * W[s - offset] for s in steps}


def test_fires_when_the_same_batches_come_again() -> None:
    before, after = range(1, 66), range(61, 141)
    run = segmented_run([
        {"loss": _loss(before, 2.0, 1)},
        {"loss": _loss(after, 1.8, 61)},  # resumed at 61, fed batches 0, 1, 2 ... again
    ], checkpoints=[audit(60, missing=["data_position"])])
    f = finding(run, "RES013")
    assert f is not None and f.cause == "sampler_not_restored" and f.step == 61
    assert "same batches again" in f.message
    assert f.evidence[0].numbers["correlation_from_start"] > 0.8
    assert any(e.key == "data_position" for e in f.evidence)


def test_fires_when_the_epoch_goes_back() -> None:
    before, after = range(1, 66), range(61, 141)
    run = segmented_run([
        {"loss": loss_curve(before), "epoch": {s: s / 25 for s in before}},
        {"loss": loss_curve(after), "epoch": {s: (s - 60) / 25 for s in after}},
    ])
    f = finding(run, "RES013")
    assert f is not None and f.cause == "sampler_not_restored"
    assert f.evidence[0].numbers["epoch_before"] == 61 / 25
    assert "the epoch went back from 2.44 to 0.04" in f.message


def test_fires_when_the_step_counter_restarts_with_the_weights_restored() -> None:
    run = segmented_run([
        {"loss": loss_curve(range(1, 201))},
        {"loss": {s: v - 1.0 for s, v in loss_curve(range(1, 101), seed=3).items()}},
    ])
    f = finding(run, "RES013")
    assert f is not None and f.cause == "sampler_not_restored" and f.step == 1
    assert "step counter restarted" in f.message


def test_a_run_started_over_from_scratch_is_a_warning() -> None:
    run = segmented_run([
        {"loss": loss_curve(range(1, 201))},
        {"loss": loss_curve(range(1, 101), seed=3)},
    ])
    f = finding(run, "RES013")
    assert f is not None and f.cause == "checkpoint_not_loaded"
    assert f.severity.value == "warning"


def test_near_miss_passes_when_the_loss_had_not_fallen_before_the_restart() -> None:
    # two experiments pasted one after the other (OpenNMT-py#877: steps 50-150 on 1 GPU,
    # then 50-150 on 8): the first one's loss did not fall, so the lower loss after the
    # restart says nothing about restored weights
    run = segmented_run([
        {"loss": {50: 10.11, 100: 11.13, 150: 8.78}},
        {"loss": {50: 9.36, 100: 8.67, 150: 8.33}},
    ])
    assert finding(run, "RES013") is None


def test_near_miss_passes_on_an_exact_resume_with_its_epoch() -> None:
    before, after = range(1, 66), range(61, 141)
    run = segmented_run([
        {"loss": _loss(before, 2.0, 0), "epoch": {s: s / 25 for s in before}},
        {"loss": _loss(after, 2.0, 0), "epoch": {s: s / 25 for s in after}},
    ])
    assert finding(run, "RES013") is None


def test_near_miss_passes_quietly_on_odd_series() -> None:
    """NaN, inf, negative, single-point and zero-LR launches: no resume rule fails or fires."""
    nan, inf = float("nan"), float("inf")
    a, b = range(1, 30), range(10, 40)
    odd = [
        [{"loss": dict.fromkeys(a, 1.0), "learning_rate": dict.fromkeys(a, 1e-3)},
         {"loss": dict.fromkeys(b, nan), "learning_rate": dict.fromkeys(b, nan)}],
        [{"loss": {1: 1.0}}, {"loss": {1: 2.0}}],
        [{"loss": dict.fromkeys(a, inf), "loss_scale": dict.fromkeys(a, inf)},
         {"loss": dict.fromkeys(b, 1.0), "loss_scale": dict.fromkeys(b, 65536.0)}],
        [{"loss": {s: -1.0 - s / 100 for s in a}}, {"loss": dict.fromkeys(b, -0.5)}],
        [{"learning_rate": dict.fromkeys(a, 0.0), "epoch": dict.fromkeys(a, 0.0)},
         {"learning_rate": dict.fromkeys(b, 0.0), "epoch": dict.fromkeys(b, 5.0)}],
    ]
    for launches in odd:
        d = diagnose(segmented_run(launches, checkpoints=[audit(9), audit(20, ["optimizer"])]))
        assert not [s for s in d.skipped if s.code.startswith("RES01") and "failed" in s.reason]
        assert not [f for f in d.findings if f.code.startswith("RES01")]


def test_fires_on_the_real_sample_run() -> None:
    run = autopsy.load_run(SAMPLE_RUNS / "resume_data_position_lost")
    v = diagnose(run).verdict
    assert (v.code, v.cause, v.step) == ("RES013", "sampler_not_restored", 61)
    f = finding(run, "RES013")
    assert f is not None and {e.tag for e in f.evidence} >= {"epoch", "loss"}


def test_near_miss_passes_on_the_other_real_resumes() -> None:
    for name in ("resume_scheduler_not_restored", "resume_optimizer_lost", "resumed_after_stop"):
        assert finding(autopsy.load_run(SAMPLE_RUNS / name), "RES013") is None, name
