"""FLAT003: the loss is flat with healthy gradients and an LR below the regime's range."""

from __future__ import annotations

import math

from autopsy.model.finding import Evidence, Family, Finding, Severity
from autopsy.model.run import Run
from autopsy.rules.context import RuleContext
from autopsy.rules.not_decreasing._flat import flat_loss
from autopsy.rules.not_decreasing.thresholds import FLAT
from autopsy.rules.registry import rule


@rule(
    code="FLAT003",
    name="lr-too-low",
    family=Family.NOT_DECREASING,
    causes=("lr_too_low",),
    requires=("loss", "learning_rate|config:learning_rate"),
    thresholds=FLAT,
)
def lr_too_low(run: Run, ctx: RuleContext) -> Finding | None:
    """The loss is flat because the learning rate is too low for the regime.

    What happened:
        The training loss stays near its initial value while the gradients are
        healthy (a non-zero grad norm), and the peak learning rate is below the range
        usually used for this kind of run. The optimizer moves the weights too little
        to change the loss.

    Why it happens:
        An LR meant for another regime (a full fine-tuning LR on a LoRA adapter, a
        pre-training LR scaled down twice), a typo in the exponent, or a warm-up longer
        than the run so the LR never reaches its peak. The regime comes from the run's
        config: ``finetune_mode=lora`` (an adapter_config.json) is LoRA (typically
        1e-4..3e-4); an SGD optimizer is SGD (typically 1e-3..1e-1); otherwise full
        fine-tuning with Adam (typically 1e-5..5e-5; a pre-training run from scratch
        typically uses 1e-4..1e-3).

    How to fix:
        Raise the peak LR into the regime's range (e.g. ``learning_rate=2e-5`` for full
        fine-tuning, ``2e-4`` for LoRA), keeping a short warm-up, and check that the
        warm-up ends well before the run does.

    Evidence shown:
        The flat loss, the grad norm (when logged), the peak LR (the largest logged
        ``learning_rate``, else the config value, with its source) against the regime's
        range and how the regime was decided. Fires when the loss is flat near its
        initial value, the grad norm is not zero (FLAT002) and the peak LR is below the
        regime's low end (``lora_lr_low``, ``sgd_lr_low`` or ``full_lr_low``). Also,
        however few points the loss has (``min_constant_points`` at least), when the logged
        LR is 0 at every point from the run's start (within ``late_start_intervals``
        logging intervals of step 0) and the loss did not fall by ``max_initial_drop``:
        nothing can be learned with an LR of 0.
    """
    flat = flat_loss(run, ctx.thresholds)
    if flat is None or flat.cause != "lr_too_low" or flat.lr is None:
        return None
    r, lr = flat.regime, flat.lr
    evidence: list[Evidence] = [flat.loss_evidence()]
    for extra in (flat.grad_evidence(), flat.lr_evidence()):
        if extra is not None:
            evidence.append(extra)
    factor = r.low / lr.value if lr.value > 0 else math.inf
    confidence = min(0.9, 0.6 + 0.15 * math.log10(max(factor, 1.0)))
    grads = "with non-zero gradients"
    if flat.grad is None:
        confidence -= 0.15
        grads = "(grad norm not logged, so frozen parameters are not ruled out)"
    suggest = f"{math.sqrt(r.low * r.high):.0e}"
    low = ("the learning rate is 0 at every logged point: nothing is trained" if lr.value == 0
           else
           f"the peak LR {lr.value:.3g} is {'far ' if factor >= 10 else ''}below the "
           f"{r.label} range {r.range_text} ({r.basis})")
    return ctx.finding(
        message=f"The loss stays flat at {flat.level:.4g} (steps {flat.first_step}-"
                f"{flat.last_step}) {grads}, and {low}.",
        severity=Severity.ERROR,
        confidence=confidence,
        cause="lr_too_low",
        step=flat.first_step,
        evidence=evidence,
        advice=(
            f"Raise the peak LR from {lr.value:.3g} into the {r.label} range {r.range_text} "
            f"(e.g. learning_rate={suggest}), with warm-up of 1-5% of the steps.",
            "If the run is a pre-training run from scratch rather than a fine-tune, the usual "
            "range is 1e-4..1e-3." if r.name == "full" else
            "Check that the warm-up ends well before the run does (the LR reaches its peak).",
        ),
    )
