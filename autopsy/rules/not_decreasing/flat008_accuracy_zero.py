"""FLAT008: a training accuracy that is 0 at every logged point beside a loss that does not
fall: the model never gets a prediction right."""

from __future__ import annotations

import re

import numpy as np

from autopsy.model.finding import Evidence, Family, Finding, Severity
from autopsy.model.run import Run
from autopsy.rules.context import RuleContext
from autopsy.rules.not_decreasing._flat import thirds
from autopsy.rules.not_decreasing.thresholds import FLAT008
from autopsy.rules.registry import rule

#: Tags read as an accuracy: the canonical ones and raw names such as ``mlm_acc``,
#: ``train_top_k_accuracy_5`` or ``acc_top1`` (an eval/val/test prefix counts too).
_ACCURACY = re.compile(r"(?:^|[_/])(?:acc|accuracy|top_?1|top_?5)(?:$|[_/@])")
#: The losses whose fall clears the run (the accuracy is then a metric that does not fit).
_LOSSES = ("loss", "eval_loss")


def _accuracy_tags(run: Run) -> list[str]:
    """The run's accuracy-like tags, canonical ones first."""
    tags = sorted(set(run.scalars["tag"].unique())) if len(run.scalars) else []
    found = [t for t in tags if _ACCURACY.search(str(t).lower())]
    return sorted(found, key=lambda t: (t not in ("accuracy", "eval_accuracy"), t))


@rule(
    code="FLAT008",
    name="accuracy-zero",
    family=Family.NOT_DECREASING,
    causes=("chance_level",),
    thresholds=FLAT008,
)
def accuracy_zero(run: Run, ctx: RuleContext) -> Finding | None:
    """The model never gets a prediction right: its accuracy is 0 at every logged point.

    What happened:
        An accuracy (``accuracy``, ``mlm_acc``, ``train_top_k_accuracy_5``, ...) was
        logged at least ``min_points`` times and was 0 (at most ``zero_accuracy``) every
        time, while the loss, when logged, fell by at most ``max_loss_drop`` and no other
        accuracy the run logs rose. A model that learns anything gets the most frequent
        class or token right within a few logging intervals; one that scores 0 throughout
        is at (or below) chance and is not learning.

    Why it happens:
        The same causes as a loss stuck at chance: a learning rate far too high (the
        weights saturate) or too low, a broken data pipeline or labels that do not line up
        with the inputs, a pretrained checkpoint that was not loaded, a multi-device setup
        that does not apply the updates. Also, when the loss is not logged, an accuracy
        that does not fit the task (check that it is computed on classes).

    How to fix:
        Overfit one small batch: a model that cannot is broken in its data or code. Check
        that labels line up with inputs (decode a few samples), that the pretrained weights
        loaded (no missing-key warnings), and try a 10x smaller learning rate.

    Evidence shown:
        The accuracy that stays at 0 (points, steps), the loss's first and last thirds, and
        the other accuracies.
    """
    zero, top = float(ctx["zero_accuracy"]), int(ctx["min_points"])
    stuck: tuple[str, int, int, int] | None = None
    others: list[str] = []
    for tag in _accuracy_tags(run):
        series = run.series(tag).sort_index()
        values = series.to_numpy(dtype=float)
        finite = np.isfinite(values)
        values, steps = values[finite], series.index.to_numpy()[finite]
        if values.size == 0:
            continue
        if values.size >= top and float(np.abs(values).max()) <= zero:
            if stuck is None or int(steps[0]) < stuck[2]:  # the earliest zero run speaks
                stuck = (tag, int(values.size), int(steps[0]), int(steps[-1]))
            continue
        first, last = thirds(values / (100.0 if float(values.max()) > 1.0 else 1.0))
        if values.size >= 2 and last > first + 0.02:
            return None  # another accuracy rises: the model learns; the zero is a metric
        others.append(f"{tag} {first:.3g} -> {last:.3g}")
    if stuck is None:
        return None
    tag, n, first_step, last_step = stuck
    evidence = [Evidence(
        summary=f"{tag} is 0 at all {n} logged points (steps {first_step}-{last_step})",
        tag=tag, steps=(first_step, last_step), numbers={"points": n})]
    for loss_tag in _LOSSES:
        loss = run.series(loss_tag).to_numpy(dtype=float)
        loss = loss[np.isfinite(loss)]
        if loss.size < 2:
            continue
        first, last = thirds(loss)
        if first > 0 and (first - last) / first > float(ctx["max_loss_drop"]):
            return None  # the loss falls: the model learns, the accuracy does not fit
        evidence.append(Evidence(
            summary=f"{loss_tag.replace('_', ' ')} {first:.4g} (first third) -> {last:.4g} "
                    f"(last third): not falling",
            tag=loss_tag, numbers={"first": first, "last": last}))
    if others:
        evidence.append(Evidence(summary="other accuracies, first -> last third: "
                                 + "; ".join(others[:4])))
    return ctx.finding(
        message=f"The {tag} is 0 at every one of its {n} logged points "
                f"(steps {first_step}-{last_step}): the model never gets a prediction right "
                "and is not learning.",
        severity=Severity.ERROR, confidence=0.6, cause="chance_level",
        step=first_step, evidence=evidence,
        advice=["overfit a single small batch: a model that cannot has a data or code bug",
                "check that labels line up with inputs (decode a few samples) and that the "
                "pretrained weights loaded (no missing-key warnings)",
                "try a 10x smaller learning rate; log the loss beside the accuracy"],
    )
