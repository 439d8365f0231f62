"""NAN004: the grad norm is NaN/Inf while the logged loss stays finite: the NaN is hidden."""

from __future__ import annotations

import numpy as np

from autopsy.model.finding import Evidence, Family, Finding, Severity
from autopsy.model.run import Run
from autopsy.rules.context import RuleContext
from autopsy.rules.nan_inf._causes import blowup_cause
from autopsy.rules.nan_inf._event import NanEvent, classify
from autopsy.rules.nan_inf.thresholds import CAUSE, CLASSIFY
from autopsy.rules.registry import rule


def _loss_shown(run: Run, event: NanEvent) -> Evidence:
    """What the loss says at the steps where the grad norm is non-finite."""
    loss, grad = run.series("loss"), run.series("grad_norm")
    bad = grad[(grad.index >= event.step)
               & ~np.isfinite(grad.to_numpy(dtype="float64", na_value=np.nan))]
    at = loss.reindex(bad.index).dropna()
    first, last = int(bad.index.min()), int(bad.index.max())
    if not len(at):
        text = "the loss is not logged as a number at those steps"
    elif bool((at == 0).all()):
        text = f"the loss is logged as 0 at {len(at)} of them"
    else:
        text = f"the loss is logged finite at {len(at)} of them ({at.min():.4g} to {at.max():.4g})"
    return Evidence(summary=f"grad norm non-finite on {len(bad)} logged steps from step "
                            f"{first}; {text}",
                    tag="loss", steps=(first, last),
                    numbers={"grad_non_finite": len(bad), "loss_points": len(at)})


@rule(
    code="NAN004",
    name="nan-hidden-in-loss",
    family=Family.NAN_INF,
    requires=("grad_norm", "loss"),
    thresholds={**CLASSIFY, **CAUSE},
)
def nan_hidden_in_loss(run: Run, ctx: RuleContext) -> Finding | None:
    """The grad norm is NaN/Inf while the logged loss stays finite: the NaN is hidden

    What happened:
        From some step on the grad norm is NaN/Inf, but the logged loss at those
        steps is a finite number, 0, or missing: the loss curve looks fine while the
        run is already broken. This note comes beside the NaN/Inf verdict (NAN001,
        NAN002 or NAN005), which says why the values went non-finite; it is a warning
        because it is about the logging, not a second failure. Under fp16 a non-finite
        grad norm beside a finite loss is a skipped step instead (NAN003).

    Why it happens:
        The HF Trainer, with its default ``logging_nan_inf_filter=True``, replaces a
        NaN/Inf loss by the average of the finite ones before logging it; some
        versions log ``loss: 0`` or a string instead. The grad norm is logged as is.

    How to fix:
        Set ``logging_nan_inf_filter=False`` in ``TrainingArguments`` to see the real
        loss, and treat the run as failed from the first non-finite grad norm; when a
        grad-norm spike came before it, the blow-up advice applies (lower LR, warm-up,
        ``max_grad_norm=1.0``).

    Evidence shown:
        The steps with a non-finite grad norm and what the loss shows there, and the
        ``logging_nan_inf_filter`` config entry when the run has it.
        The NaN/Inf rules share one classification of the event (the spike, explosion,
        fp16 and recovery thresholds): override those on every NAN rule alike.
    """
    event = classify(run, ctx)
    if event is None or not event.hidden or event.kind == "fp16_overflow":
        return None
    evidence = [_loss_shown(run, event)]
    entry = run.config.get_entry("logging_nan_inf_filter")
    if entry is not None:
        evidence.append(Evidence(summary=f"logging_nan_inf_filter={entry.value}",
                                 source=entry.source, numbers={"value": str(entry.value)}))
    advice = ["set logging_nan_inf_filter=False (TrainingArguments) to log the real loss",
              f"treat the run as failed from step {event.step}, where the grad norm went "
              f"{event.what}, whatever the loss curve shows"]
    if event.kind == "blowup" and event.blowup is not None:
        advice += blowup_cause(run, event.blowup.onset, ctx).advice
    verdict = {"blowup": "NAN001", "bad_data": "NAN002"}.get(event.kind, "NAN005")
    return ctx.finding(
        message=f"The grad norm is {event.what} from step {event.step} while the logged loss "
                f"stays finite: the loss curve hides the NaN (see {verdict} for why it "
                f"happened).",
        severity=Severity.WARNING,
        confidence=0.9 if entry is not None else 0.75,
        step=event.step,
        evidence=evidence,
        advice=advice,
    )
