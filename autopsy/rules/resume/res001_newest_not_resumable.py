"""RES001: the checkpoint a resume would pick cannot resume the run exactly."""

from __future__ import annotations

from autopsy.model.finding import Family, Finding, Severity
from autopsy.model.run import Run
from autopsy.rules.context import RuleContext
from autopsy.rules.registry import rule
from autopsy.rules.resume._audits import (
    CAUSE_OF,
    advice_to_resume,
    blocking,
    component_evidence,
    name,
    newest_resumable,
    picked,
)

#: Audit checks whose ranks name the culprits (RNG missing for those ranks).
RANKED_CHECKS = frozenset({"CKPT005"})


@rule(
    code="RES001",
    name="newest-not-resumable",
    family=Family.RESUME,
    requires=("run:checkpoints",),
    causes=("missing_optimizer_state", "scheduler_not_restored", "grad_scaler_not_restored",
            "rng_not_restored", "sampler_not_restored", "torn_checkpoint", "unsafe_pickle",
            "nonfinite_state"),
)
def newest_not_resumable(run: Run, ctx: RuleContext) -> Finding | None:
    """The newest checkpoint cannot resume the run exactly.

    What happened:
        The checkpoint a resume would pick (the highest checkpoint-N, as the HF
        Trainer's get_last_checkpoint picks it; DeepSpeed's latest tag) lacks a
        component an exact resume needs, or has one that is corrupt, unsafe or
        inconsistent with the rest (see `autopsy ckpt` and its CKPT checks). The
        finding names the components and the newest checkpoint that is resumable.
        Checkpoints of at most 256 MiB in all are also scanned for NaN/Inf values
        (cause ``nonfinite_state``: a NaN ``exp_avg_sq`` makes every resume NaN);
        larger ones only with ``autopsy ckpt --scan-values``.

    Why it happens:
        The save was interrupted (the process died or the disk filled while
        writing), only part of the state was saved (save_model instead of
        save_state, a torch.save dict without the scheduler), files were deleted
        or copied partially, or per-rank files are missing for some ranks. The HF
        Trainer then silently skips the optimizer and the scheduler when either
        file is missing, and only logs a missing RNG file at INFO.

    How to fix:
        Resume from the newest resumable checkpoint it names, or save the missing
        state from now on (trainer.save_state / accelerator.save_state, or every
        state_dict in the torch.save dict). Run `autopsy ckpt RUN_DIR` for the full
        component table.

    Evidence shown:
        One line per blocking component of the picked checkpoint: its status, its
        files and the fact that decided it; the step of the checkpoint; the ranks
        whose RNG state is missing. Only components the layout needs count (the
        HF Trainer and accelerate always save RNG per rank; a plain torch.save
        dict or DeepSpeed need not, and a missing data position is a note).
    """
    audit = picked(run)
    if audit is None or audit.resumable:
        return None
    comps = blocking(audit)
    if not comps:
        errors = [f for f in audit.findings if f.severity in (Severity.ERROR, Severity.CRITICAL)]
        if not errors:
            return None
        cause = errors[0].cause if errors[0].cause in ctx.spec.causes else "torn_checkpoint"
        lost = ", ".join(f.code for f in errors)
    else:
        first = comps[0]
        if first.status.value == "unsafe":
            cause = "unsafe_pickle"
        elif first.status.value == "corrupt" and any(f.code == "CKPT031"
                                                     for f in audit.findings):
            cause = "nonfinite_state"  # NaN/Inf values, found by the value scan
        else:
            cause = CAUSE_OF[first.name]
        lost = ", ".join(f"{c.name} ({c.status.value})" for c in comps)
    best = newest_resumable(run)
    where = name(run, audit)
    message = f"a resume from {where} would lose {lost}"
    effects = [c.effect for c in comps if c.effect]
    if effects:
        message += f"; {effects[0]}"
    message += (f". The newest resumable checkpoint is {name(run, best)}." if best is not None
                else ". No checkpoint of this run is resumable.")
    ranks = sorted({r for f in audit.findings if f.code in RANKED_CHECKS for r in f.ranks})
    return ctx.finding(
        message=message,
        severity=Severity.ERROR,
        ranks=ranks,
        confidence=0.9,
        cause=cause,
        step=audit.step,
        evidence=component_evidence(run, audit, comps),
        advice=[advice_to_resume(run, best, audit),
                "save the whole state: trainer.save_state / accelerator.save_state, or the "
                "optimizer, scheduler, scaler and RNG state_dicts in the torch.save dict"],
    )
