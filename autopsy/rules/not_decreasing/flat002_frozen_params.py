"""FLAT002: the loss is flat and the grad norm is zero: nothing is being trained."""

from __future__ import annotations

from autopsy.model.finding import Evidence, Family, Finding, Severity
from autopsy.model.run import Run
from autopsy.rules.context import RuleContext
from autopsy.rules.not_decreasing._flat import flat_loss
from autopsy.rules.not_decreasing.thresholds import FLAT
from autopsy.rules.registry import rule


@rule(
    code="FLAT002",
    name="frozen-params",
    family=Family.NOT_DECREASING,
    causes=("frozen_params",),
    requires=("loss", "grad_norm"),
    thresholds=FLAT,
)
def frozen_params(run: Run, ctx: RuleContext) -> Finding | None:
    """The loss is flat and the gradient norm is zero or tiny: (almost) nothing is trained.

    What happened:
        The training loss stays near its initial value, varying from batch to batch
        as the data changes, while the logged gradient norm is zero (or vanishingly
        small) throughout: the loss depends on the data but no weight receives a
        gradient. On weaker evidence, it also fires when the grad norm is tiny for the
        loss (a few hundredths of it) in a run that is not LoRA, with an LR that is not
        below the regime's range: only a sliver of the model is trainable (say one
        LayerNorm left unfrozen). A model whose output layer trains has a grad norm of
        typically 0.1-5× its cross-entropy loss, most of all at chance level.

    Why it happens:
        The parameters that matter have ``requires_grad=False``: the base model was
        frozen and the adapter or head was never unfrozen (or was frozen by a
        ``model.eval()``/``torch.no_grad()`` around the forward pass), the optimizer
        was built before the parameters were unfrozen, or a detach cuts the graph
        between the loss and the weights.

    How to fix:
        Count what trains: ``model.print_trainable_parameters()`` for a PEFT model, or
        ``sum(p.numel() for p in model.parameters() if p.requires_grad)``; it must not
        be 0 (nor tiny). Unfreeze before building the optimizer, and make sure the
        forward pass runs with grad enabled.

    Evidence shown:
        The flat loss (level, change, noise) and the grad norm's median and max over the
        window. Fires when the loss is flat near its initial value (at least
        ``min_points`` points) and the grad norm's median is at most ``zero_grad_norm``,
        unless the loss is constant to ``const_rel`` (then FLAT001 explains it); or,
        with lower confidence, when the median is at most ``tiny_grad_rel`` × the loss
        level, the regime is not LoRA and the LR is not below the regime's range
        (FLAT003); this comes before chance level (FLAT004).
    """
    flat = flat_loss(run, ctx.thresholds)
    if flat is None or flat.cause != "frozen_params" or flat.grad is None:
        return None
    evidence: list[Evidence] = [flat.loss_evidence()]
    grad = flat.grad_evidence()
    if grad is not None:
        evidence.append(grad)
    g = flat.grad
    zero = g.median <= float(ctx["zero_grad_norm"])
    if zero:
        exact = g.max == 0.0
        what = "exactly 0" if exact else f"at most {g.max:.3g}"
        why = "no parameter is receiving a gradient, so nothing is trained"
        confidence = 0.9 if exact else 0.8
    else:
        ratio = g.median / abs(flat.level)
        what = (f"tiny for a {flat.regime.label} ({g.median:.3g}, {ratio:.1%} of the loss; "
                f"a trainable model's is rarely below {float(ctx['tiny_grad_rel']):.0%})")
        why = ("only a sliver of the model is receiving gradients, and the LR "
               f"({flat.lr.value:.3g}) is in range" if flat.lr is not None else
               "only a sliver of the model is receiving gradients")
        confidence = 0.55
    return ctx.finding(
        message=f"The loss stays flat at {flat.level:.4g} (steps {flat.first_step}-"
                f"{flat.last_step}) while the grad norm is {what}: {why}.",
        severity=Severity.ERROR,
        confidence=confidence,
        cause="frozen_params",
        step=flat.first_step,
        evidence=evidence,
        advice=(
            "Print what trains: model.print_trainable_parameters() (PEFT) or "
            "sum(p.numel() for p in model.parameters() if p.requires_grad); it must not be 0.",
            "Unfreeze the parameters (requires_grad=True) before building the optimizer, and "
            "run the forward pass outside torch.no_grad().",
        ),
    )
