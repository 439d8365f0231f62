"""NAN006: the logs say the loss went NaN/Inf or the fp16 loss scale collapsed, where the
logged scalars do not show it."""

from __future__ import annotations

import pandas as pd

from autopsy.model.finding import Evidence, Family, Finding, Severity
from autopsy.model.run import Run
from autopsy.rules.context import RuleContext
from autopsy.rules.exceptions import exception_rows
from autopsy.rules.nan_inf._event import classify
from autopsy.rules.nan_inf._fp16 import logged_scale
from autopsy.rules.nan_inf.thresholds import CLASSIFY
from autopsy.rules.registry import rule
from autopsy.signals.ranks import as_int


def _step(row: pd.Series) -> int | None:
    """The step the message names, else the row's (details come from a log: anything)."""
    d = row["details"] if isinstance(row["details"], dict) else {}
    for v in (d.get("step"), d.get("iteration"), row["step"]):
        step = None if v is None or v is pd.NA else as_int(v)
        if step is not None:
            return step
    return None


@rule(
    code="NAN006",
    name="non-finite-in-logs",
    family=Family.NAN_INF,
    causes=("fp16_overflow",),
    thresholds=CLASSIFY,
)
def non_finite_in_logs(run: Run, ctx: RuleContext) -> Finding | None:
    """The logs say the loss went NaN/Inf, or the fp16 loss scale collapsed.

    What happened:
        The training framework said so in its log, where the logged scalars
        do not show it (or were not logged): detectron2's ``Loss became
        infinite or NaN at iteration=N``, TensorFlow's ``Model diverged with
        loss = NaN`` and ``NaN loss during training``, Keras's ``Invalid loss,
        terminating training``, Megatron's ``found NaN in local grad norm``,
        fairseq's ``FloatingPointError: Minimum loss scale reached``; or the
        fp16 loss scaler (DeepSpeed ``OVERFLOW!``, apex ``Gradient overflow``,
        fairseq ``overflow detected``) kept skipping steps until the scale fell
        to ``min_scale`` or below: every step overflows, the weights no longer
        change. A few skips while the scaler searches for its scale early on are
        normal and are not this rule's (see HLT001).

    Why it happens:
        The same causes as a NaN seen in the scalars: a learning rate too high
        for the model, no warm-up or clipping, a bad batch, or the fp16 range
        (activations or gradients beyond 65504) for a collapsing loss scale.

    How to fix:
        For a collapsing loss scale: train in bf16 where the hardware has it,
        lower the LR, clip gradients, find the layer that overflows (attention
        logits, an unscaled residual). For a NaN loss: inspect the batch at the
        step shown, lower the LR, add warm-up and clipping.

    Evidence shown:
        The framework's message with its step, or the loss-scale messages with
        the lowest scale reached. Defers to the scalar NaN/Inf rules (NAN001 to
        NAN005) when the scalars show the NaN.
    """
    if run.events.empty or classify(run, ctx) is not None:
        return None
    ev = run.events
    kinds = ev["kind"].astype(str)
    said = ev[kinds == "nan_loss"]
    raised = [(r.row, r.signature) for r in exception_rows(run, ("root", "cascade"), ctx)
              if r.signature is not None and r.signature.family is Family.NAN_INF]
    skips = ev[kinds == "overflow_skip"]
    scales = [(row, logged_scale(row["details"])) for _, row in skips.iterrows()]
    low = [(row, s) for row, s in scales if s is not None and s <= float(ctx["min_scale"])]
    last = raised[-1][1] if raised else None
    collapsed = last is not None and last.cause == "fp16_overflow"
    if collapsed or low:
        row = low[0][0] if low else raised[-1][0]
        floor = min(s for _, s in low) if low else None
        # the step is the first non-finite loss the logs name (NAN003's convention), else
        # where the collapse shows
        since = _step(row)
        step = _step(said.iloc[0]) if len(said) else since
        evidence = [Evidence(summary=str(row["message"])[:300], source=str(row["source"]),
                             line=None if pd.isna(row["line"]) else int(row["line"]),
                             numbers={"step": since, "lowest_scale": floor})]
        if raised:
            r = raised[-1][0]
            evidence.append(Evidence(summary=str(r["message"])[:300], source=str(r["source"]),
                                     line=None if pd.isna(r["line"]) else int(r["line"])))
        return ctx.finding(
            message="The fp16 loss scale collapsed"
                    + (f" to {floor:g}" if floor is not None else " to its minimum")
                    + f" after {len(skips)} overflow-skipped step(s)"
                    + (f", from step {since}" if since is not None else "")
                    + ": gradients overflow fp16 at every step, training no longer moves.",
            severity=Severity.CRITICAL, confidence=0.8, cause="fp16_overflow", step=step,
            evidence=evidence,
            advice=["train in bf16 if the hardware supports it",
                    "lower the learning rate and clip gradients (max_grad_norm=1.0)",
                    "find the layer whose activations overflow fp16 (attention logits, an "
                    "unscaled residual) and keep it in fp32"],
            title="fp16 loss scale collapsed",
        )
    rows = [row for _, row in said.iterrows()] + [row for row, _ in raised]
    if not rows:
        return None
    row = rows[0]
    step = _step(row)
    grads = [sig for r, sig in raised if r is row and sig.name == "nan_grad"]
    what = "gradient" if grads else "loss"
    return ctx.finding(
        message=f"The framework stopped on a non-finite {what}"
                + (f" at step {step}" if step is not None else "")
                + f": {str(row['message'])[:160]}",
        severity=Severity.CRITICAL, confidence=0.75, step=step,
        evidence=[Evidence(summary=str(row["message"])[:300], source=str(row["source"]),
                           line=None if pd.isna(row["line"]) else int(row["line"]),
                           numbers={"step": step})],
        advice=[f"inspect the batch at step {step}" if step is not None
                else f"find the step where the {what} first went non-finite (log every step)",
                "lower the learning rate, add warm-up and gradient clipping "
                "(max_grad_norm=1.0)"]
        + (["the gradient was NaN before the data-parallel reduction, on the rank named: "
            "re-run that rank's batch with anomaly detection (torch.autograd."
            "set_detect_anomaly) to find the op, and check its inputs (a zero loss weight, "
            "a division by a temperature of 0, log of 0)"] if grads else []),
        title=f"non-finite {what} reported by the framework",
    )
