"""RES011 optimizer-state-lost: a loss jump right after a resume that decays back."""

from __future__ import annotations

import math

from resume_runs import SAMPLE_RUNS, audit, finding, loss_curve, schedule, segmented_run

import autopsy
from autopsy.api import diagnose

BEFORE, AFTER = range(1, 56), range(51, 121)


def _jump(height: float, tau: float = 4.0, start: int = 52) -> dict[int, float]:
    """The first launch's loss plus a jump at ``start`` that decays with time constant tau."""
    base = loss_curve(AFTER)  # the same batches at the same steps: an exact replay
    return {s: v + (height * math.exp(-(s - start) / tau) if s >= start else 0.0)
            for s, v in base.items()}


def _resumed(loss_after: dict[int, float], lr_after: dict[int, float] | None = None,
             **kw: object) -> autopsy.Run:
    return segmented_run([
        {"loss": loss_curve(BEFORE), "learning_rate": {s: schedule(s) for s in BEFORE}},
        {"loss": loss_after, "learning_rate": lr_after or {s: schedule(s) for s in AFTER}},
    ], **kw)  # type: ignore[arg-type]


def test_fires_on_a_jump_that_decays() -> None:
    f = finding(_resumed(_jump(1.5)), "RES011")
    assert f is not None and f.cause == "missing_optimizer_state" and f.step == 51
    assert f.evidence[0].numbers["ratio"] > 1.5
    assert "same steps" in f.evidence[0].summary


def test_fires_against_the_level_before_when_there_is_no_overlap() -> None:
    before = range(1, 51)  # the first launch stopped at its checkpoint: nothing replayed
    run = segmented_run([
        {"loss": loss_curve(before)},
        {"loss": _jump(1.5), "epoch": {s: s / 100 for s in AFTER}},
    ])
    f = finding(run, "RES011")
    assert f is not None and "last losses before the resume" in f.evidence[0].summary


def test_audit_missing_optimizer_raises_confidence() -> None:
    plain = finding(_resumed(_jump(1.5)), "RES011")
    audited = finding(_resumed(_jump(1.5), checkpoints=[audit(50, missing=["optimizer"])]),
                      "RES011")
    assert plain is not None and audited is not None
    assert audited.confidence > plain.confidence
    assert "checkpoint-50 has no optimizer state" in audited.message


def test_fires_on_the_real_sample_run_with_its_audit() -> None:
    run = autopsy.load_run(SAMPLE_RUNS / "resume_optimizer_lost")
    v = diagnose(run).verdict
    assert (v.code, v.cause, v.step) == ("RES011", "missing_optimizer_state", 61)


def test_near_miss_passes_on_a_blip_within_noise() -> None:
    blip = loss_curve(AFTER)
    blip[53] += 0.5  # one bad batch: a median of three does not see it
    blip[56] += 0.03  # and a bump within the noise
    assert finding(_resumed(blip), "RES011") is None


def test_near_miss_passes_on_a_jump_that_stays() -> None:
    stays = {s: v + (1.5 if s >= 52 else 0.0) for s, v in loss_curve(AFTER).items()}
    assert finding(_resumed(stays), "RES011") is None


def test_near_miss_passes_on_the_real_healthy_resume() -> None:
    assert finding(autopsy.load_run(SAMPLE_RUNS / "resumed_after_stop"), "RES011") is None


def test_near_miss_passes_on_the_other_real_resumes() -> None:
    for name in ("resume_scheduler_not_restored", "resume_data_position_lost"):
        assert finding(autopsy.load_run(SAMPLE_RUNS / name), "RES011") is None, name
