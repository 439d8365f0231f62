"""DIV001: the training loss rises after its minimum and stays up, while still finite."""

from __future__ import annotations

import math

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
    schedule_point,
    total_steps,
    warmup_off,
)
from autopsy.rules.diverging.thresholds import DIV001
from autopsy.rules.registry import rule
from autopsy.signals import first_non_finite, theil_sen
from autopsy.signals.interval import start_in_intervals

#: Exponents are capped here: a loss that jumps by 1e19 in a step makes log-space slopes
#: whose exponential overflows a float (math.exp raises past ~709.78).
MAX_EXPONENT = 700.0


def _exp(x: float) -> float:
    """``math.exp`` that saturates at ``exp(MAX_EXPONENT)`` instead of raising."""
    return math.exp(min(x, MAX_EXPONENT))

@rule(
    code="DIV001",
    name="loss-diverging",
    family=Family.DIVERGING,
    causes=("lr_too_high",),
    requires=("loss",),
    thresholds=DIV001,
)
def loss_diverging(run: Run, ctx: RuleContext) -> Finding | None:
    """The training loss diverged: it rose after its minimum and stayed up, still finite.

    What happened:
        After reaching its lowest level, the training loss went back up and stayed
        up to the end of the run: either a sustained rise or an explosion. A
        sustained rise lasts at least ``min_rise_points`` points during which the
        smoothed loss never came back near its best, and either it climbed steadily
        (the Theil–Sen trend of log(loss) over the rise is above zero over its whole
        95% interval) to at least ``min_trend_rise`` above its best and beyond its
        noise, giving back at least ``min_lost_progress`` of what the loss had
        gained since its first points, or it ended at least ``min_rel_rise`` above
        its best and ``noise_k`` times the point-to-point noise of log(loss) up to
        the minimum (noisy runs need a clearer rise). Either way it ended that far
        above the median level of as many points before the best as the rise is
        long, so the luckiest point of a noisy floor is not taken for the best,
        unless the loss was clearly falling into its best and the rise gives back
        ``min_lost_progress`` of its gain. An explosion is a loss ``explode_ratio``
        or more above its best over the last ``min_explode_points`` points, or one
        still at ``absurd_loss`` or more over those points (a loss first logged after
        it blew up has no best to rise from). A loss logged fewer than ``min_points``
        times (once per epoch) counts from ``min_sparse_points`` points when every
        point after its best is ``min_rel_rise`` above it, or when it rose at every
        logged step to ``min_trend_rise`` above its first (a steady climb). The
        loss is smoothed by a running median over ``smooth_points`` points or
        1/``smooth_fraction`` of the run. Every logged value is still finite; once
        the loss turns NaN/Inf, the NaN rules
        own the verdict and this rule stays silent.

    Why it happens:
        Almost always a learning rate too high for the model, the batch size and
        the optimizer: the updates overshoot, the loss landscape gets sharper, and
        each step makes things worse. It is made likelier by no warm-up (Adam's
        second-moment estimates are poor in the first steps), by no gradient
        clipping, and by a warm restart that jumps back to the peak LR. When the
        rise starts late, with the LR already decayed, look at the data order too
        (unshuffled data, a new data source mid-run).

    How to fix:
        Lower the peak learning rate (by 3x is a good first try), add or lengthen
        the warm-up (a few % of the steps), and clip gradients
        (``max_grad_norm=1.0``). Restart from the checkpoint before the rise
        began rather than continuing from a diverged state.

    Evidence shown:
        The best (smoothed) loss and its step, the step where the rise begins
        (the reported step: the point after the lowest one of the last stretch,
        one smoothing window long, where the smoothed loss sat within
        ``near_min`` or its noise of its best; a flat floor long before the rise
        does not count), the loss at the end and the rise
        factor, the Theil–Sen trend of log(loss) over the rise, where the rise
        starts in the LR schedule (when the LR was logged), and the clipping and
        warm-up settings with their source file.
    """
    loss = run.series("loss").sort_index()
    if first_non_finite(loss) is not None or first_non_finite(run.series("grad_norm")) is not None:
        return None  # NaN/Inf: the NaN rules own this run
    values = loss.to_numpy(dtype=float)
    if not (values > 0).all():
        return None  # a loss whose ratios mean nothing (zero or negative)
    if len(values) < ctx["min_points"]:
        return _sparse_rise(run, ctx, loss) or _absurd_level(run, ctx, loss)
    return _rise(run, ctx, loss) or _absurd_level(run, ctx, loss)


def _rise(run: Run, ctx: RuleContext, loss: pd.Series) -> Finding | None:
    """A rise after the best on a loss logged at least ``min_points`` times."""
    values = loss.to_numpy(dtype=float)
    logs = np.log(values)
    width = max(int(ctx["smooth_points"]), len(values) // int(ctx["smooth_fraction"]))
    sm = np.exp(pd.Series(logs).rolling(width, center=True, min_periods=1).median().to_numpy())
    steps = loss.index.to_numpy()
    best_i = int(np.argmin(sm))
    base = float(sm[best_i])
    noise = _noise(logs[:best_i + width] if best_i + width >= 8 else logs)
    near = base * max(1 + ctx["near_min"], _exp(2 * 1.25 * noise / math.sqrt(width)))
    last_near = best_i + int(np.flatnonzero(sm[best_i:] <= near)[-1])
    if not (values[last_near + 1:] > near).any():
        return None
    # The rise begins after the lowest raw point of the last stretch near the best level
    # (not after a low point far back on a long flat floor).
    lo = max(0, last_near - width + 1)
    low_i = lo + int(np.argmin(values[lo:last_near + 1]))
    rise_i = low_i + 1
    n_rise = len(values) - rise_i
    end = float(np.median(values[-min(max(int(ctx["end_points"]), width), n_rise):]))
    ratio = end / base
    need = max(1 + ctx["min_rel_rise"], _exp(ctx["noise_k"] * noise))
    tail = values[-int(ctx["min_explode_points"]):]
    exploded = n_rise >= ctx["min_explode_points"] and bool(
        (tail >= base * ctx["explode_ratio"]).all())
    if n_rise < ctx["min_rise_points"] and not exploded:
        return None  # too short for a sustained rise or a steady climb: no trend to fit
    trend = theil_sen(loss.iloc[low_i:], log=True)
    rising = trend is not None and trend.low > 0
    # A rise that gives back less than min_lost_progress of what the run had gained is a
    # converged loss drifting at its floor (near zero, 0.0006 to 0.0012), not a divergence.
    start_level = float(np.median(values[:width]))
    top = max(end, trend.end if trend is not None else end)
    gives_back = top - base >= ctx["min_lost_progress"] * (start_level - base)
    # A real rise also clears the typical level before the best, not only the luckiest
    # smoothed point of a noisy floor (a noisy plateau ending the run is no divergence),
    # unless the loss was clearly falling into its best (a V, not a floor): then the points
    # before the best are the descent, not a typical level.
    span = max(int(ctx["min_rise_points"]), n_rise)
    prior = float(np.median(values[max(0, best_i - span):best_i + 1]))
    if gives_back:
        descent = theil_sen(loss.iloc[max(0, best_i - span):best_i + 1], log=True)
        if descent is not None and descent.high < 0:
            prior = base
    sustained = n_rise >= ctx["min_rise_points"] and ratio >= need and end >= prior * need
    # a steady climb: every point of the rise trends up (the trend's interval is above 0)
    # by at least min_trend_rise, which the wander of a plateau does not do (measured at
    # the trend's end: the median of a steady climb is its middle)
    climb = max(1 + ctx["min_trend_rise"], _exp(ctx["noise_k"] * noise))
    steady = (trend is not None and n_rise >= ctx["min_rise_points"] and rising
              and trend.end >= base * climb and trend.end >= prior * climb and gives_back)
    if steady and not sustained and trend is not None:
        end = max(end, min(trend.end, float(values[-1])))
        ratio = end / base
    if not (exploded or sustained or steady):
        return None
    ratio = max(ratio, float(np.median(tail)) / base) if exploded else ratio
    end = base * ratio

    start_step, best_step, last_step = int(steps[rise_i]), int(steps[best_i]), int(steps[-1])
    point = schedule_point(run, start_step)
    clip, warm = clipping_off(run), warmup_off(run)
    late = point is not None and point.phase == "decay" and point.lr is not None \
        and point.lr < 0.5 * point.schedule.peak

    how = (f"exploded {ratio:.3g}x" if ratio >= ctx["explode_ratio"]
           else f"rose {ratio - 1:.0%}")
    shape = "and is still rising" if rising else "and stayed up"
    where = f" {point.words}" if point is not None else ""
    message = (f"The training loss diverged: from its best {base:.4g} (step {best_step}) it "
               f"{how} to {end:.4g} by step {last_step} {shape}, still finite. The rise "
               f"begins at step {start_step}{where}.")
    evidence = [Evidence(
        summary=f"loss best {base:.4g} at step {best_step} (median of {width} points), rise "
                f"from step {start_step}, {end:.4g} at the end ({ratio:.3g}x) over {n_rise} "
                f"points; point-to-point noise {noise:.1%}",
        tag="loss", steps=(best_step, last_step),
        numbers={"best": base, "best_step": best_step, "rise_step": start_step, "end": end,
                 "ratio": ratio, "rise_points": n_rise, "noise": noise},
    )]
    if trend is not None:
        per100 = _exp(trend.slope * 100) - 1
        evidence.append(Evidence(
            summary=f"Theil-Sen trend of log(loss) over the rise: {per100:+.1%} per 100 steps "
                    f"(95% CI {_exp(trend.low * 100) - 1:+.1%} to "
                    f"{_exp(trend.high * 100) - 1:+.1%}), {trend.n} points",
            tag="loss", steps=(int(steps[low_i]), last_step),
            numbers={"slope_log": trend.slope, "low": trend.low, "high": trend.high},
        ))
    if point is not None:
        evidence.append(schedule_evidence(point, start_step))
    if clip is not None:
        evidence.append(config_evidence(clip, "no gradient clipping"))
    if warm is not None:
        evidence.append(config_evidence(warm, "no warm-up"))

    confidence = 0.6 + 0.15 * rising + 0.15 * (ratio >= ctx["explode_ratio"]) \
        + min(0.1, n_rise / 100) - 0.2 * late
    return ctx.finding(
        message=message, severity=Severity.ERROR, confidence=confidence, cause="lr_too_high",
        step=start_step, evidence=evidence,
        advice=_advice(run, point, start_step, best_step, last_step, late),
    )


def _sparse_rise(run: Run, ctx: RuleContext, loss: pd.Series) -> Finding | None:
    """A divergence on a loss logged too few times to smooth: every point after the best up.

    An epoch-level log, or a loss logged every 500 steps, has fewer than ``min_points``
    points; from ``min_sparse_points`` on, a loss none of whose points after its best came
    back within ``min_rel_rise`` of it (at least ``min_explode_points`` of them), nor
    within ``noise_k`` times their own trend-free noise (from three of them on), rose and
    stayed up; when that best is the first point of an excerpt (``excerpt_start_intervals``),
    the points after it must also climb (or have exploded). When an eval loss is logged it
    must have risen by ``min_trend_rise`` from its own best as well: a train loss that rises
    while the eval loss keeps falling is a changed objective or augmentation, not an
    optimizer overshooting.
    """
    values = loss.to_numpy(dtype=float)
    steps = loss.index.to_numpy()
    if len(values) < ctx["min_sparse_points"]:
        return None
    best_i = int(np.argmin(values))
    base = float(values[best_i])
    after = values[best_i + 1:]
    # the points after the best must clear it by more than they vary among themselves (the
    # trend-free noise of their log): a noisy per-batch loss whose first point happened to be
    # its lowest is no divergence
    noise = _noise(np.log(after)) if len(after) >= 3 and (after > 0).all() else 0.0
    need = max(1 + ctx["min_rel_rise"], _exp(ctx["noise_k"] * noise))
    steady = _steady_climb(loss, ctx)
    if not steady and (len(after) < ctx["min_explode_points"]
                       or not (after >= base * need).all()):
        return None
    start = start_in_intervals(steps)
    if (best_i == 0 and not steady and start is not None
            and start >= ctx["excerpt_start_intervals"]
            and float(np.median(after[-int(ctx["end_points"]):])) < base * ctx["explode_ratio"]):
        # the excerpt's first point is its lowest: one point is no level the run left
        trend = theil_sen(loss.iloc[1:])
        if trend is None or not trend.low > 0:
            return None
    if steady:  # every logged point above the one before: the sparse form of a steady climb
        need = 1 + ctx["min_trend_rise"]
    evidence: list[Evidence] = []
    ev = run.series("eval_loss").dropna()
    ev = ev[np.isfinite(ev.to_numpy(dtype=float))]
    if len(ev) >= 2:
        ev_best_i = int(np.argmin(ev.to_numpy(dtype=float)))
        ev_best, ev_end = float(ev.iloc[ev_best_i]), float(ev.iloc[-1])
        if ev_best_i == len(ev) - 1 or ev_end < ev_best * (1 + ctx["min_trend_rise"]):
            return None
        evidence.append(Evidence(
            summary=f"eval loss up too: best {ev_best:.4g} (step {int(ev.index[ev_best_i])}), "
                    f"{ev_end:.4g} at the end ({ev_end / ev_best:.3g}x)",
            tag="eval_loss", steps=(int(ev.index[ev_best_i]), int(ev.index[-1])),
            numbers={"best": ev_best, "end": ev_end},
        ))
    end = float(np.median(after[-int(ctx["end_points"]):]))
    ratio = end / base
    best_step, start_step, last_step = int(steps[best_i]), int(steps[best_i + 1]), int(steps[-1])
    point = schedule_point(run, start_step)
    where = f" {point.words}" if point is not None else ""
    how = (f"exploded {ratio:.3g}x" if ratio >= ctx["explode_ratio"]
           else f"rose {ratio - 1:.0%}")
    message = (f"The training loss diverged: from its best {base:.4g} (step {best_step}) it "
               f"{how} to {end:.4g} by step {last_step} and never came back, still finite "
               f"(only {len(values)} loss points were logged). The rise begins at step "
               f"{start_step}{where}.")
    evidence.insert(0, Evidence(
        summary=f"loss best {base:.4g} at step {best_step}; all {len(after)} points after it "
                f"are at least {need:.2g}x that, {end:.4g} at the end ({ratio:.3g}x); "
                f"{len(values)} points logged",
        tag="loss", steps=(best_step, last_step),
        numbers={"best": base, "best_step": best_step, "rise_step": start_step, "end": end,
                 "ratio": ratio, "rise_points": len(after)},
    ))
    if point is not None:
        evidence.append(schedule_evidence(point, start_step))
    late = point is not None and point.phase == "decay" and point.lr is not None \
        and point.lr < 0.5 * point.schedule.peak
    confidence = 0.5 + 0.1 * (ratio >= ctx["explode_ratio"]) + 0.1 * bool(len(evidence) > 1)
    return ctx.finding(
        message=message, severity=Severity.ERROR, confidence=confidence, cause="lr_too_high",
        step=start_step, evidence=evidence,
        advice=_advice(run, point, start_step, best_step, last_step, late),
    )


def _steady_climb(loss: pd.Series, ctx: RuleContext) -> bool:
    """A sparse loss that rose at every logged step, over at least ``min_sparse_points``
    steps (the median of a step's points where a log gives two, say a bar and its epoch
    summary), and ended ``min_trend_rise`` above its first: a climb with no step back is a
    trend whatever the noise (five rising points in a row happen by chance one time in 120)."""
    per_step = loss.groupby(level=0).median()
    values = per_step.to_numpy(dtype=float)
    if len(values) < ctx["min_sparse_points"] or not (values > 0).all():
        return False
    return bool((np.diff(values) > 0).all()
                and values[-1] >= values[0] * (1 + ctx["min_trend_rise"]))


def _absurd_level(run: Run, ctx: RuleContext, loss: pd.Series) -> Finding | None:
    """A loss that ends at ``absurd_loss`` or more: it exploded, if not within the log.

    The last ``min_explode_points`` points (at least two) all at or above the bar; the step
    reported is the first point from which the loss stayed at or above it.
    """
    values = loss.to_numpy(dtype=float)
    steps = loss.index.to_numpy()
    bar = float(ctx["absurd_loss"])
    k = max(2, int(ctx["min_explode_points"]))
    if len(values) < k or not (values[-k:] >= bar).all():
        return None
    below = np.flatnonzero(values < bar)
    first_i = int(below[-1]) + 1 if below.size else 0
    first_step, last_step = int(steps[first_i]), int(steps[-1])
    end = float(np.median(values[-k:]))
    since = ("from its first logged point" if first_i == 0
             else f"from step {first_step} (it was {values[first_i - 1]:.4g} before)")
    point = schedule_point(run, first_step)
    message = (f"The training loss exploded: it is {end:.4g} at the end, at or above "
               f"{bar:.0e} {since} to step {last_step}, still finite. No real loss sits "
               f"there; the weights have blown up.")
    evidence = [Evidence(
        summary=f"loss {values[first_i]:.4g} at step {first_step}, {end:.4g} at the end "
                f"(median of the last {k}); bar {bar:.0e}",
        tag="loss", steps=(first_step, last_step),
        numbers={"first": float(values[first_i]), "end": end, "bar": bar,
                 "points": len(values) - first_i},
    )]
    if point is not None:
        evidence.append(schedule_evidence(point, first_step))
    warm = warmup_off(run)
    if warm is not None:
        evidence.append(config_evidence(warm, "no warm-up"))
    return ctx.finding(
        message=message, severity=Severity.ERROR, confidence=0.7, cause="lr_too_high",
        step=first_step, evidence=evidence,
        advice=_advice(run, point, first_step, first_step, last_step, False),
    )


def _noise(logs: np.ndarray) -> float:
    """Robust point-to-point noise of log(loss), from second differences (trend-free)."""
    d2 = logs[1:-1] - (logs[:-2] + logs[2:]) / 2
    return 1.4826 * float(np.median(np.abs(d2))) / math.sqrt(1.5) if d2.size else 0.0


def _advice(run: Run, point: SchedulePoint | None, start: int, best: int, last: int,
            late: bool) -> list[str]:
    """Concrete changes, from the schedule and the config."""
    advice = []
    peak = peak_lr(run, point)
    rise_lr = point.lr if point is not None and point.phase == "warmup" else None
    early = rise_lr is not None and peak is not None and rise_lr < 0.8 * peak
    if early and rise_lr is not None:
        advice.append(f"the loss turned up at LR {rise_lr:.3g}, on the way to a {peak:.3g} "
                      f"peak: the peak is far too high; keep it below that LR "
                      f"(learning_rate={rise_lr / 2:.2g}, half the LR where the rise began)")
    elif peak is not None:
        advice.append(f"lower the peak LR about 3x: learning_rate={peak:.3g} -> {peak / 3:.2g}")
    else:
        advice.append("lower the peak learning rate (by about 3x)")
    warmup = max(1, round(0.03 * total_steps(run, last)))
    if warmup_off(run) is not None or (point is not None and point.schedule.warmup_steps == 0):
        advice.append(f"add a warm-up of ~3% of the steps (warmup_steps={warmup})")
    elif point is not None and point.phase in ("warmup", "peak") and not early:
        longer = max(warmup, 2 * point.schedule.warmup_steps)
        advice.append(f"lengthen the warm-up (warmup_steps={longer}) so the peak LR is reached "
                      f"more gently")
    if point is not None and point.phase == "restart":
        advice.append("lower the LR the warm restarts jump back to, or drop the restarts")
    if clipping_off(run) is not None:
        advice.append("clip gradients: max_grad_norm=1.0")
    if late:
        advice.append("the LR had already decayed when the rise began: check the data order "
                      "(shuffling) and any new data source from that step on")
    advice.append(f"restart from a checkpoint saved before step {start} (the loss was best "
                  f"at step {best}), not from the diverged state")
    return advice
