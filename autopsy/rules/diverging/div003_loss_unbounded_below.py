"""DIV003: the training loss goes negative and runs away by orders of magnitude."""

from __future__ import annotations

import numpy as np

from autopsy.model.finding import Evidence, Family, Finding, Severity
from autopsy.model.run import Run
from autopsy.rules.context import RuleContext
from autopsy.rules.diverging.thresholds import DIV003
from autopsy.rules.registry import rule


@rule(
    code="DIV003",
    name="loss-unbounded-below",
    family=Family.DIVERGING,
    causes=("bad_data",),
    requires=("loss",),
    thresholds=DIV003,
)
def loss_unbounded_below(run: Run, ctx: RuleContext) -> Finding | None:
    """The loss has no lower bound: it goes negative and keeps falling without end.

    What happened:
        The training loss (at least ``min_points`` finite points) ends below zero, its
        last 3 points' median at least ``ratio`` times further from zero than the first 3
        points' (that start floored at 1 in magnitude), and it fell at ``min_falling_share``
        of the steps between points or more. Optimisation is exploiting an objective with
        no minimum: the "falling" loss is a divergence, and nothing the model learns is
        useful.

    Why it happens:
        The loss is used outside its domain: a (binary) cross-entropy fed targets outside
        [0, 1] (unnormalised labels, a regression target, a mask with 255s), probabilities
        that are not probabilities (logits into a loss that expects softmax outputs), a
        Gaussian negative log-likelihood whose predicted variance collapses to zero, a
        custom loss with a sign error or a term that is unbounded below.

    How to fix:
        Check one batch's targets (range, dtype: a BCE target must be in [0, 1]) and that
        the outputs fed to the loss are what it expects (logits vs probabilities: use
        ``BCEWithLogitsLoss``/``CrossEntropyLoss`` on raw logits); clamp or parameterise a
        predicted variance (softplus plus an epsilon); check custom loss terms for a sign.

    Evidence shown:
        The loss at the start and at the end with the factor between them, and the share of
        falling steps.
    """
    loss = run.series("loss").sort_index()
    values = loss.to_numpy(dtype=float)
    finite = np.isfinite(values)
    values, steps = values[finite], loss.index.to_numpy()[finite]
    if values.size < int(ctx["min_points"]):
        return None
    k = min(3, values.size // 2)
    start, end = float(np.median(values[:k])), float(np.median(values[-k:]))
    scale = max(abs(start), 1.0)
    if end >= 0 or -end < ctx["ratio"] * scale:
        return None
    falling = float((np.diff(values) < 0).mean())
    if falling < ctx["min_falling_share"]:
        return None
    # the step the loss first went below zero for good: where the run left any bound
    below = np.flatnonzero(values >= 0)
    first = int(steps[min(below[-1] + 1, values.size - 1)]) if below.size else int(steps[0])
    factor = -end / scale
    return ctx.finding(
        message=f"The loss has no lower bound: it fell from {start:.4g} to {end:.4g} "
                f"({factor:.3g}x its starting magnitude), going down at {falling:.0%} of its "
                "steps. A loss that runs away below zero is exploiting an objective used "
                "outside its domain, not learning.",
        severity=Severity.ERROR, confidence=0.7, cause="bad_data", step=first,
        evidence=[Evidence(
            summary=f"loss {start:.4g} (first {k} points) -> {end:.4g} (last {k}), "
                    f"{factor:.3g}x; falling at {falling:.0%} of steps {int(steps[0])}-"
                    f"{int(steps[-1])}",
            tag="loss", steps=(int(steps[0]), int(steps[-1])),
            numbers={"start": start, "end": end, "factor": factor, "falling": falling})],
        advice=["check one batch's targets: a (binary) cross-entropy needs targets in [0, 1] "
                "(normalise labels, drop mask values such as 255)",
                "feed the loss what it expects: raw logits to BCEWithLogitsLoss/"
                "CrossEntropyLoss, not probabilities or the other way round",
                "a predicted variance in a Gaussian NLL needs a floor (softplus + 1e-6); check "
                "custom loss terms for a sign error"],
    )
