"""HLT003: an excerpt of a run under way whose loss is level, with nothing failed."""

from __future__ import annotations

import numpy as np

from autopsy.model.finding import Evidence, Family, Finding, Severity
from autopsy.model.run import Run
from autopsy.rules.context import RuleContext
from autopsy.rules.healthy.hlt001_loss_decreasing import judged_curve
from autopsy.rules.healthy.thresholds import HLT003
from autopsy.rules.registry import rule
from autopsy.signals.interval import logging_interval, start_in_intervals
from autopsy.signals.trend import theil_sen


@rule(
    code="HLT003",
    name="loss-level-mid-run",
    family=Family.HEALTHY,
    requires=("loss|eval_loss|perplexity|eval_perplexity|accuracy|eval_accuracy",),
    thresholds=HLT003,
)
def loss_level_mid_run(run: Run, ctx: RuleContext) -> Finding | None:
    """The log starts well into the run, and its loss is level: a plateau, nothing failed.

    What happened:
        The first logged step is at least ``min_start_intervals`` logging intervals into
        the run (the log is an excerpt, or the continuation of a run already under way),
        its loss (or, without one, the curve HLT001 would judge) is finite at every one of
        at least ``min_points`` points, and it is level: the median of its last quarter
        within ``max_rel_change`` of the median of its first, and its Theil-Sen slope not
        above zero at 95%. No log reports a failure the run did not go on past, no grad
        norm is NaN or Inf, the learning rate, where logged, is above zero and no longer
        rising (a loss level during warm-up, or under a zero learning rate, is not a
        plateau but a run that cannot move yet), an accuracy logged beside it is above
        ``min_accuracy`` of its scale, and no failure rule fired (those outrank this).
        This vouches less than HLT001: a cost the run shows (a slow finding) is the verdict
        before it (``docs/verdicts.md``). The fall of
        the loss, if there was one, happened before the first logged step; what the log
        shows is a run training at a steady level.

    Why it happens:
        Late in training the loss falls slowly, and over a few logged points it looks
        level: a run converging, or converged.

    How to fix:
        Nothing, from what the log shows. If the run should still be improving, look at
        the whole log from its first step (a stall from the start is the FLAT rules'
        to judge) and at the eval metric.

    Evidence shown:
        The curve's first and last quarter medians, its points and step range, and the
        first step against the logging interval.
    """
    tag, series, top = judged_curve(run, ctx, "a level")
    values = series.to_numpy(dtype=float)
    name = tag.replace("_", " ")
    if not np.isfinite(values).all():
        raise ctx.skip(f"the {name} is not finite throughout")
    grad = run.series("grad_norm").to_numpy(dtype=float)
    if grad.size and not np.isfinite(grad).all():
        raise ctx.skip("a grad norm is not finite")
    lr = run.series("learning_rate")
    if len(lr):
        lrs = lr.to_numpy(dtype=float)
        if not (np.nanmax(np.abs(lrs)) > 0):
            raise ctx.skip("the learning rate is 0: nothing can move the loss")
        lr_trend = theil_sen(lr) if len(lr) >= 3 else None
        if lr_trend is not None and lr_trend.low > 0:
            raise ctx.skip("the learning rate is still rising (warm-up): the loss cannot "
                           "be at its plateau yet")
    for acc_tag in ("accuracy", "eval_accuracy"):
        acc = run.series(acc_tag).to_numpy(dtype=float)
        acc = acc[np.isfinite(acc)]
        if acc.size:
            scale = 100.0 if acc.max() > 1.0 else 1.0
            if float(np.median(acc)) <= ctx["min_accuracy"] * scale:
                raise ctx.skip(f"the {acc_tag.replace('_', ' ')} is about 0 (min_accuracy): "
                               "the model gets nothing right")
    steps = series.index.to_numpy()
    start = start_in_intervals(steps)
    if start is None:
        raise ctx.skip(f"the {name} is logged at one step")
    interval = logging_interval(steps)
    first, last = int(steps[0]), int(steps[-1])
    if start < ctx["min_start_intervals"]:
        raise ctx.skip(f"the log starts at step {first}, within {ctx['min_start_intervals']} "
                       f"logging intervals of {interval:g} (min_start_intervals): its start "
                       "is shown, the FLAT rules judge a level from there")
    quarter = max(1, len(values) // 4)
    start = float(np.median(values[:quarter]))
    end = float(np.median(values[-quarter:]))
    scale = max(abs(start), abs(end))
    if scale == 0 or abs(end - start) > ctx["max_rel_change"] * scale:
        raise ctx.skip(f"the {name} is not level ({start:.4g} -> {end:.4g}; max_rel_change "
                       f"{ctx['max_rel_change']:.0%})")
    trend = theil_sen(series)
    if trend is not None and trend.low > 0:
        raise ctx.skip(f"the {name} trends up (Theil-Sen slope above zero at 95%)")
    shown = (top - start, top - end) if top else (start, end)
    return ctx.finding(
        message=f"No failure found: the log starts at step {first}, well into the run, and "
                f"its {name} is level ({shown[0]:.4g} -> {shown[1]:.4g} over steps "
                f"{first}-{last}): a run under way at a plateau.",
        severity=Severity.INFO,
        confidence=0.3,
        title="Training looks healthy (a level stretch of a run under way)",
        evidence=[Evidence(
            summary=f"{name} {shown[0]:.4g} -> {shown[1]:.4g} (first and last quarter "
                    f"medians) over {len(values)} points, steps {first}-{last}; the first "
                    f"logged step is {first / interval:.0f} logging intervals of {interval:g} "
                    "into the run",
            tag=tag, steps=(first, last),
            numbers={"start": shown[0], "end": shown[1], "points": len(values),
                     "first_step": first, "interval": interval},
        )],
    )
