"""NAN002: NaN/Inf with a flat grad norm before it: a bad batch or a numerics bug."""

from __future__ import annotations

from autopsy.model.finding import Evidence, Family, Finding
from autopsy.model.run import Run
from autopsy.rules.context import RuleContext
from autopsy.rules.nan_inf._event import classify
from autopsy.rules.nan_inf.thresholds import CLASSIFY
from autopsy.rules.registry import rule


@rule(
    code="NAN002",
    name="nan-bad-batch",
    family=Family.NAN_INF,
    causes=("bad_data",),
    requires=("grad_norm",),
    thresholds=CLASSIFY,
)
def nan_bad_batch(run: Run, ctx: RuleContext) -> Finding | None:
    """NaN/Inf out of a flat grad norm: a bad batch or a numerics bug

    What happened:
        The loss or the grad norm became NaN/Inf at one step, with no warning: the
        grad norm was logged on at least ``spike_min_points`` points before it and
        shows no spike in the last ``lookback_points`` of them, and the loss did not
        explode. The step reported is the first non-finite loss or grad norm.

    Why it happens:
        Nothing in the optimisation was going wrong, so one batch or one operation
        produced the non-finite value: a sample with an empty sequence or every label
        masked (a mean over zero tokens), an out-of-range label id, a corrupt or
        extreme input, or a numerics bug (log of 0, division by a zero count, sqrt at
        0 in the backward pass, an fp16 activation overflow).

    How to fix:
        Inspect the batch at the reported step (with a logging interval above 1, any
        step since the last finite point): its lengths, labels and inputs. Re-run that
        step with ``torch.autograd.set_detect_anomaly(True)`` to find the op that made
        the NaN. Guard custom losses (clamp before log, skip empty batches).

    Evidence shown:
        The first non-finite step and how many points followed it, and the grad norm's
        median and last value before it. With sparse logging (a point every N steps) a
        blow-up inside the last interval leaves no trace; the message says so and the
        confidence is lower.
        The NaN/Inf rules share one classification of the event (the spike, explosion,
        fp16 and recovery thresholds): override those on every NAN rule alike.
    """
    event = classify(run, ctx)
    if event is None or event.kind != "bad_data":
        return None
    hidden = (" The logged loss stays finite there: the NaN is hidden from it (see NAN004)."
              if event.hidden else "")
    flat = Evidence(
        summary=f"grad norm flat before it: median {event.grad_median:.3g} over the last "
                f"{min(event.grad_points, int(ctx['spike_window']))} points, last value "
                f"{event.grad_last:.3g}, no spike in the last {ctx['lookback_points']} points",
        tag="grad_norm",
        numbers={"median": event.grad_median, "last": event.grad_last,
                 "points": event.grad_points})
    advice = [
        f"inspect the batch at step {event.step}{event.interval_note}: sequence lengths "
        "(empty ones), labels (all -100, or ids out of range), inputs (NaN/Inf, extreme "
        "values)",
        f"re-run step {event.step} with torch.autograd.set_detect_anomaly(True) to find the "
        "operation that produced the NaN",
        "guard custom loss code: clamp before log, avoid dividing by a count that can be 0",
    ]
    if event.fp16.active:
        advice.append("under fp16 an activation can overflow (max 65504): try bf16=True")
    gap = event.step - event.prev_step if event.prev_step is not None else 1
    caveat = (f" With a point every {gap} steps, a blow-up inside the last interval cannot be "
              "ruled out." if gap > 1 else "")
    return ctx.finding(
        message=f"The {event.label} went {event.what} at step {event.step} out of a flat grad "
                f"norm (median {event.grad_median:.3g}, last {event.grad_last:.3g})"
                f": a bad batch or a numerics bug, not an optimisation blow-up. Inspect the "
                f"batch at step {event.step}{event.interval_note}.{caveat}{hidden}",
        severity=event.severity,
        confidence=(0.5 + 0.3 * min(1.0, event.grad_points / 20)) * (0.8 if gap > 1 else 1.0),
        cause="bad_data",
        step=event.step,
        evidence=[*event.evidence, flat],
        advice=advice,
    )
