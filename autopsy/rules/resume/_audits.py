"""Shared helpers of the resume rules: the audits in ``run.checkpoints`` and their evidence."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from autopsy.ckpt.components import CheckpointAudit, Component, Status
from autopsy.model.finding import Evidence, Finding
from autopsy.model.run import Run

#: The cause a blocking component names, in the order they are reported.
CAUSE_OF: dict[str, str] = {
    "weights": "torn_checkpoint",
    "optimizer": "missing_optimizer_state",
    "scheduler": "scheduler_not_restored",
    "grad_scaler": "grad_scaler_not_restored",
    "rng": "rng_not_restored",
    "data_position": "sampler_not_restored",
    "trainer_state": "torn_checkpoint",
    "training_args": "torn_checkpoint",
}


def audits(run: Run) -> list[CheckpointAudit]:
    """The checkpoint audits of the run, oldest first (the last is the one a resume picks)."""
    return [a for a in run.checkpoints if isinstance(a, CheckpointAudit)]


def picked(run: Run) -> CheckpointAudit | None:
    """The checkpoint a resume would pick, or None when the run has none."""
    found = audits(run)
    return found[-1] if found else None


def newest_resumable(run: Run) -> CheckpointAudit | None:
    """The newest checkpoint that is resumable, or None."""
    return next((a for a in reversed(audits(run)) if a.resumable), None)


def name(run: Run, audit: CheckpointAudit) -> str:
    """The checkpoint's path relative to the run root."""
    try:
        rel = Path(audit.path).resolve().relative_to(Path(run.root).resolve()).as_posix()
    except (ValueError, OSError):
        return Path(audit.path).name
    return rel if rel not in ("", ".") else Path(audit.path).name


def blocking(audit: CheckpointAudit, statuses: frozenset[Status] | None = None
             ) -> list[Component]:
    """The components that stop an exact resume (optionally only those with ``statuses``)."""
    return [c for c in audit.components
            if c.blocking and (statuses is None or c.status in statuses)]


def component_evidence(run: Run, audit: CheckpointAudit, comps: list[Component]
                       ) -> list[Evidence]:
    """One evidence line per component: its status, files and first evidence line."""
    out = []
    where = name(run, audit)
    for c in comps:
        detail = f": {c.evidence[-1]}" if c.evidence else ""
        if not detail and c.status is Status.MISSING and c.files:
            detail = f": {', '.join(c.files[:3])} not found"
        files = ", ".join(c.files[:3])
        out.append(Evidence(f"{where}: {c.name} {c.status.value}{detail}",
                            source=f"{where}/{c.files[0]}" if c.files else where,
                            key=c.name, numbers={"status": c.status.value, "files": files}))
    return out


def check_findings(audit: CheckpointAudit, codes: frozenset[str]) -> list[Finding]:
    """The audit's findings whose check code is in ``codes``."""
    return [f for f in audit.findings if f.code in codes]


def advice_to_resume(run: Run, best: CheckpointAudit | None, bad: Any) -> str:
    """``resume from checkpoint-N, the newest complete one`` (or that there is none)."""
    if best is None:
        return "no checkpoint of this run is resumable: an exact resume is not possible"
    if best is bad:
        return f"resume from {name(run, best)}"
    return f"resume from {name(run, best)}, the newest complete one"
