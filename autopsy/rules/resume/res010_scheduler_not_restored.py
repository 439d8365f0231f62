"""RES010: after a resume the LR schedule started over or jumped: the scheduler was lost."""

from __future__ import annotations

import math

from autopsy.model.finding import Evidence, Family, Finding, Severity
from autopsy.model.run import Run
from autopsy.rules.context import RuleContext
from autopsy.rules.registry import rule
from autopsy.rules.resume._boundary import (
    confidence,
    launch_config,
    part_check,
    restored_note,
    resumes,
)
from autopsy.rules.resume.thresholds import RES010
from autopsy.signals.resume import Boundary, lr_break, sides


def _lr_changed_on_purpose(run: Run, b: Boundary) -> bool:
    """Whether the two launches logged different configured learning rates."""
    before, after = launch_config(run, b, "learning_rate")
    if isinstance(before, bool) or not isinstance(before, (int, float)):
        return False
    if isinstance(after, bool) or not isinstance(after, (int, float)):
        return False
    return not math.isclose(float(before), float(after), rel_tol=1e-6)


@rule(
    code="RES010",
    name="scheduler-not-restored",
    family=Family.RESUME,
    causes=("scheduler_not_restored",),
    requires=("learning_rate",),
    thresholds=RES010,
)
def scheduler_not_restored(run: Run, ctx: RuleContext) -> Finding | None:
    """After a resume the LR warm-up started again or the LR jumped.

    What happened:
        At a restart of the run (a new segment), the learning rate the resumed
        launch used is not the one the previous launch had at the same step: the
        warm-up starts again from a small LR (a fresh scheduler counting from 0),
        or the LR is off by more than ``max_lr_change`` (for instance back at the
        peak while it had decayed). The previous launch's pre-crash tail, which
        overlaps the resumed steps, is the reference; between its logged points
        the LR is interpolated. When the run's checkpoints were audited, the
        finding says whether the checkpoint resumed from (the newest audited at or
        before the step before the resume) has a scheduler state.

    Why it happens:
        The checkpoint has no scheduler state (a torch.save dict without
        ``scheduler.state_dict()``, a weights-only save, an HF checkpoint whose
        scheduler.pt is missing: the Trainer then silently builds a new one), or
        the resume script builds a new scheduler and never loads the saved one.
        A warm-up repeated in the middle of training wastes steps; an LR back at
        its peak late in training can undo the decay or make the run diverge.

    How to fix:
        Save ``scheduler.state_dict()`` with every checkpoint and call
        ``scheduler.load_state_dict(...)`` after building it on resume (HF:
        keep scheduler.pt; ``resume_from_checkpoint`` loads it). If the state is
        lost, rebuild the scheduler with ``last_epoch`` set to the resume step
        (or step it that many times) before training on.

    Evidence shown:
        The resume step; the LR the previous launch had there and the resumed
        launch's LR (their ratio), the warm-up's climb when it started again;
        the checkpoint's scheduler component and its status, when audited. A
        planned restart inside one launch (cosine with warm restarts) is no
        boundary and is not reported, nor is an LR changed on purpose at the
        relaunch (the two launches logged different configured learning rates).
    """
    for b in resumes(run, ctx):
        prev, new = sides(run, b, "learning_rate")
        br = lr_break(prev, new, b.resume_step)
        if br is None:
            continue
        limit = float(ctx["max_lr_change"])
        jumped = not (1 - limit <= br.ratio <= 1 + limit)
        if not (br.warmup_again or jumped) or _lr_changed_on_purpose(run, b):
            continue
        check = part_check(run, b, "scheduler")
        what = ("the LR warm-up started again" if br.warmup_again
                else f"the LR jumped {br.ratio:.3g}x")
        climb = (f", climbing to {br.climb_to:.4g} over {br.climb} steps"
                 if br.warmup_again else "")
        evidence = [Evidence(
            f"step {br.step}: LR {br.expected:.4g} before the restart, "
            f"{br.got:.4g} after it{climb}",
            tag="learning_rate", steps=(b.resume_step, br.step + br.climb),
            numbers={"resume_step": b.resume_step, "lr_before": br.expected,
                     "lr_after": br.got, "ratio": br.ratio, "climb_steps": br.climb})]
        if check is not None:
            evidence.append(check.evidence)
        return ctx.finding(
            message=f"the run resumed at step {b.resume_step} and {what}: LR {br.got:.4g} at "
                    f"step {br.step} where the previous launch had {br.expected:.4g}"
                    + restored_note(check, "scheduler state"),
            severity=Severity.ERROR,
            confidence=confidence(float(ctx["confidence"]), check),
            cause="scheduler_not_restored",
            step=b.resume_step,
            evidence=evidence,
            advice=["save scheduler.state_dict() in every checkpoint and load it after "
                    "building the scheduler on resume",
                    f"to go on from this state, rebuild the scheduler at step "
                    f"{b.resume_step - 1} (last_epoch={b.resume_step - 1}) instead of from 0"],
        )
    return None
