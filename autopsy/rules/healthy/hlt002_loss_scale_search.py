"""HLT002: the only thing the logs report is the fp16 loss scaler finding its scale."""

from __future__ import annotations

import pandas as pd

from autopsy.model.finding import Evidence, Family, Finding, Severity
from autopsy.model.run import Run
from autopsy.rules.context import RuleContext
from autopsy.rules.healthy.hlt001_loss_decreasing import FAILURE_EVENTS
from autopsy.rules.healthy.thresholds import HLT002
from autopsy.rules.nan_inf._fp16 import logged_scale
from autopsy.rules.registry import rule


@rule(code="HLT002", name="loss-scale-search", family=Family.HEALTHY,
      thresholds=HLT002)
def loss_scale_search(run: Run, ctx: RuleContext) -> Finding | None:
    """The fp16 loss scaler skipped a few steps while it found its scale: normal.

    What happened:
        The logs hold fp16 overflow messages (DeepSpeed ``OVERFLOW! Rank 0
        Skipping step. Attempted loss scale: 65536, reducing to 32768``, apex
        ``Gradient overflow. Skipping step``, fairseq ``overflow detected,
        setting loss scale to``), at most ``max_skips`` of them, the scale never
        fell to ``min_scale`` or below, and nothing in the logs reports a failure
        (no traceback, OOM, timeout, non-finite loss; a logged loss, if any,
        stays finite). A dynamic loss scaler starts high on purpose and halves
        the scale at each overflow until gradients fit in fp16; those first
        skipped steps are how it works, not a fault.

        ``max_skips`` is 64: DeepSpeed's highest default start (2^32) takes 32
        halvings to reach 1, and with ``hysteresis: 2`` each halving can take two
        overflows. ``min_scale`` is 1.0, the floor below which the NaN rules call
        the scale collapsed (NAN006, NAN003).

    Why it happens:
        The scaler's initial scale is larger than the gradients allow.

    How to fix:
        Nothing. To skip fewer steps, start lower (``initial_scale_power`` in
        DeepSpeed, ``init_scale`` of ``torch.amp.GradScaler``) or train in bf16.

    Evidence shown:
        How many steps were skipped and the lowest scale the scaler reached.
    """
    ev = run.events
    if ev.empty:
        return None
    kinds = ev["kind"].astype(str)
    if kinds.isin(FAILURE_EVENTS).any() or kinds.isin(("nan_loss",)).any():
        return None
    skips = ev[kinds == "overflow_skip"]
    if skips.empty or len(skips) > ctx["max_skips"]:
        return None
    scales = [s for s in map(logged_scale, skips["details"]) if s is not None]
    if not scales or min(scales) <= ctx["min_scale"]:
        return None
    if run.has("loss"):
        import numpy as np

        if not np.isfinite(run.series("loss").to_numpy(dtype=float)).all():
            return None
    first = skips.iloc[0]
    return ctx.finding(
        message=f"The fp16 loss scaler skipped {len(skips)} step(s) while it found its scale "
                f"(lowest {min(scales):g}): normal, nothing else in the logs reports a "
                f"failure.",
        severity=Severity.INFO, confidence=0.6,
        evidence=[Evidence(summary=str(first["message"])[:300], source=str(first["source"]),
                           line=None if pd.isna(first["line"]) else int(first["line"]),
                           numbers={"skips": len(skips), "lowest_scale": min(scales)})],
        advice=["nothing to fix; to skip fewer steps start the scaler lower or train in bf16"],
        title="fp16 loss-scale search (normal)",
    )
