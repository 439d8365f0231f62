"""RES013: after a resume the step counter, the epoch or the batches started over."""

from __future__ import annotations

import math

import numpy as np

from autopsy.model.finding import Evidence, Family, Finding, Severity
from autopsy.model.run import Run
from autopsy.rules.context import RuleContext
from autopsy.rules.registry import rule
from autopsy.rules.resume._boundary import (
    confidence,
    is_reset,
    part_check,
    restored_note,
    run_boundaries,
)
from autopsy.rules.resume.thresholds import RES013
from autopsy.signals._common import finite_xy
from autopsy.signals.resume import Boundary, pattern_repeat, sides, value_at

ADVICE_DATA = ("save the data position with every checkpoint (the sampler's epoch and the "
               "batches consumed, or a StatefulDataLoader state_dict; HF Trainer: keep "
               "ignore_data_skip=False) and restore it on resume, with the step counter")


def _median(y: np.ndarray) -> float:
    return float(np.median(y)) if y.size else math.nan


def _reset(run: Run, ctx: RuleContext, b: Boundary) -> Finding | None:
    """The step counter started over: the data position too, or the whole run."""
    _, y0 = finite_xy(run.series("loss", segment=b.previous))
    x1, y1 = finite_xy(run.series("loss", segment=b.segment))
    head = int(ctx["head"])
    start, last, now = _median(y0[:head]), _median(y0[-head:]), _median(y1[:head])
    steps = f"the step counter restarted at {b.resume_step} after the previous launch " \
            f"reached step {b.previous_last}"
    ev = [Evidence(f"segment {b.segment} starts at step {b.resume_step}; segment {b.previous} "
                   f"ran steps {b.previous_first}-{b.previous_last}",
                   steps=(b.previous_first, b.previous_last),
                   numbers={"resume_step": b.resume_step, "previous_last": b.previous_last})]
    if not (all(math.isfinite(v) for v in (start, last, now)) and start > 0
            and (start - last) / start >= float(ctx["min_fall"])):
        return None  # the loss did not fall enough before the restart to tell anything
    if all(math.isfinite(v) for v in (start, last, now)):
        ev.append(Evidence(f"loss: {start:.4g} at the previous launch's start, {last:.4g} at "
                           f"its end, {now:.4g} after the restart", tag="loss",
                           steps=(int(x1[0]), int(x1[min(head, x1.size) - 1])),
                           numbers={"loss_start": start, "loss_end": last, "loss_after": now}))
        fresh = start > last and now >= start - float(ctx["fresh_fraction"]) * (start - last)
        if fresh:
            return ctx.finding(
                message=f"{steps}, with the loss back at its starting level ({now:.4g}; it "
                        f"had reached {last:.4g}): the run started over without loading a "
                        "checkpoint (or a new run was written into the same folder)",
                severity=Severity.WARNING, confidence=0.7, cause="checkpoint_not_loaded",
                step=b.resume_step, evidence=ev,
                advice=["to resume, load the newest checkpoint (weights, optimizer, "
                        "scheduler, step, data position); give a new run its own folder"],
            )
    check = part_check(run, b, "data_position")
    if check is not None:
        ev.append(check.evidence)
    return ctx.finding(
        message=f"{steps}; the weights were restored (loss {now:.4g}, not back at "
                f"{start:.4g}) but the steps and the data start over: the same batches are "
                "seen again" + restored_note(check, "data position"),
        severity=Severity.ERROR, confidence=confidence(0.85, check),
        cause="sampler_not_restored", step=b.resume_step, evidence=ev,
        advice=[ADVICE_DATA, "restore the global step with the weights so the schedule, "
                "logging and saving go on from it"],
    )


def _signals(run: Run, ctx: RuleContext, b: Boundary
             ) -> tuple[list[Evidence], list[str], float]:
    """The epoch gone back, and the loss pattern repeating: evidence, phrases, confidence."""
    ev: list[Evidence] = []
    said: list[str] = []
    conf = 0.0
    if run.has("epoch"):
        prev_epoch, new_epoch = sides(run, b, "epoch")
        before = value_at(prev_epoch, b.resume_step)
        ex, ey = finite_xy(new_epoch)
        ey = ey[ex >= b.resume_step]
        if before is not None and ey.size:
            back = before[0] - float(ey[0])
            if back >= max(float(ctx["min_epoch_drop"]), 0.1 * before[0]):
                ev.append(Evidence(
                    f"epoch {before[0]:.4g} at step {before[1]} before the restart, "
                    f"{float(ey[0]):.4g} after it: the epoch position was lost",
                    tag="epoch", steps=(before[1], b.resume_step),
                    numbers={"epoch_before": before[0], "epoch_after": float(ey[0])}))
                said.append(f"the epoch went back from {before[0]:.4g} to {float(ey[0]):.4g}")
                conf = 0.85
    pr = pattern_repeat(*sides(run, b, "loss"), b.previous_first, b.resume_step,
                        points=int(ctx["pattern_points"]))
    if pr is not None and pr.points >= int(ctx["min_pattern_points"]) \
            and pr.from_start >= float(ctx["min_correlation"]) \
            and (math.isnan(pr.same_step) or pr.same_step < pr.from_start - 0.3):
        same = "" if math.isnan(pr.same_step) else f" (at the same steps: {pr.same_step:.2f})"
        ev.append(Evidence(
            f"the loss's step-to-step pattern after step {b.resume_step} repeats the previous "
            f"launch's from step {b.previous_first}: correlation {pr.from_start:.2f} over "
            f"{pr.points} steps{same}: the same batches again",
            tag="loss", steps=(b.resume_step, b.resume_step + pr.points - 1),
            numbers={"correlation_from_start": pr.from_start, "points": pr.points,
                     "correlation_same_step": None if math.isnan(pr.same_step)
                     else pr.same_step}))
        said.append(f"the loss pattern repeats the previous launch's from step "
                    f"{b.previous_first} (correlation {pr.from_start:.2f}): the same batches "
                    "again")
        conf = max(conf, 0.7) + (0.05 if conf else 0.0)
    return ev, said, conf


@rule(
    code="RES013",
    name="data-position-lost",
    family=Family.RESUME,
    causes=("sampler_not_restored", "checkpoint_not_loaded"),
    requires=("loss|epoch",),
    thresholds=RES013,
)
def data_position_lost(run: Run, ctx: RuleContext) -> Finding | None:
    """After a resume the step counter, the epoch or the batches started over.

    What happened:
        At a restart of the run one of these shows that the data position was not restored
        (cause ``sampler_not_restored``): the step counter started over (the new segment
        begins within 5% of the previous one's span from its first step, after at least 10
        steps) while the loss shows the weights were restored (the previous launch's loss
        fell by ``min_fall`` or more, and the loss after the restart did not go back to its
        start; with a smaller fall the restart says nothing and is passed over); the epoch
        went back by at least ``min_epoch_drop`` (or 10%) from the previous launch's epoch
        at the resume step; or the loss's step-to-step pattern after the resume repeats the
        previous launch's from its start (correlation of the detrended losses at the same
        offset at least ``min_correlation`` over at least ``min_pattern_points`` steps, and
        clearly above their correlation at the same steps): the same batches, in the same
        order, again. A step counter that started over with the loss back at its starting
        level is a run that loaded no checkpoint at all (or a new run in the same folder): a
        warning with cause ``checkpoint_not_loaded``.

    Why it happens:
        The resume restored the weights but not the sampler's epoch and offset
        (a plain DataLoader restarts its epoch; a DistributedSampler without
        set_epoch repeats its order), or not the step counter; HF Trainer with
        ignore_data_skip=True, or a dataloader state missing from the
        checkpoint. The model then trains again on batches it has just seen and
        never on the rest of the epoch: the loss looks better than it is and the
        data distribution is skewed.

    How to fix:
        Save the data position with every checkpoint (the epoch and batches
        consumed, a StatefulDataLoader state_dict, the sampler's seed and epoch)
        and the global step, and restore both on resume (HF: keep
        ignore_data_skip=False; accelerate: skip_first_batches).

    Evidence shown:
        The resume step and where the previous launch was; the epoch before and
        after; the correlation of the loss patterns; the losses around a reset;
        the checkpoint's data_position component and its status, when audited.
    """
    for b in run_boundaries(run, ctx):
        if b.source is None and is_reset(b):
            if run.has("loss"):
                return _reset(run, ctx, b)
            continue
        ev, said, conf = _signals(run, ctx, b)
        if not ev:
            continue
        check = part_check(run, b, "data_position")
        if check is not None:
            ev.append(check.evidence)
        return ctx.finding(
            message=f"the run resumed at step {b.resume_step} but the data position was not "
                    f"restored: {' and '.join(said)}" + restored_note(check, "data position"),
            severity=Severity.ERROR, confidence=confidence(conf, check),
            cause="sampler_not_restored", step=b.resume_step, evidence=ev,
            advice=[ADVICE_DATA],
        )
    return None
