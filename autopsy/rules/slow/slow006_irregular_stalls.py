"""SLOW006: long stalls at irregular steps cost a large share of the run."""

from __future__ import annotations

from autopsy.model.finding import Evidence, Family, Finding, Severity
from autopsy.model.run import Run
from autopsy.rules.context import RuleContext
from autopsy.rules.registry import rule
from autopsy.rules.slow._slow import seconds
from autopsy.rules.slow._stalls import run_stalls
from autopsy.rules.slow.thresholds import SLOW006


@rule(
    code="SLOW006",
    name="irregular-stalls",
    family=Family.SLOW,
    causes=("irregular_stall",),
    thresholds=SLOW006,
)
def irregular_stalls(run: Run, ctx: RuleContext) -> Finding | None:
    """Long stalls at irregular steps cost a large share of the run.

    What happened:
        Some steps take far longer than the median step (the same test as SLOW003:
        at least ``min_extra_s`` seconds and ``ratio - 1`` median steps beyond the
        median pace, ``min_score`` robust deviations above it, ``min_count`` times or
        more; fewer when they took at least ``lone_share`` of the run's step time and
        ``lone_min_s`` seconds), but
        not on a period nor on the config's save or eval interval. Their cost, the time above the
        median, is an error from ``share`` of the run's step time, a warning from
        ``warn_share``. The first ``skip_first`` steps of each segment are left out.

    Why it happens:
        Something outside the loop's schedule blocks it now and then: a shared or
        network filesystem with latency spikes, a noisy neighbour on the host
        (CPU, disk or network contention), host memory pressure and swapping,
        Python garbage collection of large object graphs, an occasional very long
        batch (length outliers), retries in a remote data source.

    How to fix:
        Correlate the stall steps with host metrics (I/O wait, memory, other jobs);
        stage data on local disk; ``gc.freeze()`` after setup and collect at fixed
        steps; cap or bucket sequence lengths; prefetch deeper
        (``prefetch_factor``) to ride out slow reads.

    Evidence shown:
        The stall steps, each stall's length against the median step, and the time
        lost with its share of the run.
    """
    found = run_stalls(run, ctx)
    if found is None:  # one or two stalls: a finding only when they took most of the run
        found = run_stalls(run, ctx, min_count=1)
        if (found is None or found.stalls.share < ctx["lone_share"]
                or found.stalls.extra_seconds < ctx["lone_min_s"]):
            return None
    if found.periodic:
        return None
    st = found.stalls
    if st.share < ctx["warn_share"]:
        return None
    severity = Severity.ERROR if st.share >= ctx["share"] else Severity.WARNING
    times = found.times
    lengths = [float(times.seconds[s]) * int(times.gaps[s]) for s in st.steps]
    return ctx.finding(
        message=f"{len(st.steps)} stall{'s' if len(st.steps) != 1 else ''} at irregular "
                f"steps from step {st.steps[0]} cost "
                f"{seconds(st.extra_seconds)}, {st.share:.0%} of the run's step time "
                f"(median step {seconds(st.median)}, longest stall {seconds(max(lengths))}).",
        severity=severity, confidence=0.6, cause="irregular_stall", step=st.steps[0],
        evidence=[Evidence(
            summary=f"stalls at steps {list(st.steps[:12])}" + ("..." if len(st.steps) > 12
                                                               else "")
            + f", each {seconds(min(lengths))}-{seconds(max(lengths))}; time lost "
            f"{seconds(st.extra_seconds)} of {seconds(times.total)}",
            source=times.source, steps=(st.steps[0], st.steps[-1]),
            numbers={"stalls": len(st.steps), "lost_s": round(st.extra_seconds, 4),
                     "share": round(st.share, 4), "median_s": st.median})],
        advice=["line the stall steps up with host metrics (I/O wait, memory, other jobs)",
                "stage the data on local disk; prefetch deeper (prefetch_factor)",
                "gc.freeze() after setup and gc.collect() at fixed steps",
                "cap or bucket sequence lengths so no batch is far longer than the rest"],
    )
