"""FLAT007: with no loss logged, the accuracy sits at chance, 1/k, from start to end."""

from __future__ import annotations

import numpy as np

from autopsy.model.finding import Evidence, Family, Finding, Severity
from autopsy.model.run import Run
from autopsy.rules.context import RuleContext
from autopsy.rules.not_decreasing._flat import thirds
from autopsy.rules.not_decreasing.thresholds import FLAT007
from autopsy.rules.registry import rule

#: The losses whose presence leaves the run to the loss rules (FLAT001-FLAT005, HLT001).
_LOSSES = ("loss", "eval_loss", "perplexity", "eval_perplexity")


@rule(
    code="FLAT007",
    name="accuracy-at-chance",
    family=Family.NOT_DECREASING,
    causes=("chance_level",),
    requires=("accuracy|eval_accuracy",),
    thresholds=FLAT007,
)
def accuracy_at_chance(run: Run, ctx: RuleContext) -> Finding | None:
    """With no loss logged, the accuracy stays at the chance level of k classes.

    What happened:
        The run logged an accuracy and no loss (an MXNet Speedometer prints only
        ``accuracy=``), and over at least ``min_points`` points its median lies within
        ``chance_rel_tol`` of 1/k for a whole k from 2 to ``max_classes`` (the config's
        ``num_labels``/``num_classes`` when it gives one), and it did not rise (the last
        third's median at most ``flat_abs`` above the first third's). The eval accuracy,
        when logged, must be at the same chance level. The model guesses.

    Why it happens:
        Nothing in the inputs reaches the labels as the model sees them: inputs and labels
        shuffled apart, a broken data pipeline, a dead network (saturated activations), a
        learning rate far too high or too low, or a multi-device setup that does not apply
        the updates (mxnet#4395: MNIST on two GPUs at 10% for 19 epochs).

    How to fix:
        Train on one device first; overfit a single batch; check that labels line up with
        inputs; try a smaller and a larger learning rate; log the loss too.

    Evidence shown:
        The accuracy's median against 1/k, its first and last thirds, and the eval accuracy.
    """
    if any(not run.series(t).empty for t in _LOSSES):
        return None
    tag = "accuracy" if not run.series("accuracy").empty else "eval_accuracy"
    acc = run.series(tag).sort_index()
    values = acc.to_numpy(dtype=float)
    values = values[np.isfinite(values)]
    if len(values) < int(ctx["min_points"]):
        return None
    top = 100.0 if float(values.max()) > 1.0 else 1.0
    unit = values / top
    median = float(np.median(unit))
    k = _chance_k(run, median, ctx)
    if k is None:
        return None
    first, last = thirds(unit)
    if last - first > float(ctx["flat_abs"]):
        return None
    evidence = [Evidence(
        summary=f"{tag.replace('_', ' ')} median {median * top:.4g} over {len(values)} points "
                f"(first third {first * top:.4g}, last third {last * top:.4g}); chance over "
                f"{k} classes is {top / k:.4g}",
        tag=tag, steps=(int(acc.index[0]), int(acc.index[-1])),
        numbers={"median": median, "chance": 1 / k, "classes": k, "points": len(values)})]
    if tag == "accuracy":
        ev = run.series("eval_accuracy").to_numpy(dtype=float)
        ev = ev[np.isfinite(ev)] / top
        if ev.size:
            ev_median = float(np.median(ev))
            if abs(ev_median - 1 / k) > float(ctx["chance_rel_tol"]) / k:
                return None  # the eval accuracy is not at chance: the model learned
            evidence.append(Evidence(
                summary=f"eval accuracy median {ev_median * top:.4g} over {ev.size} "
                        "evaluations: at chance too",
                tag="eval_accuracy", numbers={"median": ev_median, "evals": int(ev.size)}))
    return ctx.finding(
        message=f"The {tag.replace('_', ' ')} stays at {median * top:.4g}, chance over {k} "
                f"classes, from the first logged point to the last: the model guesses.",
        severity=Severity.ERROR, confidence=0.6, cause="chance_level",
        step=int(acc.index[0]), evidence=evidence,
        advice=["train on one device first and overfit a single batch: a model that cannot "
                "has a pipeline or model bug",
                "check that labels line up with inputs (print a few decoded samples)",
                "try a 10x smaller and a 10x larger learning rate; log the loss as well"],
    )


def _chance_k(run: Run, median: float, ctx: RuleContext) -> int | None:
    """The k whose 1/k the median accuracy sits at: the config's class count, else the
    whole k from 2 to ``max_classes`` nearest it (relative to 1/k)."""
    tol = float(ctx["chance_rel_tol"])
    for key in ("num_labels", "num_classes"):
        v = run.config.get(key)
        if isinstance(v, int) and not isinstance(v, bool) and v >= 2:
            return v if abs(median - 1 / v) <= tol / v else None
    k = min(range(2, int(ctx["max_classes"]) + 1), key=lambda c: abs(median * c - 1))
    return k if abs(median - 1 / k) <= tol / k else None
