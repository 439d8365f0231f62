"""FLAT002: the loss is flat and the grad norm is zero: nothing is being trained."""

from __future__ import annotations

from autopsy.model.finding import Evidence, Family, Finding, Severity
from autopsy.model.run import Run
from autopsy.rules.context import RuleContext
from autopsy.rules.not_decreasing._flat import FLAT_THRESHOLDS, flat_loss
from autopsy.rules.registry import rule


@rule(
    code="FLAT002",
    name="frozen-params",
    family=Family.NOT_DECREASING,
    causes=("frozen_params",),
    requires=("loss", "grad_norm"),
    thresholds=FLAT_THRESHOLDS,
)
def frozen_params(run: Run, ctx: RuleContext) -> Finding | None:
    """The loss is flat and the gradient norm is zero: no parameter is trained.

    What happened:
        The training loss stays near its initial value, varying from batch to batch
        as the data changes, while the logged gradient norm is zero (or vanishingly
        small) throughout. The loss depends on the data but no weight receives a
        gradient.

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
        unless the loss is constant to ``const_rel`` (then FLAT001 explains it).
    """
    flat = flat_loss(run, ctx.thresholds)
    if flat is None or flat.cause != "frozen_params" or flat.grad is None:
        return None
    evidence: list[Evidence] = [flat.loss_evidence()]
    grad = flat.grad_evidence()
    if grad is not None:
        evidence.append(grad)
    g = flat.grad
    exact = g.max == 0.0
    return ctx.finding(
        message=f"The loss stays flat at {flat.level:.4g} (steps {flat.first_step}-"
                f"{flat.last_step}) while the grad norm is "
                f"{'exactly 0' if exact else f'at most {g.max:.3g}'}: no parameter is "
                f"receiving a gradient, so nothing is trained.",
        severity=Severity.ERROR,
        confidence=0.9 if exact else 0.8,
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
