"""HANG003: the ranks disagreed on a collective and the job hung."""

from __future__ import annotations

from autopsy.model.finding import Evidence, Family, Finding, Severity
from autopsy.model.run import Run
from autopsy.rules.context import RuleContext
from autopsy.rules.hang._fingerprints import FIELDS, from_flight_recorder, odd_ones
from autopsy.rules.hang._stuck import classify
from autopsy.rules.hang.thresholds import HANG003
from autopsy.rules.registry import rule


@rule(
    code="HANG003",
    name="collective-mismatch",
    family=Family.HANG,
    causes=("collective_mismatch",),
    thresholds=HANG003,
)
def collective_mismatch(run: Run, ctx: RuleContext) -> Finding | None:
    """The ranks called mismatched collectives and timed out.

    What happened:
        The job ended in timeouts, and the timeouts show that the ranks did not
        run the same collective: at the same SeqNum one rank entered with a
        different number of elements (NumelIn) than the others, or one rank
        stayed stuck in a collective at an earlier call site while all the
        others had already got past it (they completed a collective it never
        finished, so theirs matched something else, and their values after it
        are garbage). The odd one out is the culprit.

    Why it happens:
        Rank-dependent code: a tensor shaped by the rank's data (a last partial
        batch, a per-rank statistic), a parameter used on some ranks only, a
        collective inside a rank-conditional branch. Without
        ``TORCH_DISTRIBUTED_DEBUG=DETAIL`` NCCL and gloo do not compare the
        calls; they hang or silently reduce buffers of different sizes.

    How to fix:
        Make the odd rank call the same collective with the same shape and
        dtype (pad or reduce fixed-size tensors, move the collective out of the
        rank-conditional branch). Rerun with ``TORCH_DISTRIBUTED_DEBUG=DETAIL``
        to get the fingerprints of both sides.

        Flight Recorder dumps show it directly: at a collective sequence number every
        rank reached, one rank's op, shapes or dtypes differ from the majority's.

    Evidence shown:
        The SeqNum and the NumelIn of each side, or where the odd rank waited
        (function, call site, step) and where the others were; from Flight Recorder
        dumps, each rank's fingerprint (op, shapes, dtypes) at that sequence number.
    """
    recorded = _recorded_mismatch(run, ctx)
    if recorded is not None:
        return recorded
    hang = classify(run, ctx)
    if hang.kind != "mismatch":
        return None
    odd = list(hang.culprits)
    numel = "numel_majority" in hang.numbers
    evidence = [Evidence(summary=clue, numbers={k: v for k, v in hang.numbers.items()
                                                if isinstance(v, int)}) for clue in hang.how]
    evidence += [Evidence(
        summary=f"rank {s.rank}: {s.kind} in {s.op or s.func}"
                + (f" SeqNum {s.seq} NumelIn {s.numel}" if s.numel is not None else "")
                + (f" at {s.site}" if s.site else "")
                + (f", last logged step {s.step}" if s.step is not None else ""),
        source=s.source, line=s.line) for s in hang.stuck.values()]
    at = f" in step {hang.step}" if hang.step is not None else ""
    return ctx.finding(
        message=f"collective mismatch{at}: rank(s) {odd} ran a different collective than the "
                f"others; {hang.how[0]}; the job then hung until the timeout",
        severity=Severity.CRITICAL,
        confidence=ctx["confidence_numel"] if numel else ctx["confidence_place"],
        cause="collective_mismatch", step=hang.step, ranks=odd, evidence=evidence,
        advice=[f"find the collective rank {odd[0]} calls with a different shape or at a "
                "different place (rank-dependent tensor sizes, rank-conditional branches)",
                "rerun with TORCH_DISTRIBUTED_DEBUG=DETAIL to see both fingerprints",
                "values reduced after the mismatch on the other ranks are corrupted: do not "
                "trust that step's metrics"],
    )


def _recorded_mismatch(run: Run, ctx: RuleContext) -> Finding | None:
    """A mismatch matched from Flight Recorder dumps (the ranks hung in it, no rank raised)."""
    ev = run.events
    if ev.empty:
        return None
    rows = ev[(ev["kind"].astype(str) == "collective_mismatch")
              & ev["details"].map(from_flight_recorder)]
    if rows.empty:
        return None
    odd = odd_ones(rows, "the ranks' Flight Recorder entries differ")
    pg = (rows["details"].iloc[0] or {}).get("pg")
    evidence = [Evidence(summary=f"rank {r}: " + ", ".join(
                    f"{k}={v}" for k, v in zip(FIELDS, p, strict=True)),
                    numbers={"SequenceNumber": odd.seq} if odd.seq is not None else {})
                for r, p in sorted(odd.prints.items())]
    evidence += [Evidence(summary=str(r["message"])[:200], source=str(r["source"]))
                 for _, r in rows.head(2).iterrows()]
    culprit = f"rank {odd.culprits[0]}" if odd.culprits else "the odd rank"
    return ctx.finding(
        message=f"collective mismatch: rank(s) {odd.culprits} ran a different collective than "
                f"the others as #{odd.seq} of process group {pg} ({odd.what}); the job then "
                "hung until the timeout (Flight Recorder)",
        severity=Severity.CRITICAL, confidence=ctx["confidence_numel"],
        cause="collective_mismatch", ranks=tuple(odd.culprits), evidence=evidence,
        advice=[f"find the collective {culprit} calls with a different op or shape at that "
                "point (a rank-conditional branch, a rank-dependent tensor size); the "
                "Flight Recorder frames of its entry name the call site",
                "rerun with TORCH_DISTRIBUTED_DEBUG=DETAIL to make the mismatch raise at once"],
    )
