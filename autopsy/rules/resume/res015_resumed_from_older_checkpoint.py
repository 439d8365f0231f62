"""RES015: a resume came from an older checkpoint than the newest one the run had saved."""

from __future__ import annotations

import math
from dataclasses import dataclass

import pandas as pd

from autopsy.ckpt.layouts import step_in_path
from autopsy.model.finding import Evidence, Family, Finding, Severity
from autopsy.model.run import Run
from autopsy.rules.context import RuleContext
from autopsy.rules.registry import rule
from autopsy.rules.resume._audits import audits, check_findings, name
from autopsy.rules.resume._boundary import resumes
from autopsy.rules.resume.res002_torn_checkpoint import INTEGRITY_CHECKS
from autopsy.rules.resume.thresholds import RES015
from autopsy.signals.resume import Boundary, new_side


@dataclass(frozen=True)
class Newer:
    """A checkpoint newer than the one resumed from, that existed when the run resumed."""

    step: int
    where: str
    torn: bool
    how: str


def _from_audits(run: Run, b: Boundary, src: int, new_last: int) -> list[Newer]:
    out = []
    for a in audits(run):
        if a.step is None or not src < a.step <= b.previous_last:
            continue
        torn = bool(check_findings(a, INTEGRITY_CHECKS))  # damaged, as RES002 counts it
        if torn:
            out.append(Newer(a.step, name(run, a), True, "damaged (see RES002)"))
        elif new_last < a.step:
            out.append(Newer(a.step, name(run, a), False,
                             f"on disk; the resumed launch stopped at step {new_last}, so "
                             "the previous one wrote it"))
    return out


def _from_events(run: Run, b: Boundary, src: int, resumed_at: float) -> list[Newer]:
    ev = run.events
    if ev.empty:
        return []
    out = []
    for row in ev[ev["kind"].astype(str) == "checkpoint_saved"].itertuples(index=False):
        details = row.details if isinstance(row.details, dict) else {}
        step = step_in_path(str(details.get("path", "")))
        if step is None:
            step = None if pd.isna(row.step) else int(row.step)
        if step is None or not src < step <= b.previous_last:
            continue
        wall = float(row.wall_time) if not pd.isna(row.wall_time) else math.nan
        if not (math.isfinite(wall) and math.isfinite(resumed_at)) or wall >= resumed_at:
            continue  # saved by the resumed launch, or no telling which launch saved it
        out.append(Newer(step, str(details.get("path") or f"step {step}"), False,
                         f"saved at {row.source}:{row.line}, before the resume"))
    return out


@rule(
    code="RES015",
    name="resumed-from-older-checkpoint",
    family=Family.RESUME,
    causes=("torn_checkpoint", "resumed_from_older_checkpoint"),
    thresholds=RES015,
)
def resumed_from_older_checkpoint(run: Run, ctx: RuleContext) -> Finding | None:
    """A resume came from an older checkpoint than the newest the run had saved.

    What happened:
        A launch resumed at step N + 1 (from a checkpoint of step N) while the
        previous launch had already saved a newer checkpoint, up to where it
        died: the steps between were trained again, work lost. The newer
        checkpoint is known from the audit (a checkpoint between N and the
        previous launch's last step that the resumed launch cannot have written:
        it never got that far, or the file is damaged) or from a
        ``checkpoint_saved`` line the previous launch logged before the resume.
        Cause ``torn_checkpoint`` when the newer checkpoint is damaged (the
        resume avoided it; RES002 reports the damage itself), else
        ``resumed_from_older_checkpoint``.

    Why it happens:
        The newest checkpoint was torn by the crash (killed while saving), so
        the resume script, or a person, picked an older one; a resume path was
        hard-coded (``resume_from_checkpoint=checkpoint-500``) instead of the
        newest; or a checkpoint sync had not finished.

    How to fix:
        Resume from the newest intact checkpoint (HF: resume_from_checkpoint=True
        picks the newest). Write checkpoints to a temporary name and rename them
        when complete, so a crash cannot leave a torn newest one.

    Evidence shown:
        The resume step and the checkpoint it came from; each newer checkpoint,
        how it is known and whether it is damaged; the steps lost. A warning:
        the run went on correctly, at the cost of those steps.
    """
    for b in resumes(run, ctx):
        src = b.resume_step - 1
        resumed_at, new_last = new_side(run, b)
        newer = _from_audits(run, b, src, new_last) + _from_events(run, b, src, resumed_at)
        if not newer:
            continue
        newest = max(newer, key=lambda n: n.step)
        lost = newest.step - src
        torn = [n for n in newer if n.torn]
        cause = "torn_checkpoint" if newest.torn else "resumed_from_older_checkpoint"
        evidence = [Evidence(f"the launch from step {b.resume_step} resumed from step {src}; "
                             f"the previous launch ran to step {b.previous_last}",
                             steps=(src, b.previous_last),
                             numbers={"resume_step": b.resume_step, "resumed_from": src,
                                      "previous_last": b.previous_last})]
        evidence += [Evidence(f"{n.where} (step {n.step}): {n.how}", source=n.where,
                              numbers={"step": n.step, "torn": n.torn}) for n in newer]
        why = (f"the newer {newest.where} (step {newest.step}) is damaged" if torn
               and newest.torn else f"{newest.where} (step {newest.step}) was newer")
        return ctx.finding(
            message=f"the run resumed at step {b.resume_step} from the checkpoint of step "
                    f"{src}, but {why}: {lost} step(s) of work were lost and trained again",
            severity=Severity.WARNING,
            confidence=float(ctx["confidence"]),
            cause=cause,
            step=b.resume_step,
            evidence=evidence,
            advice=["resume from the newest intact checkpoint (HF: "
                    "resume_from_checkpoint=True picks it)",
                    "write checkpoints to a temporary name and rename them when complete"],
        )
    return None
