"""OVF001: the eval loss rises after its minimum while the training loss keeps falling."""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np
import pandas as pd

from autopsy.model.finding import Evidence, Family, Finding, Severity
from autopsy.model.run import Run
from autopsy.rules.context import RuleContext
from autopsy.rules.overfitting.thresholds import OVF001
from autopsy.rules.registry import rule
from autopsy.signals import theil_sen

_CHECKPOINT = re.compile(r"(?:^|/)checkpoint-(\d+)(?:/|$)")


@rule(
    code="OVF001",
    name="overfitting",
    family=Family.OVERFITTING,
    causes=("overfitting",),
    requires=("eval_loss",),
    thresholds=OVF001,
)
def eval_loss_rising(run: Run, ctx: RuleContext) -> Finding | None:
    """The model overfits: the eval loss rises after its minimum while the train loss falls.

    What happened:
        The eval loss reached its minimum and then rose: the last eval is at least
        ``rel_rise`` above the minimum, and so are at least ``min_rising_evals``
        of the evals after it (or every eval after it rose above the one before),
        out of at least ``min_evals`` evals in all; and the evals after the minimum
        sit ``rel_rise`` above the median of as many evals before it (the wander of
        a noisy floor, whose minimum was its luckiest eval, is not a rise), unless
        the eval loss was clearly falling into its minimum or the evals after the
        minimum trend up (their Theil–Sen interval above 0); while
        the training loss kept falling (or, when it was not logged, could not be
        checked). The reported step is the eval-loss minimum: the last good step,
        whose weights are the ones to keep. "Train loss below
        ``memorised_train`` while eval loss is above ``memorised_eval``" is
        called out: the model has memorised its training set.

        Also when the eval loss never came back to its minimum: the last
        ``stale_evals`` evals or more (at least ``stale_share`` of all) all after the
        minimum, their median ``stale_rise`` above it and their Theil-Sen trend rising
        (its interval above 0: a flat plateau after a lucky minimum is a converged run),
        while the training loss fell by at least ``stale_train_drop`` from the best step to
        the end (the noisy-floor guard above still applies): early stopping's "no
        improvement for its patience", with the eval loss drifting away.

        And, for an eval loss too noisy for either reading, when its running median over
        ``smooth_window`` evals rises: the median of the last ``smooth_window`` evals at
        least ``rel_rise`` above the lowest running median (the two windows apart), while the
        training loss fell by ``stale_train_drop`` from there to the end and the gap
        eval - train, positive at the end, widened. The step is then the lowest eval
        inside the lowest window.

    Why it happens:
        The model has more capacity than the training data can constrain: too
        few examples, too many epochs over them, noisy labels it learns by heart,
        too little regularisation. A training loss still falling while the eval
        loss rises is not divergence (which is DIV001): optimisation works, but on
        the wrong objective.

    How to fix:
        Keep the best checkpoint and stop there: ``load_best_model_at_end=True``
        with ``metric_for_best_model="eval_loss"``, checkpoints saved at every
        eval, and ``EarlyStoppingCallback(early_stopping_patience=3)``. Train for
        fewer epochs. Get more data or augment it; add weight decay and dropout.

    Evidence shown:
        The eval loss at its minimum (step) and at the end, the number of evals
        after the minimum above it, the training loss at the best step and at the
        end with the gap (eval - train) at the end, the checkpoint to keep (the
        run's ``best_model_checkpoint``, else the saved checkpoint with the lowest
        eval loss), and the weight decay with its source file.
    """
    evals = run.series("eval_loss").sort_index()
    evals = evals[np.isfinite(evals.to_numpy(dtype=float))]
    if len(evals) < ctx["min_evals"]:
        return None
    values, steps = evals.to_numpy(dtype=float), evals.index.to_numpy()
    best_i = int(np.argmin(values))
    best, best_step, last = float(values[best_i]), int(steps[best_i]), float(values[-1])
    bar = best * (1 + ctx["rel_rise"]) if best > 0 else best + ctx["rel_rise"]
    above = int((values[best_i + 1:] >= bar).sum())
    after = values[best_i:]
    # a steady climb: every eval after the minimum above the one before it
    steady = len(after) > ctx["min_rising_evals"] + 1 and bool((np.diff(after) > 0).all())
    stale = False  # the eval loss never came back to its best while the train loss fell on
    if last < bar or (above < ctx["min_rising_evals"] and not steady):
        stale = _stale(values, best_i, ctx)
        if not stale:
            return _smoothed(run, evals, ctx)
    # ...and a rise, not the wander of a noisy floor whose minimum was its luckiest eval:
    # the evals after the minimum sit above those before it (as many as after), unless
    # the eval loss was clearly falling into its minimum (then those are the descent)
    span = len(after) - 1
    before = evals.iloc[max(0, best_i - span):best_i + 1]
    descent = theil_sen(before, log=best > 0)
    falling = descent is not None and descent.high < 0
    floor = float(np.median(before.to_numpy(dtype=float)[:-1])) if len(before) > 1 else best
    above_floor = float(np.median(after[1:])) >= (floor * (1 + ctx["rel_rise"]) if floor > 0
                                                   else floor + ctx["rel_rise"])
    # (or, past a lucky minimum, the evals after it trend up: the whole Theil-Sen
    # interval above 0; the minimum itself left out, it would lift any trend)
    trend = theil_sen(evals.iloc[best_i + 1:], log=best > 0) if len(after) > 3 else None
    rising = trend is not None and trend.low > 0
    if len(before) > ctx["min_rising_evals"] and not (falling or above_floor or rising):
        return _smoothed(run, evals, ctx)
    if stale and not rising:
        return _smoothed(run, evals, ctx)  # a stale eval loss not drifting up is a plateau
    train_best, train_end = _train_levels(run, best_step, int(ctx["train_points"]))
    if train_best is not None and train_end is not None and train_end >= train_best:
        return None  # train loss rising too: divergence, not overfitting
    if stale and (train_best is None or train_end is None or train_best <= 0
                  or (train_best - train_end) / train_best < ctx["stale_train_drop"]):
        return _smoothed(run, evals, ctx)  # stale is overfitting only beside a falling train loss
    return _overfits(run, ctx, evals, best_i, above, bar, train_best, train_end)


def _overfits(run: Run, ctx: RuleContext, evals: pd.Series, best_i: int, above: int,
              bar: float, train_best: float | None, train_end: float | None,
              smoothed: Evidence | None = None) -> Finding:
    """The finding: the eval loss best at ``best_i`` and higher at the end, with the train loss
    at the best step and at the end, the checkpoint to keep and the weight decay."""
    values, steps = evals.to_numpy(dtype=float), evals.index.to_numpy()
    best, best_step, last = float(values[best_i]), int(steps[best_i]), float(values[-1])

    last_step = int(steps[-1])
    rise = (last - best) / abs(best) if best else float("inf")
    memorised = (train_end is not None and train_end < ctx["memorised_train"]
                 and last > ctx["memorised_eval"])
    evidence = [Evidence(
        summary=f"eval loss best {best:.4g} at step {best_step}, then {above} of "
                f"{len(values) - best_i - 1} later evals above {bar:.4g}; {last:.4g} at step "
                f"{last_step} ({rise:+.0%})",
        tag="eval_loss", steps=(best_step, last_step),
        numbers={"best": best, "best_step": best_step, "last": last, "rise": rise,
                 "evals_above": above},
    )]
    if smoothed is not None:
        evidence.append(smoothed)
    gap = None
    if train_best is not None and train_end is not None:
        gap = last - train_end
        evidence.append(Evidence(
            summary=f"train loss {train_best:.4g} at step {best_step} -> {train_end:.4g} at the "
                    f"end; gap eval - train {gap:.4g} at the end"
                    + (f" (train < {ctx['memorised_train']} while eval > "
                       f"{ctx['memorised_eval']}: memorised)" if memorised else ""),
            tag="loss", steps=(best_step, last_step),
            numbers={"train_at_best": train_best, "train_end": train_end, "gap": gap},
        ))
    keep = _checkpoint_to_keep(run, evals, best_step)
    if keep is not None:
        evidence.append(keep.evidence)
    wd = run.config.get_entry("weight_decay")
    if wd is not None:
        evidence.append(Evidence(summary=f"weight_decay={wd.value!r}", source=wd.source,
                                 key="weight_decay", numbers={"weight_decay": wd.value}))

    message = (f"The model overfits: the eval loss was best at step {best_step} ({best:.4g}) "
               f"and rose to {last:.4g} by step {last_step}"
               + (f" while the train loss fell to {train_end:.4g}" if train_end is not None
                  else " (the train loss was not logged)")
               + (" - it memorised the training set." if memorised else "."))
    confidence = (0.6 + 0.1 * (train_end is not None) + 0.1 * memorised
                  + 0.1 * min(1.0, rise) + 0.05 * min(2, above - ctx["min_rising_evals"]))
    return ctx.finding(
        message=message, severity=Severity.ERROR, confidence=confidence, cause="overfitting",
        step=best_step, evidence=evidence,
        advice=_advice(run, best_step, best, keep, wd.value if wd else None),
    )


def _smoothed(run: Run, evals: pd.Series, ctx: RuleContext) -> Finding | None:
    """The third reading, for a noisy eval loss: its running median (``smooth_window`` evals,
    centred) at its lowest, and the median of the last ``smooth_window`` evals (a window
    disjoint from the lowest one) at least ``rel_rise`` above it, out of at least twice
    ``smooth_window`` evals; while the training loss fell by ``stale_train_drop`` from there
    to the end and the generalisation gap (eval - train) is positive at the end and wider
    than at the low. A
    noisy floor has a running median that stays level; a real rise lifts it. The step is the
    lowest eval inside the lowest window."""
    w = int(ctx["smooth_window"])
    values, steps = evals.to_numpy(dtype=float), evals.index.to_numpy()
    n, h = len(values), w // 2
    if w < 2 or n < 2 * w:
        return None
    running = np.array([np.median(values[max(0, i - h):i + h + 1]) for i in range(n - h)])
    low_i = int(np.argmin(running))
    low, end = float(running[low_i]), float(np.median(values[-w:]))
    if low <= 0 or low_i + h >= n - w or end < low * (1 + ctx["rel_rise"]):
        return None
    window = slice(max(0, low_i - h), low_i + h + 1)
    best_i = max(0, low_i - h) + int(np.argmin(values[window]))
    train_low, train_end = _train_levels(run, int(steps[low_i]), int(ctx["train_points"]))
    if (train_low is None or train_end is None or train_low <= 0
            or (train_low - train_end) / train_low < ctx["stale_train_drop"]):
        return None  # the train loss not logged or barely falling: a converged run's wander
    if end <= train_end or end - train_end <= low - train_low:
        return None  # eval not above train at the end, or the gap did not widen
    rise = (end - low) / low
    evidence = Evidence(
        summary=f"running median of {w} evals: {low:.4g} around step {int(steps[low_i])}, "
                f"{end:.4g} over the last {w} ({rise:+.0%}); gap eval - train "
                f"{low - train_low:.4g} -> {end - train_end:.4g}",
        tag="eval_loss", steps=(int(steps[low_i]), int(steps[-1])),
        numbers={"running_low": low, "running_end": end, "rise": rise, "window": w},
    )
    bar = float(values[best_i]) * (1 + ctx["rel_rise"])
    above = int((values[best_i + 1:] >= bar).sum())
    train_best, _ = _train_levels(run, int(steps[best_i]), int(ctx["train_points"]))
    return _overfits(run, ctx, evals, best_i, above, bar, train_best, train_end, evidence)


def _stale(values: np.ndarray, best_i: int, ctx: RuleContext) -> bool:
    """The eval loss stayed above its best for the last ``stale_evals`` evals or more (at
    least ``stale_share`` of all), their median ``stale_rise`` above it: what early stopping
    calls no improvement for its patience."""
    after = values[best_i + 1:]
    best = float(values[best_i])
    return (len(after) >= ctx["stale_evals"] and len(after) >= ctx["stale_share"] * len(values)
            and best > 0 and float(np.median(after)) >= best * (1 + ctx["stale_rise"]))


def _train_levels(run: Run, best_step: int, points: int) -> tuple[float | None, float | None]:
    """The train loss around ``best_step`` and at the end (medians of a few points: of
    ``points``, or of half the logged points where there are fewer than twice as many,
    as a run that logs its train loss rarely has)."""
    loss = run.series("loss").sort_index()
    loss = loss[np.isfinite(loss.to_numpy(dtype=float))]
    points = min(points, len(loss) // 2)
    if points < 1:
        return None, None
    i = int(np.searchsorted(loss.index.to_numpy(), best_step))
    lo = max(0, min(i - points // 2, len(loss) - points))
    at_best = float(np.median(loss.to_numpy()[lo:lo + points]))
    return at_best, float(np.median(loss.to_numpy()[-points:]))


def _saved_steps(run: Run, last_step: int) -> list[int]:
    """Checkpoint steps: the ``checkpoint-N`` folders read, else multiples of ``save_steps``."""
    found = {int(m.group(1)) for s in run.sources if (m := _CHECKPOINT.search(s.path))}
    if found:
        return sorted(found)
    strategy = str(run.config.get("save_strategy") or "steps").lower()
    try:
        every = int(run.config.get("save_steps") or 0)
    except (TypeError, ValueError):
        every = 0
    if every <= 0 or "step" not in strategy:
        return []
    return list(range(every, last_step + 1, every))


@dataclass(frozen=True)
class _Keep:
    """The checkpoint to keep: its name, step (when known) and eval loss there."""

    name: str
    step: int | None
    eval_loss: float | None
    evidence: Evidence


def _checkpoint_to_keep(run: Run, evals: pd.Series, best_step: int) -> _Keep | None:
    """The checkpoint to keep, or None when no checkpoint is known."""
    best_ckpt = run.config.get_entry("best_model_checkpoint")
    if best_ckpt is not None and best_ckpt.value:
        name = str(best_ckpt.value).rstrip("/").rsplit("/", 1)[-1]
        m = _CHECKPOINT.search(name)
        return _Keep(name, int(m.group(1)) if m else None, None, Evidence(
            summary=f"best_model_checkpoint={best_ckpt.value!r}", source=best_ckpt.source,
            key="best_model_checkpoint"))
    saved = _saved_steps(run, int(evals.index.max()))
    scored = [(float(evals[s]), s) for s in saved if s in evals.index]
    loss: float | None
    if scored:
        loss, step = min(scored)
    else:
        after = [s for s in saved if s >= best_step]
        if not after:
            return None
        step, loss = after[0], None
    where = "at the best step" if step == best_step else f"the best step {best_step} was not saved"
    at = f", eval loss {loss:.4g} there" if loss is not None else ""
    return _Keep(f"checkpoint-{step}", step, loss, Evidence(
        summary=f"checkpoint to keep: checkpoint-{step} ({where}{at}); saved: "
                + ", ".join(str(s) for s in saved[:10]) + (" ..." if len(saved) > 10 else ""),
        steps=(step, step), numbers={"checkpoint_step": step, "eval_loss": loss},
    ))


def _advice(run: Run, best_step: int, best: float, keep: _Keep | None,
            weight_decay: object) -> list[str]:
    """Concrete changes: keep the best weights, stop early, regularise, more data."""
    advice = []
    if keep is not None and keep.step in (None, best_step):
        advice.append(f"keep {keep.name} (the eval loss was best at step {best_step}); discard "
                      f"later checkpoints")
    elif keep is not None:
        there = ("" if keep.eval_loss is None
                 else f" (eval loss {keep.eval_loss:.4g} vs {best:.4g})")
        advice.append(f"the best weights (step {best_step}) were not saved: of the saved "
                      f"checkpoints keep {keep.name}{there}, or retrain to step {best_step}")
    eval_steps = run.config.get("eval_steps")
    save = f" (save_steps={eval_steps})" if eval_steps else ""
    advice.append(f"stop at the best step: save a checkpoint at every eval{save}, "
                  f"load_best_model_at_end=True, metric_for_best_model=\"eval_loss\", "
                  f"greater_is_better=False, EarlyStoppingCallback(early_stopping_patience=3)")
    epoch = run.series("epoch")
    epoch = epoch[np.isfinite(epoch.to_numpy(dtype="float64"))]  # a NaN epoch says nothing
    if len(epoch) and best_step >= int(epoch.index.min()):
        at = float(epoch[epoch.index <= best_step].iloc[-1])
        advice.append(f"train for fewer epochs: the best eval was at epoch {at:.3g} "
                      f"(max_steps={best_step} or num_train_epochs={max(1, round(at))})")
    else:
        advice.append(f"train for fewer steps (max_steps={best_step})")
    try:
        wd = float(weight_decay) if weight_decay is not None else None  # type: ignore[arg-type]
    except (TypeError, ValueError):
        wd = None
    if wd is not None and wd < 0.01:
        advice.append(f"add regularisation: weight_decay=0.01-0.1 (now {wd:g}) and dropout")
    else:
        advice.append("add regularisation: more weight decay, dropout")
    advice.append("get more training data or augment it; check for noisy labels")
    return advice
