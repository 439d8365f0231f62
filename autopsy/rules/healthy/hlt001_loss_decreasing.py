"""HLT001: the training loss is finite and going down."""

from __future__ import annotations

import numpy as np
import pandas as pd

from autopsy.model.finding import Evidence, Family, Finding, Severity
from autopsy.model.run import Run
from autopsy.rules.context import RuleContext
from autopsy.rules.healthy.thresholds import HLT001
from autopsy.rules.registry import rule
from autopsy.signals.ranks import went_on_past
from autopsy.signals.trend import theil_sen

#: Log events that mean the run failed, whatever its loss did.
FAILURE_EVENTS: frozenset[str] = frozenset({
    "traceback", "oom", "host_kill", "nccl_timeout", "collective_timeout",
    "collective_mismatch", "rendezvous_timeout", "child_failed", "heartbeat_stuck",
    "error_file",
})


#: The curves a run is judged on, in order (the first one logged), and how much less each
#: vouches than the training loss: an eval loss or a perplexity is a loss seen less often
#: or through exp(); an accuracy moves in steps and says less about the optimisation.
_CURVES: tuple[str, ...] = ("loss", "eval_loss", "perplexity", "eval_perplexity", "accuracy",
                            "eval_accuracy")
_CURVE_DISCOUNT: dict[str, float] = {"eval_loss": 0.1, "perplexity": 0.1,
                                     "eval_perplexity": 0.15, "accuracy": 0.2,
                                     "eval_accuracy": 0.2}


def failed_for_good(run: Run) -> bool:
    """Whether a log of the run reports a failure (:data:`FAILURE_EVENTS`) that the run did
    not go on past (a crash followed by a resume that reached later steps does not count)."""
    if run.events.empty:
        return False
    failed = run.events[run.events["kind"].astype(str).isin(FAILURE_EVENTS)]
    # per rank only its latest failure matters (a run that went on past it went on past
    # the earlier ones): one scan of the scalars per rank, not per event
    latest = failed.groupby(failed["rank"].astype("float64").fillna(-1.0))["step"].max()
    return bool(failed["step"].isna().any()) or any(
        went_on_past(run, int(step) + 1, None if rank < 0 else int(rank)) is None
        for rank, step in latest.items()
    )


def _top(acc: np.ndarray) -> float:
    """The scale of an accuracy: 100 when it is printed in percent, else 1."""
    finite = acc[np.isfinite(acc)]
    return 100.0 if finite.size and float(finite.max()) > 1.0 else 1.0


def curve(run: Run) -> tuple[str, pd.Series, float]:
    """The first of :data:`_CURVES` the run logged, as a series that falls when training
    works (an accuracy as its error: the scale, 1 or 100, minus the accuracy), and the
    scale (0 for a loss)."""
    for tag in _CURVES:
        series = run.series(tag)
        if series.empty:
            continue
        if tag.endswith("accuracy"):
            top = _top(series.to_numpy(dtype=float))
            return tag, top - series, top
        return tag, series, 0.0
    return "loss", run.series("loss"), 0.0


def judged_curve(run: Run, ctx: RuleContext, what: str) -> tuple[str, pd.Series, float]:
    """The curve a health rule judges (:func:`curve`), after the checks every health rule
    makes first: no failure the run did not go on past, and at least ``min_points`` points
    (``what`` names what they would show, for the skip's reason). Raises the rule's skip."""
    if failed_for_good(run):
        # the logs say something failed and the run did not go on past it
        raise ctx.skip("a log reports a failure the run did not go on past")
    tag, series, top = curve(run)
    if len(series) < ctx["min_points"]:
        raise ctx.skip(f"the {tag.replace('_', ' ')} has {len(series)} point(s); {what} needs "
                       f"{ctx['min_points']} (min_points)")
    return tag, series, top


def _scaler_skips(run: Run, bad: np.ndarray, after: int) -> bool:
    """Whether the non-finite loss points ``bad`` read as a loss scaler's skipped steps: an
    fp16 scaler is in use (:func:`~autopsy.rules.nan_inf._fp16.scaler_active`), no two are
    adjacent, and at least ``after`` finite points follow the last one."""
    from autopsy.rules.nan_inf._fp16 import scaler_active

    where = np.flatnonzero(bad)
    return (scaler_active(run) and not bool((np.diff(where) == 1).any())
            and int(bad.size - 1 - where[-1]) >= after)


@rule(
    code="HLT001",
    name="loss-decreasing",
    family=Family.HEALTHY,
    requires=("loss|eval_loss|perplexity|eval_perplexity|accuracy|eval_accuracy",),
    thresholds=HLT001,
)
def loss_decreasing(run: Run, ctx: RuleContext) -> Finding | None:
    """The training loss is finite throughout and fell over the run.

    What happened:
        No log of the run reports a failure (a traceback, an OOM, a timeout, a
        collective mismatch, a failed child) that the run did not go on past (a
        crash followed by a resume that reached later steps does not count), every
        logged training loss and grad norm is finite but for a
        few skipped steps (at most ``max_overflow_skips`` non-finite grad norms and losses: an
        fp16 loss scaler skips the steps whose gradients overflow while it finds its
        scale, and the HF Trainer logs their grad norm as NaN or Inf whether or not it
        logs the scale; a non-finite loss point counts as one only under a scaler, with no
        two in a row and ``min_points`` finite points after the last), and the loss at the
        end of the run
        is clearly lower than at its start. A run that logged no training loss
        at all is judged on its eval loss the same way (a Lightning run that logs
        only ``val_loss``), with less confidence; one with no loss at all on its
        perplexity, else on its accuracy's error (1 or 100 minus the accuracy: an
        MXNet Speedometer log prints only ``accuracy=``), with less still. Unless
        another rule reports a failure, this is what lets the verdict say
        "healthy" rather than "could not decide".

    Why it happens:
        Optimisation is working: the learning rate, the data and the model are
        compatible enough for the loss to go down.

    How to fix:
        Nothing to fix. Check the other findings (warnings, config notes) and the
        eval loss for overfitting.

    Evidence shown:
        The loss at the start and at the end (medians of the first and last
        quarters of the logged points), the number of points and the step range,
        and the number of overflow-skipped steps when there were some.
        It vouches only with at least ``min_points`` finite points and a relative
        drop of at least ``min_drop``. ``min_points`` is 3, the fewest on which a fall
        is more than one change between two values: real runs often log once per epoch
        (Keras, Lightning, HF ``logging_strategy="epoch"``), a handful of points each
        averaged over a whole epoch; with fewer than 8 points the start and end are the
        first and last points. ``min_drop`` (5%) is above the epoch-to-epoch noise of such
        averages and well below the fall of any run that learns. Where the first and last
        quarters fall less (a short excerpt with a noisy end point), the same 5% is
        measured on the Theil-Sen line instead, and counts only when the line's 95%
        interval for the slope lies below zero (the fall is no accident of the noise).
    """
    tag, loss, top = judged_curve(run, ctx, "a fall")
    values = loss.to_numpy(dtype=float)
    name = tag.replace("_", " ")
    bad_loss = ~np.isfinite(values)
    if bad_loss.any():
        # a loss scaler's skipped steps, logged as NaN/Inf loss points the run went on past
        if not (tag == "loss" and _scaler_skips(run, bad_loss, int(ctx["min_points"]))):
            raise ctx.skip(f"the {name} is not finite throughout")
        loss, values = loss[~bad_loss], values[~bad_loss]
    grad = run.series("grad_norm").to_numpy(dtype=float)
    bad_grads = int((~np.isfinite(grad)).sum()) + int(bad_loss.sum())
    if bad_grads > ctx["max_overflow_skips"]:
        raise ctx.skip(f"{bad_grads} non-finite grad norms, more than a loss-scale search "
                       f"skips (max_overflow_skips {ctx['max_overflow_skips']})")
    quarter = max(1, len(values) // 4)
    start = float(np.median(values[:quarter]))
    end = float(np.median(values[-quarter:]))
    how = ""
    if not start > 0 or (start - end) / abs(start) < ctx["min_drop"]:
        # a short excerpt whose end points are noisy: the fitted line, where its 95%
        # interval lies below zero (the fall is no accident of the noise); a relative fall
        # means something only for a loss above zero throughout
        trend = theil_sen(loss) if values.min() > 0 else None
        if (trend is None or not trend.high < 0 or not trend.end > 0
                or -trend.rel_change < ctx["min_drop"]):
            raise ctx.skip(f"the {name} did not clearly fall ({start:.4g} -> {end:.4g} over "
                           f"{len(values)} points; min_drop {ctx['min_drop']:.0%})")
        start, end, how = trend.start, trend.end, " (Theil-Sen line, slope < 0 at 95%)"
    # the fall must hold at the end: a loss whose last quarter is far above its best
    # stretch turned back up (the start of a divergence), whatever it fell from first
    best = min(float(np.median(part)) for part in np.array_split(values, 4) if part.size)
    if best > 0 and float(np.median(values[-quarter:])) > best * (1 + ctx["max_end_rise"]):
        raise ctx.skip(f"the {name} ends more than {ctx['max_end_rise']:.0%} above its best "
                       "stretch (max_end_rise)")
    steps = loss.index.to_numpy()
    first, last = int(steps[0]), int(steps[-1])
    drop = (start - end) / start
    moved = f"fell from {start:.4g} to {end:.4g}"
    if top:  # an accuracy, judged on its error; said as the accuracy
        moved = f"rose from {top - start:.4g} to {top - end:.4g} (its error fell"
    evidence = [Evidence(
        summary=(f"{name} {moved} {drop:.0%}{how})" if "(" in moved
                 else f"{name} {moved} ({drop:.0%}){how}") + " "
                f"over {len(values)} points, steps {first}-{last}"
                + (" (no training loss was logged)" if tag != "loss" else ""),
        tag=tag, steps=(first, last),
        numbers={"start": start, "end": end, "points": len(values)},
    )]
    if bad_grads:
        evidence.append(Evidence(
            summary=f"{bad_grads} skipped step(s) with a non-finite grad norm or loss while the "
                    "loss kept falling (an fp16 loss scaler skipping overflowed steps): normal",
            tag="grad_norm", numbers={"skipped": bad_grads},
        ))
    eval_loss = run.series("eval_loss").to_numpy(dtype=float) if tag == "loss" else []
    if len(eval_loss) >= 2 and np.isfinite(eval_loss).all():
        evidence.append(Evidence(
            summary=f"eval loss went from {eval_loss[0]:.4g} to {eval_loss[-1]:.4g} "
                    f"(best {eval_loss.min():.4g})",
            tag="eval_loss",
            numbers={"first": float(eval_loss[0]), "last": float(eval_loss[-1]),
                     "best": float(eval_loss.min())},
        ))
    return ctx.finding(
        message=f"No failure found: the {name} {moved.split(' (')[0]} over steps "
                f"{first}-{last}, finite throughout.",
        severity=Severity.INFO,
        confidence=min(1.0, 0.5 + len(values) / 100) - _CURVE_DISCOUNT.get(tag, 0.0),
        title="Training looks healthy",
        evidence=evidence,
    )
