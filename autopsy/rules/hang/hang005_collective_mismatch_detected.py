"""HANG005: a collective mismatch was detected and the ranks failed fast."""

from __future__ import annotations

import pandas as pd

from autopsy.model.finding import Evidence, Family, Finding, Severity
from autopsy.model.run import Run
from autopsy.rules.context import RuleContext
from autopsy.rules.crash._failures import shared_rank_status
from autopsy.rules.hang._fingerprints import FIELDS, from_flight_recorder, odd_ones
from autopsy.rules.hang.thresholds import HANG005
from autopsy.rules.registry import rule


@rule(
    code="HANG005",
    name="collective-mismatch-detected",
    family=Family.CRASH,
    causes=("collective_mismatch",),
    thresholds=HANG005,
)
def collective_mismatch_detected(run: Run, ctx: RuleContext) -> Finding | None:
    """The ranks raised on a detected collective mismatch.

    What happened:
        A rank raised "Detected mismatch between collectives" with the
        fingerprints of both sides (``TORCH_DISTRIBUTED_DEBUG=DETAIL``), or gloo
        aborted with "Received data size doesn't match expected size". The
        culprit is the odd one out: the rank whose fingerprint (op, shape,
        dtype) differs from the majority; with gloo's size error, the rank that
        detected it.

    Why it happens:
        Rank-dependent code calls a collective with a different shape, dtype or
        op on one rank (a per-rank statistic, a partial batch, a
        rank-conditional branch).

    How to fix:
        Make the culprit rank call the same collective with the same shape and
        dtype as the others; pad variable-size tensors or gather their sizes
        first.

    Evidence shown:
        Each rank's fingerprint (SequenceNumber, op, shape, dtype) and the
        field that differs.
    """
    ev = run.events
    if ev.empty:
        return None
    rows = ev[ev["kind"].astype(str) == "collective_mismatch"]
    if rows.empty:
        return None
    rows = rows[~rows["details"].map(from_flight_recorder)]
    if rows.empty:
        return None  # matched from Flight Recorder dumps: the ranks hung (HANG003)
    odd = odd_ones(rows, "gloo received a buffer of the wrong size")
    culprits, what, prints, seq = odd.culprits, odd.what, odd.prints, odd.seq
    status = shared_rank_status(run, ctx)
    last = status["last_step"].reindex(culprits).dropna() if not status.empty else None
    step = int(last.min()) + 1 if last is not None and len(last) else None
    evidence = [Evidence(summary=f"rank {r}: " + ", ".join(
                             f"{k}={v}" for k, v in zip(FIELDS, p, strict=True)),
                         numbers={"SequenceNumber": seq} if seq is not None else {})
                for r, p in sorted(prints.items())]
    evidence += [Evidence(summary=str(r["message"])[:200], source=r["source"],
                          line=None if pd.isna(r["line"]) else int(r["line"]))
                 for _, r in rows.head(3).iterrows()]
    return ctx.finding(
        message=f"collective mismatch on rank(s) {culprits}"
                + (f" in step {step}" if step is not None else "") + f": {what}",
        severity=Severity.CRITICAL, confidence=ctx["confidence"], cause="collective_mismatch",
        step=step, ranks=culprits, evidence=evidence,
        advice=[f"make {f'rank {culprits[0]}' if culprits else 'every rank'} call the same "
                "collective with the same shape and "
                "dtype as the others (pad variable-size tensors, or all_gather sizes first)",
                "move collectives out of rank-conditional branches"],
    )
