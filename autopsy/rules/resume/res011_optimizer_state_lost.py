"""RES011: after a resume the loss jumped and decayed back: the optimizer state was lost."""

from __future__ import annotations

from autopsy.model.finding import Evidence, Family, Finding, Severity
from autopsy.model.run import Run
from autopsy.rules.context import RuleContext
from autopsy.rules.registry import rule
from autopsy.rules.resume._boundary import confidence, part_check, restored_note, resumes
from autopsy.rules.resume.thresholds import RES011
from autopsy.signals.resume import loss_jump, lr_break, sides


@rule(
    code="RES011",
    name="optimizer-state-lost",
    family=Family.RESUME,
    causes=("missing_optimizer_state",),
    requires=("loss",),
    thresholds=RES011,
)
def optimizer_state_lost(run: Run, ctx: RuleContext) -> Finding | None:
    """After a resume the loss jumped, then decayed back: fresh optimizer moments.

    What happened:
        Right after a restart of the run, the loss rose well above what the
        previous launch had at the same steps (its pre-crash tail overlaps the
        resumed steps) or, without overlap, above its last values before the
        resume step: at least ``min_ratio`` times, and ``min_score`` times the
        loss noise (a median of three consecutive steps, so a single blip does
        not count). Within ``window`` steps the excess fell to half or less: the
        way Adam behaves with moments rebuilt from zero, whose first updates are
        about ``lr · sign(grad)`` in every coordinate. When the run's checkpoints
        were audited, the finding says whether the checkpoint resumed from has
        an optimizer state.

    Why it happens:
        The checkpoint has no optimizer state (saved with the model only,
        optimizer.pt missing, which the HF Trainer then silently skips), or the
        resume script builds a new optimizer and never loads the saved one. The
        jump costs steps of progress; with a high LR it can also push the run
        into a worse region it does not come back from.

    How to fix:
        Save ``optimizer.state_dict()`` with every checkpoint and load it after
        building the optimizer on resume (HF: keep optimizer.pt). If it is lost,
        resume with a short LR warm-up so the moments fill before full-size
        steps.

    Evidence shown:
        The resume step, the loss before and after (its ratio and size in noise
        units), where the reference came from, how much of the excess was left
        at the end of the window; the checkpoint's optimizer component and its
        status, when audited. A jump that comes with an LR jump at the same
        restart is reported with lower confidence (the LR may explain it).
    """
    for b in resumes(run, ctx):
        prev, new = sides(run, b, "loss")
        lj = loss_jump(prev, new, b.resume_step, window=int(ctx["window"]))
        if lj is None or lj.ratio < float(ctx["min_ratio"]) or lj.score < float(ctx["min_score"]):
            continue
        if not lj.decayed:
            continue
        base = float(ctx["confidence"])
        lr_note = ""
        if run.has("learning_rate"):
            br = lr_break(*sides(run, b, "learning_rate"), b.resume_step)
            if br is not None and br.ratio > 1 + float(ctx["max_lr_change"]):
                base -= 0.25
                lr_note = f"; the LR also jumped {br.ratio:.3g}x at the restart"
        check = part_check(run, b, "optimizer")
        ref = ("the previous launch's loss at the same steps" if lj.same_steps
               else "the previous launch's last losses before the resume")
        evidence = [Evidence(
            f"steps {lj.steps[0]}-{lj.steps[1]}: loss {lj.after:.4g} after the restart vs "
            f"{lj.reference:.4g} ({ref}): {lj.ratio:.3g}x, {lj.score:.0f}x the noise; "
            f"{lj.steps[1] - lj.steps[0]} steps on, {max(lj.left, 0.0):.0%} of the excess left",
            tag="loss", steps=lj.steps,
            numbers={"resume_step": b.resume_step, "loss_before": lj.reference,
                     "loss_after": lj.after, "ratio": lj.ratio, "score": lj.score,
                     "excess_left": lj.left})]
        if check is not None:
            evidence.append(check.evidence)
        return ctx.finding(
            message=f"the run resumed at step {b.resume_step} and the loss jumped "
                    f"{lj.ratio:.3g}x ({lj.reference:.4g} -> {lj.after:.4g}), then decayed: the "
                    "optimizer's moments started from zero" + lr_note
                    + restored_note(check, "optimizer state"),
            severity=Severity.ERROR,
            confidence=confidence(base, check),
            cause="missing_optimizer_state",
            step=b.resume_step,
            evidence=evidence,
            advice=["save optimizer.state_dict() in every checkpoint and load it after "
                    "building the optimizer on resume (HF: keep optimizer.pt)",
                    "when the optimizer state is lost, resume with a short LR warm-up"],
        )
    return None
