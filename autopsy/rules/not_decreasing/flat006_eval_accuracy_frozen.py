"""FLAT006: the eval accuracy never moved from its first value: constant predictions."""

from __future__ import annotations

import numpy as np

from autopsy.model.finding import Evidence, Family, Finding, Severity
from autopsy.model.run import Run
from autopsy.rules.context import RuleContext
from autopsy.rules.not_decreasing.thresholds import FLAT006
from autopsy.rules.registry import rule


@rule(
    code="FLAT006",
    name="eval-accuracy-frozen",
    family=Family.NOT_DECREASING,
    causes=("chance_level",),
    requires=("eval_accuracy|eval_loss",),
    thresholds=FLAT006,
)
def eval_accuracy_frozen(run: Run, ctx: RuleContext) -> Finding | None:
    """The eval accuracy is the same at nearly every evaluation: the model predicts one class.

    What happened:
        Of at least ``min_evals`` evaluations, ``frozen_share`` or more give exactly the
        accuracy of the first one (within ``frozen_rel``), below ``max_accuracy``: the
        model's predictions on the eval set never changed from the first evaluation on,
        whatever the training loss did. That is what a model that outputs the same class
        for every input scores (the majority class's share of the eval set), the
        practitioner's "validation accuracy stuck at the same value". Without an eval
        accuracy, an eval loss frozen the same way says the same (the predictions, hence
        the loss on the same eval set, never changed; no upper bound applies to it).

    Why it happens:
        The model collapsed to the majority class: class imbalance with an unweighted
        loss, a learning rate so high that the output layer saturated in the first steps
        (dead ReLUs, a softmax stuck at one class), labels that do not match the inputs
        (a shuffled or constant label column, masks of background only), or an eval
        pipeline that feeds the same input (a preprocessing bug) every time. A training
        loss that falls meanwhile is the model fitting the class prior, not the task.

    How to fix:
        Check the class balance of the training and eval sets and weight the loss or
        resample; check that labels line up with inputs (plot a few); lower the learning
        rate; look at the eval predictions (a confusion matrix: one column full).

    Evidence shown:
        The frozen eval accuracy, how many evaluations gave it, and the training loss
        over the same evaluations where it was logged.
    """
    tag = "eval_accuracy" if not run.series("eval_accuracy").empty else "eval_loss"
    what = tag.replace("_", " ")
    acc = run.series(tag).sort_index()
    values = acc.to_numpy(dtype=float)
    keep = np.isfinite(values)
    values, steps = values[keep], acc.index.to_numpy()[keep]
    n = len(values)
    if n < int(ctx["min_evals"]):
        return None
    first = float(values[0])
    if not 0 < first or (tag == "eval_accuracy" and not first < ctx["max_accuracy"]):
        return None
    same = np.abs(values - first) <= ctx["frozen_rel"] * abs(first)
    if same.sum() < ctx["frozen_share"] * n:
        return None
    evidence = [Evidence(
        summary=f"{what} {first:.6g} at {int(same.sum())} of {n} evaluations (steps "
                f"{int(steps[0])}-{int(steps[-1])}), from the first one on",
        tag=tag, steps=(int(steps[0]), int(steps[-1])),
        numbers={"accuracy" if tag == "eval_accuracy" else "eval_loss": first,
                 "frozen": int(same.sum()), "evals": n})]
    loss = run.series("loss").sort_index()
    lv = loss.to_numpy(dtype=float)
    if len(lv) >= 2 and np.isfinite(lv[[0, -1]]).all():
        evidence.append(Evidence(
            summary=f"training loss {lv[0]:.4g} -> {lv[-1]:.4g} meanwhile (the model fits "
                    "the class prior, not the task)" if lv[-1] < lv[0] else
                    f"training loss {lv[0]:.4g} -> {lv[-1]:.4g} meanwhile",
            tag="loss", steps=(int(loss.index[0]), int(loss.index[-1])),
            numbers={"first": float(lv[0]), "last": float(lv[-1])}))
    return ctx.finding(
        message=f"The {what} is {first:.4g} at {int(same.sum())} of {n} evaluations, "
                f"the first one's value: the model's predictions on the eval set never "
                f"changed, as when it outputs the majority class for every input.",
        severity=Severity.ERROR, confidence=0.55 + 0.05 * min(6, n - int(ctx["min_evals"])),
        cause="chance_level", step=int(steps[0]), evidence=evidence,
        advice=["check the class balance of the training and eval sets; weight the loss "
                "(class_weight) or resample",
                "check that labels line up with inputs (plot a few samples with their "
                "labels)",
                "look at the eval predictions: a confusion matrix whose predictions all fall "
                "in one class",
                "lower the learning rate if the output layer saturated early"],
    )
