"""Consistency checks on real ``torch.save`` dicts: each failing, and its near miss passing."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from autopsy.ckpt import CheckpointAudit, audit_path

torch = pytest.importorskip("torch")

STEPS = 3


def _state(steps: int = STEPS, width: int = 8, optimizer: str = "adamw",
           scheduler: bool = True) -> dict[str, Any]:
    """A tiny real training loop's state, as a plain loop would torch.save it."""
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(4, width), torch.nn.ReLU(),
                                torch.nn.Linear(width, 2))
    opt = (torch.optim.AdamW(model.parameters(), lr=1e-2) if optimizer == "adamw"
           else torch.optim.SGD(model.parameters(), lr=1e-2))
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: min(1.0, (s + 1) / 3)) \
        if scheduler else None
    for _ in range(steps):
        model(torch.randn(5, 4)).sum().backward()
        opt.step()
        if sched is not None:
            sched.step()
        opt.zero_grad()
    state: dict[str, Any] = {"model": model.state_dict(), "optimizer": opt.state_dict(),
                             "step": steps, "epoch": 0}
    if sched is not None:
        state["scheduler"] = sched.state_dict()
    return state


def _audit(tmp_path: Path, edit: Callable[[dict[str, Any]], None] | None = None,
           **kwargs: Any) -> CheckpointAudit:
    state = _state(**kwargs)
    if edit is not None:
        edit(state)
    path = tmp_path / "ckpt.pt"
    torch.save(state, path)
    return audit_path(path).picked


def _codes(audit: CheckpointAudit) -> set[str]:
    return {f.code for f in audit.findings}


def _status(audit: CheckpointAudit, name: str) -> str:
    comp = audit.component(name)
    assert comp is not None
    return comp.status.value


CONSISTENCY = {"CKPT010", "CKPT011", "CKPT012", "CKPT013", "CKPT014", "CKPT015", "CKPT016"}


def test_passes_when_everything_agrees(tmp_path: Path) -> None:
    audit = _audit(tmp_path)
    assert not _codes(audit) & CONSISTENCY
    assert _status(audit, "optimizer") == _status(audit, "scheduler") == "ok"
    evidence = " ".join(audit.component("optimizer").evidence)
    assert f"Adam step count {STEPS}" in evidence and "match the shapes" in evidence
    assert audit.resumable


def test_fails_when_the_step_counter_disagrees(tmp_path: Path) -> None:
    audit = _audit(tmp_path, lambda s: s.update(step=STEPS + 7))
    assert "CKPT011" in _codes(audit)
    assert "CKPT012" not in _codes(audit)  # the scheduler agrees with the optimizer
    assert _status(audit, "optimizer") == "inconsistent" and not audit.resumable
    finding = next(f for f in audit.findings if f.code == "CKPT011")
    assert finding.evidence[0].numbers == {"optimizer_step": STEPS, "global_step": STEPS + 7}


def test_passes_with_gradient_accumulation(tmp_path: Path) -> None:
    def edit(s: dict[str, Any]) -> None:
        s["step"] = STEPS * 4  # a loop that counts micro-batches
        s["args"] = {"gradient_accumulation_steps": 4}

    assert not _codes(_audit(tmp_path, edit)) & {"CKPT011", "CKPT012"}


def test_passes_with_fp16_skipped_steps_but_needs_the_scaler(tmp_path: Path) -> None:
    def edit(s: dict[str, Any]) -> None:
        s["step"] = STEPS + 2  # two overflow steps skipped the optimizer
        s["args"] = {"fp16": True}

    audit = _audit(tmp_path, edit)
    assert not _codes(audit) & {"CKPT011", "CKPT012"}
    assert _status(audit, "grad_scaler") == "missing" and "CKPT004" in _codes(audit)


def test_fails_when_the_scheduler_counters_disagree(tmp_path: Path) -> None:
    audit = _audit(tmp_path, lambda s: s["scheduler"].update(_step_count=STEPS + 9))
    assert "CKPT012" in _codes(audit) and _status(audit, "scheduler") == "inconsistent"


def test_fails_when_the_scheduler_lr_is_not_the_optimizer_lr(tmp_path: Path) -> None:
    def edit(s: dict[str, Any]) -> None:
        s["optimizer"]["param_groups"][0]["lr"] *= 10

    audit = _audit(tmp_path, edit)
    assert "CKPT013" in _codes(audit) and _status(audit, "scheduler") == "inconsistent"
    assert "param group 0" in next(f for f in audit.findings if f.code == "CKPT013").message


def test_near_miss_lr_within_rounding_passes(tmp_path: Path) -> None:
    def edit(s: dict[str, Any]) -> None:
        s["optimizer"]["param_groups"][0]["lr"] *= 1 + 1e-9

    assert "CKPT013" not in _codes(_audit(tmp_path, edit))


def test_fails_when_the_scheduler_counts_other_param_groups(tmp_path: Path) -> None:
    audit = _audit(tmp_path, lambda s: s["scheduler"].update(base_lrs=[1e-2, 1e-3]))
    assert "CKPT013" in _codes(audit)


def test_fails_when_the_optimizer_belongs_to_another_model(tmp_path: Path) -> None:
    other = _state(width=16)["optimizer"]
    audit = _audit(tmp_path, lambda s: s.update(optimizer=other))
    assert "CKPT014" in _codes(audit) and _status(audit, "optimizer") == "inconsistent"
    finding = next(f for f in audit.findings if f.code == "CKPT014")
    assert any("16" in e.summary for e in finding.evidence)


def test_fails_when_a_moment_is_missing(tmp_path: Path) -> None:
    audit = _audit(tmp_path, lambda s: s["optimizer"]["state"][0].pop("exp_avg_sq"))
    assert "CKPT010" in _codes(audit) and _status(audit, "optimizer") == "inconsistent"


def test_fails_when_adam_has_no_state_after_steps(tmp_path: Path) -> None:
    audit = _audit(tmp_path, lambda s: s["optimizer"].update(state={}))
    assert "CKPT010" in _codes(audit)


def test_near_miss_plain_sgd_keeps_no_state(tmp_path: Path) -> None:
    audit = _audit(tmp_path, optimizer="sgd")
    assert _status(audit, "optimizer") == "ok" and "CKPT010" not in _codes(audit)


def test_no_scheduler_attached_is_not_applicable(tmp_path: Path) -> None:
    audit = _audit(tmp_path, scheduler=False)
    assert _status(audit, "scheduler") == "not_applicable" and audit.resumable
    assert "CKPT003" not in _codes(audit)


def test_scheduler_attached_but_not_saved_is_missing(tmp_path: Path) -> None:
    audit = _audit(tmp_path, lambda s: s.pop("scheduler"))
    assert _status(audit, "scheduler") == "missing" and "CKPT003" in _codes(audit)
    assert not audit.resumable
