"""CRASH002: a process died without a Python exception of its own: a segfault, a device or
communication failure, a kill from outside."""

from __future__ import annotations

import pandas as pd

from autopsy.model.finding import Evidence, Family, Finding, Severity
from autopsy.model.run import Run
from autopsy.rules.context import RuleContext
from autopsy.rules.crash._failures import attributed
from autopsy.rules.crash.thresholds import CRASH002
from autopsy.rules.exceptions import Signature, classify
from autopsy.rules.registry import rule

#: Event kinds whose text may say how a process died.
DEATH_KINDS: frozenset[str] = frozenset({
    "traceback", "error_file", "signal", "nccl_warn", "connection_closed", "exit",
    "child_failed"})
#: Kinds another family's rules explain: with one of these in the logs, this rule is silent.
OTHER_ROOTS: frozenset[str] = frozenset({
    "oom", "host_kill", "nccl_timeout", "collective_timeout", "heartbeat_stuck",
    "rendezvous_timeout", "collective_mismatch", "desync_report", "nan_loss"})
#: What to do per cause.
ADVICE: dict[str, str] = {
    "segfault": "a segfault is in native code: update the driver, CUDA, PyTorch and the "
                "extension named in the log (a mismatched build is the usual cause); run "
                "with `python -X faulthandler` to get the Python stack at the fault",
    "cuda_error": "rerun with CUDA_LAUNCH_BLOCKING=1 to find the failing kernel; an ECC or Xid "
                  "error is the GPU itself (check `nvidia-smi -q -d ECC`, dmesg), so drain "
                  "that node",
    "nccl_error": "a rank died or the network failed: look for the first rank that died "
                  "(autopsy ranks on every rank's log); check the NICs and NCCL_IB_* settings; "
                  "NCCL_DEBUG=INFO shows the failing link",
    "killed": "the scheduler stopped the job (time limit, preemption, requeue): save "
              "checkpoints often enough and resume; ask for more time or a non-preemptible "
              "partition",
    "label_out_of_range": "check the label ids against the number of classes",
}


def _text(row: pd.Series) -> tuple[str, str]:
    d = row["details"] if isinstance(row["details"], dict) else {}
    return str(d.get("exception") or ""), " ".join(
        str(x) for x in (d.get("exc_message"), d.get("why"), d.get("signal"), row["message"])
        if x)


@rule(code="CRASH002", name="process-died", family=Family.CRASH,
      causes=("segfault", "cuda_error", "nccl_error", "killed", "label_out_of_range"),
      thresholds=CRASH002)
def process_died(run: Run, ctx: RuleContext) -> Finding | None:
    """A process died without a Python exception of its own.

    What happened:
        The logs show how a process died but hold no exception raised by the
        training code itself: a ``Segmentation fault`` (or a Windows access
        violation, exit code 3221225477), a CUDA failure (illegal memory access,
        an uncorrectable ECC error, an Xid), a communication failure (an NCCL
        error, ``ncclRemoteError``, a connection reset by the peer) seen with no
        rank's own exception before it, or a kill from the scheduler (``CANCELLED
        ... DUE TO TIME LIMIT``, a preemption, a requeue). The first such line
        in log order is the one reported (the signatures of
        ``autopsy/rules/exceptions.py``).

        Silent when a rank raised an exception of its own (CRASH001 reports it),
        and when the logs hold an out-of-memory error, a kill by the OOM-killer,
        a collective timeout or a NaN (their families' rules explain the run).

    Why it happens:
        Native code crashed (a driver or extension built for another CUDA), the
        GPU or its memory failed, another rank or the network went away, or the
        scheduler reclaimed the allocation.

    How to fix:
        Per cause (see the advice): update or match the native stack, drain a
        failing node, find the first rank that died, checkpoint and resume.

    Evidence shown:
        The line that says how the process died. Confidence is ``confidence``.
    """
    if run.events.empty:
        return None
    ev = attributed(run.events)
    kinds = ev["kind"].astype(str)
    if kinds.isin(OTHER_ROOTS).any():
        return None
    hits: list[tuple[pd.Series, Signature]] = []
    for _, row in ev[kinds.isin(DEATH_KINDS)].iterrows():
        exc, text = _text(row)
        sig = classify({"exception": exc, "exc_message": text})
        if str(row["kind"]) in ("traceback", "error_file") and row["role"] == "root" and (
                sig is None or sig.family is Family.CRASH) and not (
                sig is not None and exc.endswith("CalledProcessError")):
            return None  # a rank's own exception: CRASH001's
        if sig is not None and sig.family is Family.CRASH:
            hits.append((row, sig))
    if not hits:
        return None
    row, sig = hits[0]
    assert sig.cause is not None
    rank = None if pd.isna(row["rank"]) else int(row["rank"])
    who = f"rank {rank}" if rank is not None else "a process"
    step = None if pd.isna(row["step"]) else int(row["step"])
    return ctx.finding(
        message=f"{who[0].upper() + who[1:]} died: {sig.why} "
                f"({str(row['message'])[:160]}).",
        severity=Severity.CRITICAL, confidence=ctx["confidence"], cause=sig.cause,
        step=step, ranks=() if rank is None else (rank,),
        evidence=[Evidence(summary=str(row["message"])[:300], source=str(row["source"]),
                           line=None if pd.isna(row["line"]) else int(row["line"]),
                           numbers={"signature": sig.name})],
        advice=[ADVICE[sig.cause]], title=f"process died ({sig.name.replace('_', ' ')})",
    )
