"""NAN005: the loss or grad norm went NaN/Inf, and the run cannot say why."""

from __future__ import annotations

from autopsy.model.finding import Evidence, Family, Finding
from autopsy.model.run import Run
from autopsy.rules.context import RuleContext
from autopsy.rules.nan_inf._event import classify
from autopsy.rules.nan_inf.thresholds import CLASSIFY
from autopsy.rules.registry import rule


def _risks(run: Run) -> list[Evidence]:
    """Config entries that make a NaN more likely (shown as context, not as the cause)."""
    out = []
    for key, bad in (("max_grad_norm", lambda v: v in (None, 0, 0.0)),
                     ("warmup_steps", lambda v: v in (0, None)),
                     ("fp16", lambda v: v is True)):
        entry = run.config.get_entry(key)
        if entry is not None and bad(entry.value):
            out.append(Evidence(summary=f"{key}={entry.value}", source=entry.source,
                                numbers={key: str(entry.value)}))
    return out


@rule(
    code="NAN005",
    name="non-finite-values",
    family=Family.NAN_INF,
    requires=("loss|grad_norm",),
    thresholds=CLASSIFY,
)
def non_finite_values(run: Run, ctx: RuleContext) -> Finding | None:
    """The loss or grad norm went NaN/Inf (cause not determined)

    What happened:
        The loss or the grad norm became NaN/Inf, and the run does not show why: no
        grad norm logged (or fewer than ``spike_min_points`` points before the bad
        step), no loss explosion before it, no fp16 loss scaling. This is the fallback
        that makes sure a NaN is never missed; any explanation (NAN001 blow-up, NAN002
        bad batch, NAN003 fp16 overflow) replaces it. The step is the first non-finite
        loss or grad norm.

    Why it happens:
        Either an optimisation blow-up too fast to see in the logged points (a high
        LR, no warm-up, no clipping) or a bad batch / numerics bug at that step.

    How to fix:
        Log the grad norm every step (the HF Trainer does, with ``logging_steps=1``)
        to tell the two apart. Meanwhile inspect the batch at the reported step, and
        check the risky settings shown (no clipping, no warm-up, fp16).

    Evidence shown:
        The first non-finite step and how many points followed it, and the config
        entries that make a NaN more likely.
        The NaN/Inf rules share one classification of the event (the spike, explosion,
        fp16 and recovery thresholds): override those on every NAN rule alike.
    """
    event = classify(run, ctx)
    if event is None or event.kind != "unexplained":
        return None
    why = ("the run logs no grad norm" if not run.has("grad_norm") else
           f"the grad norm has only {event.grad_points} finite points before it")
    return ctx.finding(
        message=f"The {event.label} went {event.what} at step {event.step}; {why} and the "
                f"loss did not explode before it, so a blow-up cannot be told from a bad "
                f"batch.",
        severity=event.severity,
        confidence=0.5,
        step=event.step,
        evidence=[*event.evidence, *_risks(run)],
        advice=[
            "log the grad norm at every step to tell an optimisation blow-up from a bad batch",
            f"inspect the batch at step {event.step}{event.interval_note}",
            "if the learning rate is high, or clipping/warm-up are off: lower the LR, set "
            "max_grad_norm=1.0, add warm-up",
        ],
    )
