"""RES004: the newest checkpoint's states disagree with each other."""

from __future__ import annotations

from autopsy.model.finding import Evidence, Family, Finding, Severity
from autopsy.model.run import Run
from autopsy.rules.context import RuleContext
from autopsy.rules.registry import rule
from autopsy.rules.resume._audits import (
    advice_to_resume,
    check_findings,
    name,
    newest_resumable,
    picked,
)

#: The audit checks that compare states (step counts, LR, shapes, world size).
CONSISTENCY_CHECKS = frozenset({"CKPT010", "CKPT011", "CKPT012", "CKPT013", "CKPT014",
                                "CKPT015", "CKPT016"})


@rule(
    code="RES004",
    name="inconsistent-checkpoint",
    family=Family.RESUME,
    requires=("run:checkpoints",),
    causes=("missing_optimizer_state", "step_mismatch", "lr_mismatch",
            "optimizer_model_mismatch", "world_size_mismatch"),
)
def inconsistent_checkpoint(run: Run, ctx: RuleContext) -> Finding | None:
    """The newest checkpoint's states disagree with each other.

    What happened:
        In the checkpoint a resume would pick, the optimizer's step count, the
        scheduler's last_epoch, trainer_state's global_step and the folder's N do
        not agree (allowing for gradient accumulation and fp16 skipped steps); or
        the scheduler's LR is not the optimizer's param_group lr; or the optimizer
        moments do not match the weights' shapes or do not cover every parameter;
        or the files disagree on the world size.

    Why it happens:
        Files from different saves or runs were mixed in one folder (a copy over
        an older checkpoint, a manual fix-up), the optimizer was rebuilt with other
        parameter groups, or the model changed between save and resume.

    How to fix:
        Resume from a checkpoint whose files were written together (the finding
        names the newest resumable one); never mix files of different saves.

    Evidence shown:
        Each disagreement the audit found (CKPT010..CKPT016), with the numbers
        compared.
    """
    audit = picked(run)
    if audit is None:
        return None
    found = check_findings(audit, CONSISTENCY_CHECKS)
    if not found:
        return None
    where = name(run, audit)
    best = newest_resumable(run)
    cause = found[0].cause if found[0].cause in ctx.spec.causes else "step_mismatch"
    return ctx.finding(
        message=f"{where}: " + "; ".join(f.message for f in found[:3]),
        severity=Severity.WARNING,
        confidence=0.85,
        cause=cause,
        step=audit.step,
        evidence=[Evidence(f"{where}: {f.message}", source=where, key=f.code,
                           numbers=dict(f.evidence[0].numbers) if f.evidence else {})
                  for f in found[:12]],
        advice=[advice_to_resume(run, best, audit)],
    )
