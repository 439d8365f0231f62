"""NAN007: the grad norm is NaN from the start while the loss is logged as 0: every label
is masked, and the loss is 0/0."""

from __future__ import annotations

import numpy as np

from autopsy.model.finding import Evidence, Family, Finding, Severity
from autopsy.model.run import Run
from autopsy.rules.context import RuleContext
from autopsy.rules.nan_inf.thresholds import NAN007
from autopsy.rules.registry import rule


@rule(
    code="NAN007",
    name="nan-from-masked-labels",
    family=Family.NAN_INF,
    causes=("labels_masked",),
    requires=("loss", "grad_norm"),
    thresholds=NAN007,
)
def nan_from_masked_labels(run: Run, ctx: RuleContext) -> Finding | None:
    """The grad norm is NaN/Inf from the first step while the loss is logged as 0.

    What happened:
        Every logged point has a loss within ``zero_loss`` of 0 and a non-finite grad
        norm, from the first logged step on (at least ``min_points`` points): the run
        never had a finite gradient. The loss is a mean over zero label tokens, 0/0,
        which is NaN; some HF Trainer versions log that NaN loss as 0
        (``logging_nan_inf_filter``) beside the NaN grad norm. It is a NaN run whose root
        is the masking (the labelling guide's ``nan_inf`` / ``labels_masked``), not a
        blow-up and not a loss that merely fails to decrease (FLAT001 leaves it here).

    Why it happens:
        Every label of every batch is the ignore index (-100): a completion-only
        collator that never finds its response template, a tokenizer change that breaks
        the template, labels never passed to the model, or truncation that cuts off
        every answer.

    How to fix:
        Inspect one collated batch: ``(batch["labels"] != -100).sum()`` must be
        positive. Pass the response template as token ids; check that ``labels`` reach
        the model and that ``max_length`` leaves room for the answer.

    Evidence shown:
        The loss and grad norm over the logged steps.
    """
    loss = run.series("loss").sort_index()
    grad = run.series("grad_norm").sort_index()
    if len(loss) < ctx["min_points"] or len(grad) < ctx["min_points"]:
        return None
    lv, gv = loss.to_numpy(dtype=float), grad.to_numpy(dtype=float)
    if np.isfinite(gv).any() or not (np.isfinite(lv) & (np.abs(lv) <= ctx["zero_loss"])).all():
        return None
    first, last = int(min(loss.index[0], grad.index[0])), int(max(loss.index[-1], grad.index[-1]))
    return ctx.finding(
        message=f"The grad norm is NaN/Inf at all {len(gv)} logged points while the loss is "
                f"logged as 0 (steps {first}-{last}): no label contributes to the loss, so it "
                f"is 0/0 and the run never had a finite gradient; most likely every label is "
                f"masked (-100).",
        severity=Severity.CRITICAL, confidence=0.8, cause="labels_masked", step=first,
        evidence=[Evidence(summary=f"loss 0 at all {len(lv)} points, grad norm non-finite at "
                                   f"all {len(gv)} points", tag="grad_norm", steps=(first, last),
                           numbers={"loss_points": len(lv), "grad_points": len(gv)})],
        advice=["Check one collated batch: (batch['labels'] != -100).sum() must be > 0.",
                "With a completion-only collator (DataCollatorForCompletionOnlyLM), pass the "
                "response template as token ids and check it is found in the tokenized text.",
                "Check that labels reach the model and that max_length leaves room for the "
                "answer."],
    )
