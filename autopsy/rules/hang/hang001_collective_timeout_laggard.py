"""HANG001: the ranks timed out in a collective one rank never reached."""

from __future__ import annotations

from autopsy.model.finding import Evidence, Family, Finding, Severity
from autopsy.model.run import Run
from autopsy.rules.context import RuleContext
from autopsy.rules.hang._stuck import classify
from autopsy.rules.hang.thresholds import HANG001
from autopsy.rules.registry import rule


@rule(
    code="HANG001",
    name="collective-timeout-laggard",
    family=Family.HANG,
    causes=("dead_rank", "straggler", "nccl_timeout"),
    thresholds=HANG001,
)
def collective_timeout_laggard(run: Run, ctx: RuleContext) -> Finding | None:
    """Ranks timed out in a collective that one rank never reached.

    What happened:
        Some ranks timed out waiting in a collective (an NCCL watchdog timeout,
        a gloo send/recv timeout, a stuck heartbeat) and the logs point at a
        laggard: the rank a desync report names, the rank that logged no
        timeout while the others did, the rank furthest behind in the collective
        sequence (SeqNum), or the rank whose log stops at an earlier step.
        ``dead_rank`` when the laggard stopped logging (silent, killed, raised),
        ``straggler`` when it still logged after the others gave up. With no
        laggard in the logs, the finding reports the timeout itself
        (``nccl_timeout``) on the ranks that timed out.

    Why it happens:
        A collective completes only when every rank enters it. One rank stuck
        in a hung data loader, a deadlock, a slow filesystem, a dead GPU or a
        crashed process that left no trace makes every other rank wait until
        the collective timeout.

    How to fix:
        Look at the laggard's last lines and at what it does just before the
        step it never finished (data loading, checkpoint I/O, a rank-0-only
        branch). Get stack traces of a live hang with ``py-spy dump``; set
        ``TORCH_NCCL_ASYNC_ERROR_HANDLING=1`` and
        ``TORCH_NCCL_DESYNC_DEBUG=1`` (or the flight recorder,
        ``TORCH_NCCL_TRACE_BUFFER_SIZE``) so the next timeout names the rank.

    Evidence shown:
        The ranks that timed out and in what (op, SeqNum), each clue naming the
        laggard, how the laggard ended and its last step. Confidence is
        ``confidence_named`` with a laggard, ``confidence_unnamed`` without.
    """
    hang = classify(run, ctx)
    if hang.kind not in {"dead", "straggler", "timeout"}:
        return None
    stuck = hang.stuck
    first = next(iter(stuck.values()))
    seq = f" SeqNum {first.seq}" if first.seq is not None else ""
    what = f"{first.op or 'a collective'}{seq}"
    evidence = [Evidence(
        summary=f"rank {s.rank}: {s.kind} in {s.op or s.func or 'a collective'}"
                + (f" (SeqNum {s.seq})" if s.seq is not None else "")
                + (f" at step {s.step}" if s.step is not None else ""),
        source=s.source, line=s.line,
        numbers={k: v for k, v in {"SeqNum": s.seq, "last_completed": s.last_completed}.items()
                 if v is not None},
    ) for s in stuck.values()]
    evidence += [Evidence(summary=clue) for clue in hang.how]
    waiting = sorted(stuck)
    if hang.kind == "timeout":
        return ctx.finding(
            message=f"ranks {waiting} timed out in {what}; the logs do not show which rank "
                    "never reached it (no desync report, every logged rank timed out at the "
                    "same place)",
            severity=Severity.CRITICAL, confidence=ctx["confidence_unnamed"],
            cause="nccl_timeout", step=None, ranks=waiting, evidence=evidence,
            advice=["the laggard is probably a rank missing from these logs: collect every "
                    "rank's log", "rerun with TORCH_NCCL_DESYNC_DEBUG=1 (or the NCCL flight "
                    "recorder) so the timeout names the lagging rank"],
        )
    lag = list(hang.culprits)
    cause = "straggler" if hang.kind == "straggler" else "dead_rank"
    ended = hang.numbers.get("ended", [])
    state = ("kept logging after the others gave up (slow, not dead)" if cause == "straggler"
             else f"stopped logging ({', '.join(ended)})" if ended
             else "wrote nothing in these files: only the other ranks' records show it")
    at = f" in step {hang.step}" if hang.step is not None else ""
    return ctx.finding(
        message=f"rank(s) {lag} never reached the collective{at}: ranks {waiting} timed out "
                f"waiting in {what}; rank(s) {lag} {state}",
        severity=Severity.CRITICAL, confidence=ctx["confidence_named"], cause=cause,
        step=hang.step, ranks=lag, evidence=evidence,
        advice=[f"read rank {lag[0]}'s last lines: what it does "
                + (f"before step {hang.step} " if hang.step is not None else "after its last "
                   "collective ")
                + "(data loading, I/O, a rank-conditional branch) is where it hung",
                "dump the stacks of a live hang with py-spy dump --pid <pid>",
                "set TORCH_NCCL_ASYNC_ERROR_HANDLING=1 and TORCH_NCCL_DESYNC_DEBUG=1"],
    )
