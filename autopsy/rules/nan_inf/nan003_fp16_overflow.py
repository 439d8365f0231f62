"""NAN003: fp16 overflow: the loss scale collapsed or steps were skipped in runs."""

from __future__ import annotations

from autopsy.model.finding import Family, Finding
from autopsy.model.run import Run
from autopsy.rules.context import RuleContext
from autopsy.rules.nan_inf._causes import blowup_cause
from autopsy.rules.nan_inf._event import classify
from autopsy.rules.nan_inf.thresholds import CAUSE, CLASSIFY
from autopsy.rules.registry import rule


@rule(
    code="NAN003",
    name="fp16-overflow",
    family=Family.NAN_INF,
    causes=("fp16_overflow",),
    requires=("config:fp16|config:mixed_precision|loss_scale|skipped_steps",),
    thresholds={**CLASSIFY, **CAUSE},
)
def fp16_overflow(run: Run, ctx: RuleContext) -> Finding | None:
    """fp16 overflow: the loss scale collapsed, steps were skipped, or the loss is inf

    What happened:
        The run trains in fp16 with a dynamic loss scaler, and the scaler lost: the
        loss scale fell to ``min_scale`` or by ``collapse_halvings`` halvings from its
        maximum after the scaler's warm-up, or steps were skipped on ``skip_run``
        consecutive logged points after it (a dropping ``loss_scale``, a growing
        ``skipped_steps``, or, in HF Trainer logs, a non-finite grad norm beside a
        finite loss), or the loss is inf, or the values stay non-finite. The step
        reported is the first non-finite loss or grad norm, else where the collapse
        began. The scaler's usual start (a few skips in the first
        ``scaler_warmup_steps`` steps while the scale drops from 65536, then finite
        again) and isolated later skips are normal and not reported.

    Why it happens:
        fp16 overflows above 65504. The scaler halves the scale and skips the step on
        every overflow; when activations or gradients keep overflowing (weights grown
        by a high LR, attention logits, a diverging run) it skips step after step and
        the scale collapses, or the forward pass itself returns inf.

    How to fix:
        Train in bf16 (``bf16=True``, ``fp16=False``) on Ampere or newer GPUs: same
        range as fp32, no loss scaling. Otherwise lower the LR and set
        ``max_grad_norm=1.0`` (the advice names the LR to use when it is high for the
        run's regime), and keep softmax/normalisation in fp32.

    Evidence shown:
        The loss scale's maximum and minimum with the halvings between them, the runs
        of skipped steps, the inf loss, the first non-finite step, the ``fp16``
        config entry with its source, and the LR against the run's regime.
        The NaN/Inf rules share one classification of the event (the spike, explosion,
        fp16 and recovery thresholds): override those on every NAN rule alike.
    """
    event = classify(run, ctx)
    if event is None or event.kind != "fp16_overflow":
        return None
    fp = event.fp16
    shown = "; ".join(fp.reasons[:2]) or (
        f"the {event.label} is {event.what} from step {event.step} and never recovers, which "
        "under a loss scaler means every step overflows")
    where = (f"The {event.label} is first {event.what} at step {event.step}. "
             if event.what != "overflowing" and fp.reasons
             and not any(f"step {event.step}" in r for r in fp.reasons[:2]) else "")
    hidden = (" The logged loss stays finite meanwhile (HF's logging_nan_inf_filter may hide a "
              "NaN loss)." if event.hidden else "")
    onset = event.blowup.onset if event.blowup is not None else event.step
    cause = blowup_cause(run, onset, ctx)
    advice = [
        "switch fp16 to bf16 (bf16=True, fp16=False) on Ampere or newer GPUs (A100, H100, "
        "RTX 30xx+): bf16 has fp32's range and needs no loss scaling",
        *(cause.advice_for[c] for c in ("lr_too_high", "no_clipping") if c in cause.advice_for),
        "keep overflow-prone ops in fp32 (softmax, layer norm, the loss)",
    ]
    if len(advice) == 2:
        advice.insert(1, "if bf16 is not available: lower the learning rate (2-3x) and set "
                         "max_grad_norm=1.0")
    if event.blowup is not None and event.blowup.spike is not None:
        sp = event.blowup.spike
        advice.insert(1, f"the grad norm spiked {sp.ratio:.3g}× at step {sp.step} before it: "
                         "lower the learning rate as well")
    return ctx.finding(
        message=f"fp16 overflow: {shown}. {where}The fp16 loss scaler could not keep the "
                f"values in range.{hidden}",
        severity=event.severity,
        confidence=min(0.95, 0.55 + 0.1 * len(fp.reasons) + 0.15 * fp.from_config),
        cause="fp16_overflow",
        step=event.step,
        evidence=[*event.evidence, *fp.evidence, *cause.evidence[:1]],
        advice=advice,
    )
