"""RES012: after a resume the fp16 loss scale was back at its initial value."""

from __future__ import annotations

import math

import numpy as np

from autopsy.model.finding import Evidence, Family, Finding, Severity
from autopsy.model.run import Run
from autopsy.rules.context import RuleContext
from autopsy.rules.registry import rule
from autopsy.rules.resume._boundary import confidence, part_check, restored_note, resumes
from autopsy.rules.resume.thresholds import RES012
from autopsy.signals._common import finite_xy
from autopsy.signals.resume import sides, value_at

#: Config keys that give the scaler's initial scale (``initial_scale_power``: 2**N).
INIT_KEYS = ("init_loss_scale", "initial_loss_scale", "init_scale", "loss_scale_init")
DEFAULT_INIT = 2.0**16


def initial_scale(run: Run) -> tuple[float, str]:
    """The grad scaler's initial scale: from the config when it says, else 65536."""
    for key in INIT_KEYS:
        value = run.config.get(key)
        if isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0:
            return float(value), f"config {key}"
    power = run.config.get("initial_scale_power")
    if isinstance(power, (int, float)) and not isinstance(power, bool):
        return 2.0 ** float(power), "config initial_scale_power"
    return DEFAULT_INIT, "the GradScaler default"


@rule(
    code="RES012",
    name="grad-scaler-not-restored",
    family=Family.RESUME,
    causes=("grad_scaler_not_restored",),
    requires=("loss_scale",),
    thresholds=RES012,
)
def grad_scaler_not_restored(run: Run, ctx: RuleContext) -> Finding | None:
    """After a resume the fp16 loss scale was back at its initial value.

    What happened:
        At a restart of the run, the loss scale the previous launch had reached
        (at the resume step, or its last value before it) differs by at least
        ``min_factor`` from its initial value, and the resumed launch's first
        loss scale is exactly that initial value (the config's
        ``init_loss_scale`` or DeepSpeed ``initial_scale_power``, else
        GradScaler's 65536): the grad scaler started over. When the resumed
        launch then lowered its scale again (overflow steps skipped), the
        finding is an error; otherwise a warning. Cause:
        ``grad_scaler_not_restored``.

    Why it happens:
        The checkpoint has no ``scaler.state_dict()`` (scaler.pt missing, a
        torch.save dict without it), or the resume script never loads it. A
        scaler that restarts at 65536 while the run had settled lower overflows
        and skips optimizer steps until it finds its level again; one that had
        grown higher restarts too low and can underflow small gradients.

    How to fix:
        Save ``scaler.state_dict()`` with every checkpoint and load it on resume
        (HF and accelerate save it as scaler.pt when fp16 is on).

    Evidence shown:
        The resume step; the scale before the restart and after it; the number
        of scale drops in the resumed launch's first 20 points (with drops the
        confidence is ``confidence_dropped``, else ``confidence``); the
        checkpoint's grad_scaler component and its status, when audited.
    """
    init, init_from = initial_scale(run)
    for b in resumes(run, ctx):
        prev, new = sides(run, b, "loss_scale")
        before = value_at(prev, b.resume_step)
        nx, ny = finite_xy(new)
        nx, ny = nx[nx >= b.resume_step], ny[nx >= b.resume_step]
        if before is None or ny.size == 0 or before[0] <= 0:
            continue
        first = float(ny[0])
        at_init = math.isclose(first, init, rel_tol=1e-6)
        if not at_init or abs(math.log(before[0] / init)) < math.log(float(ctx["min_factor"])):
            continue
        drops = int((np.diff(ny[:21]) < 0).sum())
        check = part_check(run, b, "grad_scaler")
        evidence = [Evidence(
            f"step {b.resume_step}: loss scale {before[0]:g} before the restart (step "
            f"{before[1]}), {first:g} after it = the initial scale ({init_from}); "
            f"{drops} drop(s) in the next 20 points",
            tag="loss_scale", steps=(b.resume_step, int(nx[min(20, nx.size - 1)])),
            numbers={"resume_step": b.resume_step, "scale_before": before[0],
                     "scale_after": first, "initial_scale": init, "drops_after": drops})]
        if check is not None:
            evidence.append(check.evidence)
        return ctx.finding(
            message=f"the run resumed at step {b.resume_step} with the fp16 loss scale back at "
                    f"its initial {first:g} (it was {before[0]:g}): the grad scaler started "
                    "over" + (f", and dropped {drops} time(s) again" if drops else "")
                    + restored_note(check, "grad scaler state"),
            severity=Severity.ERROR if drops else Severity.WARNING,
            confidence=confidence(float(ctx["confidence_dropped" if drops else "confidence"]),
                                  check),
            cause="grad_scaler_not_restored",
            step=b.resume_step,
            evidence=evidence,
            advice=["save scaler.state_dict() in every checkpoint and load it on resume"],
        )
    return None
