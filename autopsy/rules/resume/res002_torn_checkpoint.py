"""RES002: a checkpoint of the run is torn or damaged."""

from __future__ import annotations

from autopsy.model.finding import Evidence, Family, Finding, Severity
from autopsy.model.run import Run
from autopsy.rules.context import RuleContext
from autopsy.rules.registry import rule
from autopsy.rules.resume._audits import (
    advice_to_resume,
    audits,
    check_findings,
    name,
    newest_resumable,
)

#: The audit checks that mean damaged files.
INTEGRITY_CHECKS = frozenset({"CKPT007", "CKPT020", "CKPT021"})


@rule(
    code="RES002",
    name="torn-checkpoint",
    family=Family.RESUME,
    requires=("run:checkpoints",),
    causes=("torn_checkpoint",),
)
def torn_checkpoint(run: Run, ctx: RuleContext) -> Finding | None:
    """A checkpoint of the run is torn or damaged.

    What happened:
        At least one checkpoint has a file that is zero-length, shorter than its
        own header or zip directory says, names tensor storages that are absent,
        is invalid JSON, or is a Trainer folder without trainer_state.json (the
        Trainer writes it last); or a sharded index names a file that does not
        exist.

    Why it happens:
        The process was killed while saving (a preemption, an OOM kill, a
        timeout), the disk filled up, or a copy or sync of the run directory
        stopped half-way.

    How to fix:
        Do not resume from the damaged checkpoints; resume from the newest intact
        one it names. Save to a temporary name and rename when done, and keep at
        least two checkpoints (save_total_limit >= 2).

    Evidence shown:
        Each damaged file with what is wrong with it (from the checkpoint audit),
        for every damaged checkpoint, newest first. `autopsy analyze` reads the
        checkpoints from the one a resume picks back to the newest resumable one;
        `autopsy ckpt RUN_DIR` reads them all.
    """
    damaged = [(a, check_findings(a, INTEGRITY_CHECKS)) for a in reversed(audits(run))]
    damaged = [(a, found) for a, found in damaged if found]
    if not damaged:
        return None
    evidence = [Evidence(f"{name(run, a)}: {f.message}", source=name(run, a), key=f.code)
                for a, found in damaged for f in found][:12]
    newest, _ = damaged[0]
    best = newest_resumable(run)
    names = ", ".join(name(run, a) for a, _ in damaged)
    return ctx.finding(
        message=f"{len(damaged)} checkpoint(s) damaged: {names}",
        severity=Severity.WARNING,
        confidence=0.95,
        cause="torn_checkpoint",
        step=newest.step,
        evidence=evidence,
        advice=[advice_to_resume(run, best, None),
                "write checkpoints to a temporary name and rename them when complete"],
    )
