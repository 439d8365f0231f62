"""RES010 scheduler-not-restored: the LR warm-up again (or an LR jump) at a resume."""

from __future__ import annotations

import math
from pathlib import Path

from resume_runs import SAMPLE_RUNS, audit, finding, loss_curve, schedule, segmented_run

import autopsy
from autopsy.api import diagnose
from autopsy.model import ConfigValue


def _resumed(lr_after: dict[int, float], total: int = 200, **kw: object) -> autopsy.Run:
    before = range(1, 56)  # the first launch died after step 55; checkpoint-50
    after = range(51, 121)
    return segmented_run([
        {"learning_rate": {s: schedule(s, total=total) for s in before},
         "loss": loss_curve(before)},
        {"learning_rate": lr_after, "loss": loss_curve(after, seed=1)},
    ], **kw)  # type: ignore[arg-type]


def test_fires_when_the_warmup_starts_again_at_the_resume_step() -> None:
    fresh = {s: schedule(s - 50) for s in range(51, 121)}  # a new scheduler counting from 0
    f = finding(_resumed(fresh), "RES010")
    assert f is not None and f.cause == "scheduler_not_restored" and f.step == 51
    assert "warm-up started again" in f.message
    numbers = f.evidence[0].numbers
    assert numbers["lr_after"] == schedule(1)
    assert math.isclose(float(numbers["lr_before"]), schedule(51))


def test_fires_on_an_lr_back_at_its_peak_and_quotes_the_missing_scheduler() -> None:
    peak = {s: 1e-3 for s in range(51, 121)}  # constant at the peak while it had decayed
    run = _resumed(peak, total=80, checkpoints=[audit(50, missing=["scheduler"])])
    f = finding(run, "RES010")
    assert f is not None and "jumped" in f.message
    assert "checkpoint-50 has no scheduler state" in f.message
    assert any(e.key == "scheduler" and e.numbers["status"] == "missing" for e in f.evidence)


def test_fires_one_step_late_when_the_restored_lr_is_used_once() -> None:
    # a fresh scheduler built before the optimizer's state is loaded: the restored LR is used
    # for the resume step, the warm-up begins at the next one
    lr = {51: schedule(51), **{s: schedule(s - 51) for s in range(52, 121)}}
    f = finding(_resumed(lr), "RES010")
    assert f is not None and f.step == 51 and f.evidence[0].numbers["lr_after"] == schedule(1)


def test_fires_on_the_real_sample_run_with_its_audit() -> None:
    run = autopsy.load_run(SAMPLE_RUNS / "resume_scheduler_not_restored")
    v = diagnose(run).verdict
    assert (v.code, v.cause, v.step) == ("RES010", "scheduler_not_restored", 41)
    f = finding(run, "RES010")
    assert f is not None and "ckpt_step_40.pt has no scheduler state" in f.message


def test_near_miss_passes_on_an_exact_resume() -> None:
    exact = {s: schedule(s) for s in range(51, 121)}
    assert finding(_resumed(exact), "RES010") is None


def test_near_miss_passes_on_planned_warm_restarts_inside_one_launch() -> None:
    steps = range(1, 201)
    lr = {s: schedule((s - 1) % 50 + 1, total=50) for s in steps}  # cosine with restarts
    run = segmented_run([{"learning_rate": lr, "loss": loss_curve(steps)}])
    assert finding(run, "RES010") is None


def test_near_miss_passes_on_the_real_healthy_resume() -> None:
    assert finding(autopsy.load_run(SAMPLE_RUNS / "resumed_after_stop"), "RES010") is None


def test_fires_on_a_relaunch_that_went_on_in_a_new_event_file(tmp_path: Path) -> None:
    from torch.utils.tensorboard import SummaryWriter

    loss = loss_curve(range(1, 101))
    for steps, lr_of in ((range(1, 51), schedule), (range(51, 101), lambda s: schedule(s - 50))):
        writer = SummaryWriter(log_dir=str(tmp_path / "runs"))  # a relaunch: a new file
        for s in steps:
            writer.add_scalar("train/learning_rate", lr_of(s), s)
            writer.add_scalar("train/loss", loss[s], s)
        writer.close()
    run = autopsy.load_run(tmp_path)
    assert len(run.segments()) == 1  # the steps never went back
    f = finding(run, "RES010")
    assert f is not None and f.step == 51 and "warm-up started again" in f.message


def test_near_miss_passes_on_the_other_real_resumes() -> None:
    for name in ("resume_optimizer_lost", "resume_data_position_lost"):
        assert finding(autopsy.load_run(SAMPLE_RUNS / name), "RES010") is None, name


def test_fires_on_the_real_hf_trainer_resume_without_scheduler_pt() -> None:
    run = autopsy.load_run(SAMPLE_RUNS / "resume_hf_scheduler_missing")
    v = diagnose(run).verdict
    assert (v.code, v.cause, v.step) == ("RES010", "scheduler_not_restored", 21)
    f = finding(run, "RES010")
    assert f is not None and "checkpoint-20 has no scheduler state" in f.message


def test_near_miss_passes_on_an_lr_lowered_on_purpose_at_the_relaunch() -> None:
    halved = {s: schedule(s) / 2 for s in range(51, 121)}  # restarted with lr 5e-4
    run = _resumed(halved)
    assert finding(run, "RES010") is not None  # without the configs: a discontinuity
    run.config.add(ConfigValue("learning_rate", 1e-3, "runs/events.0"))  # each launch's args
    run.config.add(ConfigValue("learning_rate", 5e-4, "runs/events.1"))
    assert finding(run, "RES010") is None
