"""The checkpoints of a run in ``autopsy analyze``: audited, summarised, not "unread"."""

from __future__ import annotations

from repo_paths import SAMPLE_RUNS

from autopsy.api import load_run
from autopsy.report.summary import run_summary


def test_a_run_lists_its_audited_checkpoints_and_what_a_resume_would_lose() -> None:
    run = load_run(SAMPLE_RUNS / "ckpt_hf_optimizer_missing")
    rows = run_summary(run)["checkpoints"]
    assert [r["path"] for r in rows] == ["checkpoint-4", "checkpoint-8"]
    assert [r["resumable"] for r in rows] == [True, False]
    assert rows[-1]["losses"] == ["optimizer (missing)"] and rows[-1]["step"] == 8
    assert not [u for u in run.unread if u.startswith("checkpoint-")]


def test_a_run_without_checkpoints_has_none() -> None:
    run = load_run(SAMPLE_RUNS / "nan_bad_batch")
    assert run_summary(run)["checkpoints"] == []


def test_small_checkpoints_are_value_scanned_in_analyze() -> None:
    """``ckpt_hf_nan_moments``: a NaN in exp_avg_sq shows only in the values."""
    from autopsy.api import diagnose

    verdict = diagnose(load_run(SAMPLE_RUNS / "ckpt_hf_nan_moments")).verdict
    assert (verdict.family.value, verdict.cause, verdict.code) == (
        "resume", "nonfinite_state", "RES001")


def test_large_checkpoints_are_not_value_scanned(monkeypatch) -> None:
    from autopsy import api

    monkeypatch.setattr(api, "ANALYZE_SCAN_BYTES", 1024)
    verdict = api.diagnose(load_run(SAMPLE_RUNS / "ckpt_hf_nan_moments")).verdict
    assert verdict.cause != "nonfinite_state"


def test_the_checkpoint_a_restart_resumed_from_is_audited_too() -> None:
    """``resume_data_position_lost`` resumed at step 61 from ``ckpt_step_60.pt``; the newest
    (``ckpt_step_120.pt``) is resumable, so the audit of the newest alone stops there."""
    run = load_run(SAMPLE_RUNS / "resume_data_position_lost")
    names = [r["path"] for r in run_summary(run)["checkpoints"]]
    assert names == ["ckpt_step_60.pt", "ckpt_step_120.pt"]  # oldest first, picked last


def test_the_run_tells_the_audit_it_trained_in_fp16() -> None:
    """``resume_grad_scaler_lost``: plain ``torch.save`` dicts without a scaler, from an fp16
    run (its config says so; the files do not): the scaler is missing, not unneeded."""
    run = load_run(SAMPLE_RUNS / "resume_grad_scaler_lost")
    rows = run_summary(run)["checkpoints"]
    assert rows and all(r["losses"] == ["grad_scaler (missing)"] for r in rows)
