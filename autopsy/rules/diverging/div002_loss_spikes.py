"""DIV002: the training loss spiked, then came back to its level within a few points."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from autopsy.model.finding import Evidence, Family, Finding, Severity
from autopsy.model.run import Run
from autopsy.rules.context import RuleContext
from autopsy.rules.diverging._shared import (
    SchedulePoint,
    clipping_off,
    config_evidence,
    peak_lr,
    schedule_evidence,
    schedule_points,
    total_steps,
)
from autopsy.rules.diverging.thresholds import DIV002
from autopsy.rules.registry import rule
from autopsy.signals import Spike, first_non_finite, spike_scores


@dataclass(frozen=True)
class _Event:
    """One spike event: its first spike point, its top, and where the loss came back."""

    first: Spike
    top: Spike
    recovered_step: int
    points: int


@rule(
    code="DIV002",
    name="loss-spikes",
    family=Family.DIVERGING,
    causes=("no_clipping", "lr_too_high", "bad_data"),
    requires=("loss",),
    thresholds=DIV002,
)
def loss_spikes(run: Run, ctx: RuleContext) -> Finding | None:
    """The training loss spiked and recovered.

    What happened:
        The training loss jumped far above its recent level (at least
        ``min_ratio`` times the median of the ``window`` points before it, and
        ``min_score`` robust deviations above the noise, measured on log(loss)
        around its running median over ``detrend_points`` points, so that neither
        the loss level nor a fast descent passes for noise), then came back to within
        ``recover_tol`` of that level within ``recover_points`` logged points. A
        spike of a single point (back at the very next one) counts only from
        ``single_point_ratio``: one odd batch is ordinary noise. The run
        survived, so this is a warning, not a failure; a spike that does not come
        back is a divergence (DIV001), and one that ends in NaN is for the NaN
        rules (the points from the first NaN/Inf in the loss or the grad norm on
        are not looked at).

    Why it happens:
        A step that overshoots: the LR is high for the curvature the model has
        reached (spikes often sit at the end of the warm-up or at the peak LR), a
        large gradient goes through unclipped, or Adam's second-moment estimate is
        stale for a rarely-updated parameter. Spikes that are back at the very next
        point come from the batch itself (corrupt, mislabelled, very long), not
        from damaged weights: the cause is then ``bad_data``.

    How to fix:
        Clip gradients (``max_grad_norm=1.0``) if the run does not. If the spikes
        sit at the peak LR, lower the peak LR or lengthen the warm-up. If there
        are one or two, or each lasts one point, inspect the batches at those
        steps. Spikes that repeat are
        a warning sign for a later divergence.

    Evidence shown:
        Each spike event (up to ``max_listed``): its step, the loss there against
        the median before it (ratio and robust score), the step where the loss was
        back, and where the spike sits in the LR schedule; the clipping setting with
        its source file.
    """
    loss = run.series("loss").sort_index()
    bad = [b for b in (first_non_finite(loss), first_non_finite(run.series("grad_norm")))
           if b is not None]
    if bad:  # what follows a NaN/Inf (or an HF-filtered 0.0 loss) is no recovery
        loss = loss[loss.index < min(bad)]
    events = _events(loss, ctx)
    if not events:
        return None
    points = schedule_points(run, [e.first.step for e in events])
    listed = int(ctx["max_listed"])
    evidence = [_event_evidence(e, p) for e, p in zip(events[:listed], points[:listed],
                                                      strict=True)]
    if points[0] is not None:
        evidence.append(schedule_evidence(points[0], events[0].first.step))
    clip = clipping_off(run)
    if clip is not None:
        evidence.append(config_evidence(clip, "no gradient clipping"))

    at_peak = [e for e, p in zip(events, points, strict=True)
               if p is not None and p.phase in ("warmup", "peak", "restart")]
    isolated = len(events) <= ctx["max_isolated"]
    one_point = all(e.points == 1 for e in events)  # back at once: the batch, not the weights
    cause = ("bad_data" if one_point
             else "no_clipping" if clip is not None
             else "lr_too_high" if len(at_peak) * 2 > len(events) and not isolated
             else "bad_data" if isolated else None)
    steps = ", ".join(str(e.first.step) for e in events[:listed])
    more = f" and {len(events) - listed} more" if len(events) > listed else ""
    worst = max(events, key=lambda e: e.top.ratio)
    times = ("once and recovered (step" if len(events) == 1
             else f"{len(events)} times and recovered each time (steps")
    message = (f"The training loss spiked {times} {steps}{more}); the largest jump was "
               f"{worst.top.ratio:.3g}x its level, at step {worst.top.step}. The run survived, "
               f"but this is instability.")
    advice = _advice(run, events, points, at_peak, isolated, one_point)
    confidence = min(0.9, 0.5 + 0.1 * len(events) + 0.1 * (worst.top.ratio >= 3))
    return ctx.finding(message=message, severity=Severity.WARNING, confidence=confidence,
                       cause=cause, step=events[0].first.step, evidence=evidence, advice=advice)


def _events(loss: pd.Series, ctx: RuleContext) -> list[_Event]:
    """Group the spikes into events and keep those the loss recovered from."""
    finite = loss[np.isfinite(loss.to_numpy(dtype=float))]
    window, min_periods = int(ctx["window"]), int(ctx["min_periods"])
    raw = spike_scores(finite, window=window, min_periods=min_periods)
    steps = finite.index.to_numpy()
    values = finite.to_numpy(dtype=float)
    # Score against the noise, not the trend: the residual of log(loss) (loss noise is
    # multiplicative) around its centred running median, so a fast early descent inside
    # the window does not pass for noise.
    level = np.log(finite) if (values > 0).all() else finite
    trend = level.rolling(int(ctx["detrend_points"]), center=True, min_periods=1).median()
    scores = spike_scores(level - trend, window=window, min_periods=min_periods)["score"]
    # candidates: high against the raw window (upward, ratio >= min_ratio) and against the
    # detrended noise; both frames are in the loss's (sorted, unique) step order, so one
    # numpy mask picks them (a noisy 750k-point loss has tens of thousands of raw ones)
    raw_score = raw["score"].to_numpy(dtype=float)
    ratio = raw["ratio"].to_numpy(dtype=float)
    score = scores.to_numpy(dtype=float)
    picked = np.flatnonzero((raw_score >= 0.0) & (ratio >= float(ctx["min_ratio"]))
                            & (score >= ctx["min_score"]))
    baseline = raw["baseline"].to_numpy(dtype=float)
    spikes = [Spike(step=int(steps[i]), value=float(values[i]), baseline=float(baseline[i]),
                    ratio=float(ratio[i]), score=float(score[i])) for i in picked]
    events: list[_Event] = []
    until = -1  # index up to which the current event lasts
    for i, spike in zip(picked.tolist(), spikes, strict=True):
        if i <= until:
            continue
        level = spike.baseline * (1 + ctx["recover_tol"])
        later = values[i + 1:i + 1 + int(ctx["recover_points"])]
        back = np.flatnonzero((later <= level) & (later > 0))  # a logged 0.0 is no recovery
        if not back.size:
            until = len(values)  # did not recover: not a spike that recovers
            continue
        until = i + 1 + int(back[0])
        top_i = i + int(np.argmax(values[i:until]))
        top = Spike(step=int(steps[top_i]), value=float(values[top_i]), baseline=spike.baseline,
                    ratio=float(values[top_i] / spike.baseline), score=spike.score)
        if until - i == 1 and top.ratio < ctx["single_point_ratio"]:
            continue  # one point out and straight back: one odd batch, ordinary noise
        events.append(_Event(first=spike, top=top, recovered_step=int(steps[until]),
                             points=until - i))
    return events


def _event_evidence(event: _Event, point: SchedulePoint | None) -> Evidence:
    """One evidence line per spike event."""
    where = f", {point.words}" if point is not None else ""
    top = event.top
    return Evidence(
        summary=f"loss {top.value:.4g} at step {top.step} vs {top.baseline:.4g} before it "
                f"({top.ratio:.3g}x, score {event.first.score:.3g}); back by step "
                f"{event.recovered_step}{where}",
        tag="loss", steps=(event.first.step, event.recovered_step),
        numbers={"step": event.first.step, "value": top.value, "baseline": top.baseline,
                 "ratio": top.ratio, "score": event.first.score,
                 "recovered_step": event.recovered_step,
                 "phase": point.phase if point is not None else None},
    )


def _advice(run: Run, events: list[_Event], points: list[SchedulePoint | None],
            at_peak: list[_Event], isolated: bool, one_point: bool) -> list[str]:
    """Concrete changes: clipping, the peak LR and warm-up, the batches to inspect."""
    if one_point:
        steps = ", ".join(str(e.first.step) for e in events)
        return [f"the loss was back at the very next point after each spike: the batches, not "
                f"the weights; inspect the batches at steps {steps} (corrupt or mislabelled "
                f"samples, a bad shard, extreme lengths)"]
    advice = []
    if clipping_off(run) is not None:
        advice.append("clip gradients: max_grad_norm=1.0")
    if at_peak:
        peak = peak_lr(run, next(p for p in points if p is not None))
        lower = f" (learning_rate={peak:.3g} -> {peak / 2:.2g})" if peak else ""
        last = int(run.series("loss").index.max())
        warm = max(1, round(0.05 * total_steps(run, last)))
        advice.append(f"spikes sit at the end of the warm-up or at the peak LR: lower the peak "
                      f"LR{lower} or lengthen the warm-up (warmup_steps={warm})")
    if isolated:
        steps = " and ".join(str(e.first.step) for e in events)
        advice.append(f"inspect the batch(es) at step {steps} (length, labels, corrupt samples)")
    else:
        advice.append("repeated spikes: with Adam, try adam_beta2=0.95; watch for a divergence")
    return advice
