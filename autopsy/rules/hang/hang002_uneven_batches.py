"""HANG002: one rank ran out of data and waits at the end while the others train on."""

from __future__ import annotations

from autopsy.model.finding import Evidence, Family, Finding, Severity
from autopsy.model.run import Run
from autopsy.rules.context import RuleContext
from autopsy.rules.hang._stuck import classify
from autopsy.rules.hang.thresholds import HANG002
from autopsy.rules.registry import rule


@rule(
    code="HANG002",
    name="uneven-batches",
    family=Family.HANG,
    causes=("uneven_batches",),
    thresholds=HANG002,
)
def uneven_batches(run: Run, ctx: RuleContext) -> Finding | None:
    """A rank ran out of batches one step early and waited at a barrier.

    What happened:
        Every rank timed out, but not in the same collective: one rank (a
        minority) timed out in a barrier after its training loop, while the
        majority timed out in the next step's gradient all-reduce. That rank
        finished its data early; it is not dead (a dead rank logs no timeout at
        all, which is HANG001).

    Why it happens:
        The ranks' shards have different numbers of batches (a dataset size not
        divisible by world size times batch size without ``drop_last``, an
        iterable dataset split unevenly, filtering per rank). The short rank
        leaves the loop; the others block in an all-reduce it will never join.

    How to fix:
        Give every rank the same number of batches: ``DistributedSampler(...,
        drop_last=True)`` and ``DataLoader(drop_last=True)``, equal shards for
        iterable datasets, or wrap the loop in DDP's ``Join`` context manager
        (``with Join([model]):``) for genuinely uneven inputs.

    Evidence shown:
        The rank that left its loop, where it waited (function and call site)
        and its last step; where the others waited.
    """
    hang = classify(run, ctx)
    if hang.kind != "uneven":
        return None
    short = list(hang.culprits)
    evidence = [Evidence(summary=clue) for clue in hang.how]
    evidence += [Evidence(
        summary=f"rank {s.rank}: {s.kind} in {s.func} at {s.site}"
                + (f", last logged step {s.step}" if s.step is not None else ""),
        source=s.source, line=s.line) for s in hang.stuck.values()]
    at = f"step {hang.step}" if hang.step is not None else "the last step"
    return ctx.finding(
        message=f"rank(s) {short} ran out of batches before {at} and waited at a barrier "
                f"while the others waited in {hang.numbers.get('others_in')}: uneven batches",
        severity=Severity.CRITICAL, confidence=ctx["confidence"], cause="uneven_batches",
        step=hang.step, ranks=short, evidence=evidence,
        advice=["use DistributedSampler(dataset, drop_last=True) and DataLoader(drop_last=True)",
                "give every rank an equal shard (iterable datasets: split by count, not by file)",
                "for inputs that are uneven by design, wrap the loop in "
                "torch.distributed.algorithms.Join([model])"],
    )
