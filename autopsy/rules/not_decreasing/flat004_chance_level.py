"""FLAT004: the loss sits at ln(classes) or ln(vocab size): the model predicts uniformly."""

from __future__ import annotations

from autopsy.model.finding import Evidence, Family, Finding, Severity
from autopsy.model.run import Run
from autopsy.rules.context import RuleContext
from autopsy.rules.not_decreasing._flat import flat_loss
from autopsy.rules.not_decreasing.thresholds import FLAT
from autopsy.rules.registry import rule


@rule(
    code="FLAT004",
    name="chance-level",
    family=Family.NOT_DECREASING,
    causes=("chance_level",),
    requires=("loss|eval_loss",),
    thresholds=FLAT,
)
def chance_level(run: Run, ctx: RuleContext) -> Finding | None:
    """The loss is stuck at chance level, ln(number of classes).

    What happened:
        The training loss stays flat at ln(C), where C is the number of classes
        (``num_labels``) or the vocabulary size (``vocab_size``): the cross-entropy of a
        uniform guess. The model outputs the same distribution whatever the input.

    Why it happens:
        Nothing in the inputs predicts the labels as the model sees them: inputs and
        labels shuffled separately (misaligned), a wrong label mapping, inputs that are
        all padding or all the same after preprocessing, or a dead model (saturated
        activations, a collapsed head) whose output ignores the input. Gradients flow
        (otherwise FLAT002 fires) and the LR is not below the regime's range
        (otherwise FLAT003 fires), yet the loss never leaves the uniform level.

    How to fix:
        Check that inputs and labels stay aligned through the data pipeline (shuffle
        them together), print a few decoded examples with their labels, check the label
        mapping (``id2label``/``label2id``), and try overfitting a single batch: a
        model that cannot memorise 8 examples has a pipeline or model bug. Then check
        the LR.

    Evidence shown:
        The flat loss level against ln(C), with C and the config key and file it came
        from, plus the grad norm and LR when known. Fires when the loss is flat near its
        initial value (at least ``min_points`` points) and within ``chance_tol``
        (relative) of ln(C), and no earlier cause (FLAT001-FLAT003) applies. Without a
        class count in a config, it fires only on a loss that stopped changing at all
        (``min_constant_points``) within ``implied_chance_tol`` of ln(k) for a whole k,
        and says the class count is implied.
    """
    flat = flat_loss(run, ctx.thresholds)
    if flat is None or flat.cause != "chance_level" or flat.chance is None:
        return None
    c = flat.chance
    note = f"; {c.note}" if c.note else ""
    what = "classes" if c.key != "vocab_size" else "tokens in the vocabulary"
    evidence: list[Evidence] = [
        flat.loss_evidence(),
        Evidence(
            summary=(f"ln({c.classes}) = {c.level:.4g} for {c.key}={c.classes}{note}; the loss "
                     f"is {c.deviation:.1%} from it" if c.key != "implied" else
                     f"the loss is {c.deviation:.2%} from ln({c.classes}) = {c.level:.4g}: "
                     f"chance level over {c.classes} classes ({c.note})"),
            source=c.source, key=c.key,
            numbers={"classes": c.classes, "ln_classes": c.level, "deviation": c.deviation},
        ),
    ]
    for extra in (flat.grad_evidence(), flat.lr_evidence()):
        if extra is not None:
            evidence.append(extra)
    return ctx.finding(
        message=f"The loss stays at {flat.level:.4g} (steps {flat.first_step}-"
                f"{flat.last_step}), which is ln({c.classes}) = {c.level:.4g} for "
                f"{c.classes} {what}: the model predicts the uniform distribution, as if "
                f"the labels did not depend on the inputs.",
        severity=Severity.ERROR,
        confidence=0.6 + 0.3 * (1 - c.deviation / max(float(ctx["chance_tol"]), 1e-12)),
        cause="chance_level",
        step=flat.first_step,
        evidence=evidence,
        advice=(
            "Check that inputs and labels stay aligned (shuffled together, same order after "
            "filtering) and print a few decoded examples with their labels.",
            "Check the label mapping (id2label / label2id) and that the inputs are not all "
            "padding or identical after preprocessing.",
            "Try to overfit one small batch; if the loss still sits at chance, look for a "
            "model bug (a detached or dead head). Then check the LR against the regime.",
        ),
    )
