"""NAN001: the loss or grad norm went NaN/Inf after an optimisation blow-up."""

from __future__ import annotations

from autopsy.model.finding import Family, Finding
from autopsy.model.run import Run
from autopsy.rules.context import RuleContext
from autopsy.rules.nan_inf._causes import blowup_cause
from autopsy.rules.nan_inf._event import NanEvent, classify
from autopsy.rules.nan_inf.thresholds import CAUSE, CLASSIFY
from autopsy.rules.registry import rule


def trigger(event: NanEvent) -> str:
    """How the blow-up showed: "the grad norm spiked 16× its median at step 25"."""
    assert event.blowup is not None
    sp, boom = event.blowup.spike, event.blowup.explosion
    if sp is not None:
        return f"the grad norm spiked {sp.ratio:.3g}× its rolling median at step {sp.step}"
    assert boom is not None
    return f"the loss exploded {boom[1] / boom[2]:.3g}× (to {boom[1]:.3g}) by step {boom[0]}"


@rule(
    code="NAN001",
    name="nan-after-blowup",
    family=Family.NAN_INF,
    causes=("lr_too_high", "no_warmup", "no_clipping"),
    requires=("loss|grad_norm",),
    thresholds={**CLASSIFY, **CAUSE},
)
def nan_after_blowup(run: Run, ctx: RuleContext) -> Finding | None:
    """NaN/Inf after an optimisation blow-up (grad-norm spike or loss explosion)

    What happened:
        The loss or the grad norm became NaN/Inf, and just before it (within the last
        ``lookback_points`` logged points) the grad norm spiked far above its rolling
        median, or the loss grew by orders of magnitude while still finite. The step
        reported is the first non-finite loss or grad norm; the blow-up's first spike is
        in the evidence.

    Why it happens:
        An update was too large: the weights jumped to a region with huge gradients,
        the next update was larger still, and the values overflowed. The usual reasons,
        one named as primary from the run's own numbers:
        ``lr_too_high`` when the LR at the blow-up is at (``peak_fraction`` of) the
        schedule's peak and at least ``high_lr_factor`` times the top of its regime's
        typical range (``lora_lr_high`` for LoRA, ``sgd_lr_high`` for SGD,
        ``full_lr_high`` for full fine-tuning);
        ``no_warmup`` when the run started at its full LR and blew up within
        ``early_steps`` steps; ``no_clipping`` when ``max_grad_norm`` is 0 or absent
        and the LR is not unusual. The other factors present are named too.

    How to fix:
        Lower the peak LR (the advice gives a value and the regime's usual range), add
        a warm-up of ~2% of the steps, set ``max_grad_norm=1.0``. Restart from a
        checkpoint saved before the blow-up began, not a later one.

    Evidence shown:
        The first non-finite step, the grad-norm spike (value, rolling median, ratio,
        robust score) and/or the loss explosion, the LR at the blow-up against the
        reconstructed schedule's peak, and the config entries for warm-up and clipping
        with the file they came from.
        The NaN/Inf rules share one classification of the event (the spike, explosion,
        fp16 and recovery thresholds): override those on every NAN rule alike.
    """
    event = classify(run, ctx)
    if event is None or event.kind != "blowup" or event.blowup is None:
        return None
    cause = blowup_cause(run, event.blowup.onset, ctx)
    hidden = (" The logged loss stays finite there: the NaN is hidden from it (see NAN004)."
              if event.hidden else "")
    return ctx.finding(
        message=f"Optimisation blow-up: {trigger(event)}, then the {event.label} went "
                f"{event.what} at step {event.step}. Primary cause: {cause.phrase}"
                f"{cause.also}.{hidden}",
        severity=event.severity,
        confidence=min(0.95, 0.6 + 0.15 * (event.blowup.spike is not None)
                       + 0.1 * (event.blowup.explosion is not None) + 0.1 * cause.lr_high),
        cause=cause.primary,
        step=event.step,
        evidence=[*event.evidence, *event.blowup.evidence, *cause.evidence],
        advice=cause.advice,
    )
