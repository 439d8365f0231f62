"""SLOW003: training stalls every N steps (checkpoint saves, evaluation), at a cost."""

from __future__ import annotations

from autopsy.model.finding import Evidence, Family, Finding, Severity
from autopsy.model.run import Run
from autopsy.rules.context import RuleContext
from autopsy.rules.registry import rule
from autopsy.rules.slow._slow import seconds
from autopsy.rules.slow._stalls import run_stalls
from autopsy.rules.slow.thresholds import SLOW003

ADVICE: dict[str | None, list[str]] = {
    "save_steps": [
        "save asynchronously (torch.distributed.checkpoint.async_save, or a background "
        "thread that copies to storage) so training does not wait for the write",
        "write to fast local disk and upload in the background; save less often, or "
        "save only the model between full checkpoints (save_only_model)",
    ],
    "eval_steps": [
        "evaluate on a smaller held-out subset, or less often (eval_steps)",
        "raise per_device_eval_batch_size and use eval_accumulation_steps; skip "
        "generation-based metrics during training",
    ],
    None: [
        "find what runs every N steps: checkpoint saves, evaluation, a synchronous upload "
        "or logging call, garbage collection (gc.freeze() after setup), DataLoader "
        "workers restarting at each epoch (persistent_workers=True)",
    ],
}


@rule(
    code="SLOW003",
    name="periodic-stalls",
    family=Family.SLOW,
    causes=("periodic_stall",),
    thresholds=SLOW003,
)
def periodic_stalls(run: Run, ctx: RuleContext) -> Finding | None:
    """Training stalls every N steps, and the stalls cost a share of the run.

    What happened:
        Some steps take far longer than the median step: the logged interval holding
        one took at least ``min_extra_s`` seconds and ``ratio - 1`` median steps more
        than the median pace (logging every step: the step took ``ratio`` times the
        median), ``min_score`` robust deviations above it; this happens
        ``min_count`` times or more, and the stalls recur on a period (most gaps between
        them equal) or on the config's ``save_steps`` / ``eval_steps`` (the stall
        falls in the interval that ends at the multiple or the next one). Their cost
        is the time above the median; it is an error when it reaches ``share`` of
        the run's time, a warning from ``warn_share``. The step times come from a
        ``step_time`` tag or the wall time between logged steps; the first
        ``skip_first`` steps of every segment are left out, so the first step's
        warm-up is never a stall.

    Why it happens:
        Work that blocks training on a schedule: a synchronous checkpoint save
        (serialising the optimizer state, a slow or network filesystem, an upload),
        an evaluation loop, a metrics upload, a garbage-collection pause, DataLoader
        workers restarting every epoch.

    How to fix:
        Save asynchronously or to local disk first; save less often; evaluate on a
        subset or less often; keep loader workers alive (``persistent_workers=True``).
        The cost figures say what each change can win.

    Evidence shown:
        The stall steps, their period and the config interval they match, the
        median step time, each stall's length and the total time lost with its
        share of the run.
    """
    found = run_stalls(run, ctx)
    if found is None or not found.periodic:
        return None
    st = found.stalls
    if st.share < ctx["warn_share"]:
        return None
    severity = Severity.ERROR if st.share >= ctx["share"] else Severity.WARNING
    every = found.periods.get(st.matched) if st.matched else st.period
    what = {"save_steps": "checkpoint saves", "eval_steps": "evaluations"}.get(
        st.matched or "", "a periodic task")
    on = (f"every {st.matched}={every} steps ({what})" if st.matched
          else f"every {every} steps")
    times = found.times
    lengths = [float(times.seconds[s]) * int(times.gaps[s]) for s in st.steps]
    evidence = [
        Evidence(summary=f"{len(st.steps)} stalls at steps {list(st.steps[:12])}"
                 + ("..." if len(st.steps) > 12 else "") + f", {on}; each "
                 f"{seconds(min(lengths))}-{seconds(max(lengths))} against a median step of "
                 f"{seconds(st.median)}", source=times.source,
                 steps=(st.steps[0], st.steps[-1]),
                 numbers={"stalls": len(st.steps), "period": every, "median_s": st.median}),
        Evidence(summary=f"time lost in stalls: {seconds(st.extra_seconds)}, {st.share:.0%} of "
                 f"the {seconds(times.total)} the measured steps took",
                 numbers={"lost_s": round(st.extra_seconds, 4), "share": round(st.share, 4)}),
    ]
    if st.matched:
        entry = run.config.get_entry(st.matched)
        if entry is not None:
            evidence.append(Evidence(summary=f"the config sets {st.matched}={entry.value}",
                                     source=entry.source, key=st.matched))
    return ctx.finding(
        message=f"Training stalls {on}: {len(st.steps)} stalls from step {st.steps[0]} cost "
                f"{seconds(st.extra_seconds)}, {st.share:.0%} of the run's step time.",
        severity=severity, confidence=0.85 if st.matched else 0.7, cause="periodic_stall",
        step=st.steps[0], evidence=evidence, advice=ADVICE.get(st.matched, ADVICE[None]),
    )
