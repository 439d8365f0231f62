"""FLAT005: the loss is flat near its initial value and no cause could be established."""

from __future__ import annotations

from autopsy.model.finding import Evidence, Family, Finding, Severity
from autopsy.model.run import Run
from autopsy.rules.context import RuleContext
from autopsy.rules.not_decreasing._flat import FlatLoss, flat_loss
from autopsy.rules.not_decreasing.thresholds import FLAT
from autopsy.rules.registry import rule
from autopsy.signals.interval import start_in_intervals


def _unknowns(flat: FlatLoss) -> tuple[list[str], list[str]]:
    """(what is missing to tell the causes apart, what was ruled out)."""
    missing: list[str] = []
    ruled_out: list[str] = []
    if flat.grad is None:
        missing.append("no grad_norm is logged, so frozen parameters cannot be ruled out")
    elif flat.grad.n == 0:
        missing.append("the grad norm is never finite")
    else:
        ruled_out.append(f"gradients flow (grad norm median {flat.grad.median:.3g})")
    if flat.lr is None:
        missing.append("no learning rate is known (neither logged nor in a config), so it "
                       "cannot be compared with the regime's range")
    else:
        ruled_out.append(f"the peak LR {flat.lr.value:.3g} is not below the "
                         f"{flat.regime.label} range {flat.regime.range_text}")
    if flat.zero:
        missing.append("the loss reads 0 while the gradients are not zero, which no "
                       "known cause explains (check what is logged as the loss)")
    elif flat.chance is None:
        ruled_out.append("the loss is not at ln(num_labels) or ln(vocab_size), or neither "
                         "is known")
    return missing, ruled_out


def _starts_late(run: Run, flat: FlatLoss, ctx: RuleContext) -> bool:
    """Whether the judged series starts more than ``late_start_intervals`` logging
    intervals after step 0: a window cut from the middle of the run."""
    start = start_in_intervals(run.series(flat.tag).dropna().index)
    return start is not None and start > ctx["late_start_intervals"]


@rule(
    code="FLAT005",
    name="loss-flat",
    family=Family.NOT_DECREASING,
    requires=("loss|eval_loss",),
    thresholds=FLAT,
)
def loss_flat(run: Run, ctx: RuleContext) -> Finding | None:
    """The loss is not decreasing: flat near its initial value, cause not established.

    What happened:
        The training loss stayed near its initial value for the whole run: no
        downward trend beyond its noise. Training did not learn anything, but the
        signals needed to tell the usual causes apart are missing or inconclusive.

    Why it happens:
        The usual causes are: every label masked (FLAT001), frozen parameters
        (FLAT002), an LR too low for the regime (FLAT003), labels independent of the
        inputs (FLAT004). Each needs a signal: the grad norm to see whether gradients
        flow, the LR (logged or in the config) to compare it with the regime's range,
        ``num_labels``/``vocab_size`` to compare the loss with chance level. This
        finding says which of them was missing or ruled out.

    How to fix:
        Log the grad norm and the learning rate (the HF Trainer does by default), keep
        the model's config.json beside the run, and rerun autopsy. Meanwhile: overfit
        one small batch (it must reach near-zero loss), count the trainable parameters,
        and check one collated batch's labels.

    Evidence shown:
        The flat loss (level, change, noise, window), what is known of the grad norm
        and the LR, and the list of missing signals. Fires when the loss is flat near
        its initial value (at least ``min_points`` points, change within
        ``flat_rel_tol`` or the noise, drop from the first ``initial_points`` at most
        ``max_initial_drop``), its log starts within ``late_start_intervals`` logging
        intervals of step 0 (a window cut from mid-run may be a plateau after learning),
        and FLAT001-FLAT004 all stay silent.
    """
    flat = flat_loss(run, ctx.thresholds)
    if flat is None or flat.cause is not None or _starts_late(run, flat, ctx):
        return None
    missing, ruled_out = _unknowns(flat)
    evidence: list[Evidence] = [flat.loss_evidence()]
    for extra in (flat.grad_evidence(), flat.lr_evidence()):
        if extra is not None:
            evidence.append(extra)
    why = ("; ".join(missing) + ".") if missing else (
        "the known signals rule out the usual causes: " + "; ".join(ruled_out) + ".")
    advice = ["Overfit one small batch: if the loss cannot reach near 0, the data pipeline "
              "or the model is broken.",
              "Count trainable parameters and check one collated batch's labels "
              "((labels != -100).sum() > 0)."]
    if missing:
        advice.insert(0, "Log grad_norm and learning_rate (the HF Trainer does by default) "
                         "and keep the model's config.json with the run, then rerun autopsy.")
    return ctx.finding(
        message=f"The loss stays flat at {flat.level:.4g} over steps {flat.first_step}-"
                f"{flat.last_step}; the cause could not be established: {why}",
        severity=Severity.ERROR,
        confidence=0.5 + min(0.3, flat.n / 200),
        step=flat.first_step,
        evidence=evidence,
        advice=advice,
    )
