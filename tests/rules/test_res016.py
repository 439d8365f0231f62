"""RES016 checkpoint-load-failed: the exception that ended the run came from loading the
checkpoint to resume from. The tracebacks are raised by torch itself and printed as
Python prints them."""

from __future__ import annotations

import traceback
from pathlib import Path

import pytest
import torch

import autopsy
from autopsy.api import diagnose
from autopsy.model import Family


def _log_of(exc_raiser, tmp_path: Path) -> Path:
    try:
        exc_raiser()
    except Exception:
        text = traceback.format_exc()
    else:  # pragma: no cover - the fixture must raise
        raise AssertionError("expected an exception")
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    (run_dir / "train.log").write_text(
        "{'loss': 2.1, 'learning_rate': 5e-05, 'epoch': 0.5}\n"
        "Resuming training from checkpoint-500\n" + text)
    return run_dir


def _missing_keys() -> None:
    saved = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.Linear(4, 2)).state_dict()
    torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.ReLU(), torch.nn.Linear(4, 2)
                        ).load_state_dict(saved)


def _optimizer_groups() -> None:
    a = torch.nn.Linear(4, 4)
    b = torch.nn.Linear(4, 2)
    saved = torch.optim.AdamW(a.parameters()).state_dict()
    torch.optim.AdamW(list(a.parameters()) + list(b.parameters())).load_state_dict(saved)


def _torn(tmp_path: Path) -> None:
    path = tmp_path / "optimizer.pt"
    torch.save({"w": torch.zeros(1000)}, path)
    path.write_bytes(path.read_bytes()[:600])
    torch.load(path, weights_only=True)


@pytest.mark.parametrize(("raiser", "cause"), [
    (_missing_keys, "state_dict_mismatch"),
    (_optimizer_groups, "optimizer_group_mismatch"),
])
def test_fires_on_torch_load_errors(raiser, cause: str, tmp_path: Path) -> None:
    d = diagnose(autopsy.load_run(_log_of(raiser, tmp_path)))
    assert (d.verdict.code, d.verdict.family, d.verdict.cause) == ("RES016", Family.RESUME,
                                                                    cause)
    assert not [f for f in d.findings if f.family is Family.CRASH]


def test_fires_on_a_torn_checkpoint_file(tmp_path: Path) -> None:
    d = diagnose(autopsy.load_run(_log_of(lambda: _torn(tmp_path), tmp_path)))
    assert (d.verdict.code, d.verdict.cause) == ("RES016", "torn_checkpoint")


def test_near_miss_passes_on_a_plain_exception(tmp_path: Path) -> None:
    def boom() -> None:
        raise KeyError("input_ids")

    d = diagnose(autopsy.load_run(_log_of(boom, tmp_path)))
    assert not [f for f in d.findings if f.code == "RES016"]
    assert d.verdict.code == "CRASH001"


def test_the_step_is_the_one_the_checkpoints_path_names(tmp_path: Path) -> None:
    """transformers' own ``ValueError`` for a folder it cannot resume from names the
    checkpoint: its step is where the run was to continue (docs/labels.md, resume)."""
    def hf_missing() -> None:
        resume_from_checkpoint = str(tmp_path / "outputs" / "checkpoint-32500")
        raise ValueError(f"Can't find a valid checkpoint at {resume_from_checkpoint}")

    v = diagnose(autopsy.load_run(_log_of(hf_missing, tmp_path))).verdict
    assert (v.code, v.cause, v.step) == ("RES016", "load_error", 32500)


def test_checkpoint_step_reads_the_usual_names() -> None:
    from autopsy.ckpt.layouts import step_in_path as checkpoint_step

    assert checkpoint_step("ckpts/global_step1200/mp_rank_00_model_states.pt") == 1200
    assert checkpoint_step("checkpoints/iter_0000500/mp_rank_00/model_optim_rng.pt") == 500
    assert checkpoint_step("lightning_logs/version_0/epoch=3-step=1200.ckpt") == 1200
    assert checkpoint_step("Missing key(s) in state_dict: \"0.weight\"") is None
    assert checkpoint_step("checkpoint-" + "9" * 5000) is None  # no step, no int() error
