"""RES015 resumed-from-older-checkpoint: the newer checkpoint was torn, or passed over."""

from __future__ import annotations

import dataclasses
import shutil
from pathlib import Path

import pandas as pd
from resume_runs import SAMPLE_RUNS, audit, finding, loss_curve, segmented_run

import autopsy
from autopsy.model import empty_events
from autopsy.model.finding import Family, Finding, Severity

BEFORE, AFTER = range(1, 66), range(41, 121)  # died after 65; resumed from 40


def _torn(step: int) -> object:
    damage = Finding(code="CKPT020", name="truncated-file", family=Family.RESUME,
                     cause="torn_checkpoint", severity=Severity.ERROR, confidence=1.0,
                     title="truncated", message="model.safetensors is shorter than its header")
    return dataclasses.replace(audit(step), findings=(damage,))


def test_fires_when_the_newest_checkpoint_was_torn() -> None:
    run = segmented_run([{"loss": loss_curve(BEFORE)}, {"loss": loss_curve(AFTER)}],
                        checkpoints=[audit(40), _torn(60)])  # type: ignore[list-item]
    f = finding(run, "RES015")
    assert f is not None and f.cause == "torn_checkpoint" and f.step == 41
    assert "20 step(s) of work were lost" in f.message
    assert f.evidence[1].numbers == {"step": 60, "torn": True}


def test_fires_when_a_newer_checkpoint_was_passed_over() -> None:
    after = range(41, 56)  # the resumed launch never reached step 60 itself
    run = segmented_run([{"loss": loss_curve(BEFORE)}, {"loss": loss_curve(after)}],
                        checkpoints=[audit(40), audit(60)])
    f = finding(run, "RES015")
    assert f is not None and f.cause == "resumed_from_older_checkpoint"


def test_fires_on_a_checkpoint_saved_line_before_the_resume() -> None:
    run = segmented_run([{"loss": loss_curve(BEFORE)}, {"loss": loss_curve(AFTER)}])
    run.scalars["wall_time"] = run.scalars["segment"].astype(float) * 1000.0 + \
        run.scalars["step"].astype(float)
    row = {"rank": 0, "wall_time": 60.5, "step": 60, "kind": "checkpoint_saved",
           "message": "Saving model checkpoint to out/checkpoint-60", "source": "train.log",
           "line": 12, "details": {"path": "out/checkpoint-60"}}
    run.events = pd.concat([empty_events(), pd.DataFrame([row])], ignore_index=True)
    f = finding(run, "RES015")
    assert f is not None and "train.log:12" in f.evidence[1].summary


def test_near_miss_passes_when_the_resume_took_the_newest() -> None:
    # the new launch rewrote checkpoint-60 on its way: no sign it existed before
    run = segmented_run([{"loss": loss_curve(BEFORE)}, {"loss": loss_curve(AFTER)}],
                        checkpoints=[audit(40), audit(60), audit(80)])
    assert finding(run, "RES015") is None
    resumed_from_newest = segmented_run(
        [{"loss": loss_curve(BEFORE)}, {"loss": loss_curve(range(61, 121))}],
        checkpoints=[audit(40), audit(60)])
    assert finding(resumed_from_newest, "RES015") is None


def test_fires_on_a_real_run_whose_newer_save_was_torn(tmp_path: Path) -> None:
    # the first launch of resume_scheduler_not_restored ran to step 45; say it was killed
    # while saving step 45: a truncated torch.save file, which the resume at 41 passed over
    run_dir = tmp_path / "run"
    shutil.copytree(SAMPLE_RUNS / "resume_scheduler_not_restored", run_dir)
    import torch

    state = torch.load(run_dir / "ckpt_step_40.pt", weights_only=True)
    torch.save({**state, "step": 45}, run_dir / "ckpt_step_45.pt")
    whole = (run_dir / "ckpt_step_45.pt").read_bytes()
    (run_dir / "ckpt_step_45.pt").write_bytes(whole[: len(whole) // 2])
    f = finding(autopsy.load_run(run_dir), "RES015")
    assert f is not None and f.cause == "torn_checkpoint" and f.step == 41
    assert "ckpt_step_45.pt (step 45) is damaged: 5 step(s)" in f.message
