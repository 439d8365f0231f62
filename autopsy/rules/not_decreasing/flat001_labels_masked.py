"""FLAT001: the loss is 0 (or constant) with zero gradients: every label is masked."""

from __future__ import annotations

from autopsy.model.finding import Evidence, Family, Finding, Severity
from autopsy.model.run import Run
from autopsy.rules.context import RuleContext
from autopsy.rules.not_decreasing._flat import flat_loss
from autopsy.rules.not_decreasing.thresholds import FLAT
from autopsy.rules.registry import rule


@rule(
    code="FLAT001",
    name="labels-masked",
    family=Family.NOT_DECREASING,
    causes=("labels_masked",),
    requires=("loss",),
    thresholds=FLAT,
)
def labels_masked(run: Run, ctx: RuleContext) -> Finding | None:
    """The loss is exactly 0 (or constant to many digits) and nothing is learned.

    What happened:
        The training loss is 0 at every logged point, or the same number to about six
        significant digits from batch to batch, and the gradients are zero (grad norm
        0 when it is logged). The model received no training signal at all.

    Why it happens:
        Every label of every batch is the ignore index (-100), or the targets are
        empty, so the loss has no term to average: a completion-only collator (TRL's
        ``DataCollatorForCompletionOnlyLM``) that never finds its response template
        masks the whole sequence; a tokenizer change breaks that template; labels are
        not passed to the model at all; or truncation cuts off every answer. Some HF
        Trainer versions log such a NaN loss as 0 (``logging_nan_inf_filter``) with a
        NaN grad norm: that run is a NaN run whose root is the masking, and NAN007
        reports it.

    How to fix:
        Inspect one collated batch: ``(batch["labels"] != -100).sum()`` must be
        positive. Check that the response template tokenizes the same inside the full
        text as alone (pass it as token ids), that ``labels`` reach the model, and that
        ``max_length`` leaves room for the answer.

    Evidence shown:
        The loss level and its spread over the window, and the grad norm (median, max,
        non-finite points) when logged. Fires only when the loss is flat near its
        initial value (at least ``min_points`` points) and either ``|loss| <= zero_loss``
        everywhere, or its spread is at most ``const_rel`` of its level with a grad
        norm at most ``zero_grad_norm`` (or not logged).
    """
    flat = flat_loss(run, ctx.thresholds)
    if flat is None or flat.cause != "labels_masked":
        return None
    if flat.zero and flat.grad is not None and flat.grad.n == 0:
        return None  # a loss of 0 with no finite grad norm is a NaN run: NAN007's
    evidence: list[Evidence] = [flat.loss_evidence()]
    grad = flat.grad_evidence()
    if grad is not None:
        evidence.append(grad)
    what = "exactly 0" if flat.zero else f"constant at {flat.level:.6g}"
    severity = Severity.ERROR
    if flat.grad is None:
        grads, confidence = "grad norm not logged", 0.6 if flat.zero else 0.45
    elif flat.grad.n == 0:
        grads, confidence = "grad norm not finite (a NaN loss logged as 0)", 0.75
        severity = Severity.CRITICAL  # a NaN run: this outranks the bare "grad norm is NaN"
    else:
        grads, confidence = f"grad norm {flat.grad.median:.3g}", 0.9 if flat.zero else 0.7
    return ctx.finding(
        message=f"The loss is {what} at all {flat.n} points (steps {flat.first_step}-"
                f"{flat.last_step}) with {grads}: no label contributes to the loss, most "
                f"likely every label is masked (-100) or the targets are empty.",
        severity=severity,
        confidence=confidence,
        cause="labels_masked",
        step=flat.first_step,
        evidence=evidence,
        advice=(
            "Check one collated batch: (batch['labels'] != -100).sum() must be > 0.",
            "With a completion-only collator (DataCollatorForCompletionOnlyLM), check that "
            "the response template is found in the tokenized text (pass it as token ids); "
            "if it is not, every label becomes -100.",
            "Check that `labels` are passed to the model and that max_length does not "
            "truncate every answer away.",
        ),
    )
