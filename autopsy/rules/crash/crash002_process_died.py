"""CRASH002: a process died without a Python exception of its own: a segfault, a device or
communication failure, a kill from outside."""

from __future__ import annotations

import pandas as pd

from autopsy.model.finding import Evidence, Family, Finding, Severity
from autopsy.model.run import Run
from autopsy.rules.context import RuleContext
from autopsy.rules.crash._failures import CAUSE_ADVICE, attributed, first_bad_step
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

        Else, a rank the launcher reports as failed with an exit code (torchelastic's
        ``failed (exitcode: 1) local_rank: 5``) whose error is not in the logs: the
        rank is named, and the other ranks' SIGTERM from the launcher is not their
        failure (confidence ``confidence_exit``). A tracker's record of the run's end
        counts the same: a W&B exit code, an MLflow run whose status is ``FAILED`` (an
        exception ended it) or ``KILLED``. An exit after the training loss went NaN or Inf
        is left to the NaN rules (a script that stops on a NaN loss exits with an error).
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
        if str(row["kind"]) == "traceback" and (not exc or exc.endswith("ChildFailedError")):
            continue  # cut before its exception, or the launcher's: no rank's own error
        d = row["details"] if isinstance(row["details"], dict) else {}
        if str(row["kind"]) == "signal" and d.get("who") == "launcher":
            continue  # the launcher stopping the others after a failure: its consequence
        if str(row["kind"]) in ("traceback", "error_file") and row["role"] == "root" and (
                sig is None or sig.family is Family.CRASH) and not (
                sig is not None and exc.endswith("CalledProcessError")):
            return None  # a rank's own exception: CRASH001's
        if sig is not None and sig.family is Family.CRASH:
            hits.append((row, sig))
    if not hits:
        return _failed_exit(run, ev, kinds, ctx)
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
        advice=list(CAUSE_ADVICE.get(sig.cause, [])),
        title=f"process died ({sig.name.replace('_', ' ')})",
    )


def _failed_exit(run: Run, ev: pd.DataFrame, kinds: pd.Series,
                 ctx: RuleContext) -> Finding | None:
    """A rank the launcher reports failed with an exit code (``failed (exitcode: 1)
    local_rank: 5``), its own error not in these logs: the launcher then stopped the others
    (``Sending process N closing signal SIGTERM``), which is not their failure."""
    failed = []
    for _, row in ev[kinds == "exit"].iterrows():
        d = row["details"] if isinstance(row["details"], dict) else {}
        code = d.get("exitcode")
        if (isinstance(code, int) and code > 0) or d.get("status") in ("FAILED", "KILLED"):
            failed.append((row, code))
    if not failed or _loss_went_nonfinite(run):
        return None  # an exit with no error of its own after a NaN loss: NaN rules explain it
    row, code = failed[0]
    status = row["details"].get("status") if isinstance(row["details"], dict) else None
    how = f"exit code {code}" if isinstance(code, int) else f"status {status}"
    rank = None if pd.isna(row["rank"]) else int(row["rank"])
    who = f"rank {rank}" if rank is not None else "a process"
    stopped = int(((kinds == "signal") & ev["message"].astype(str).str.contains(
        "closing signal", regex=False)).sum())
    # the rank's own last step, else (a launcher line about a rank whose lines carry no
    # rank) the last step the run logged: the one in progress is after it
    last = row["step"] if pd.notna(row["step"]) else (
        None if run.scalars.empty else run.scalars["step"].max())
    step = first_bad_step(None if last is None or pd.isna(last) else int(last))
    return ctx.finding(
        message=f"{who[0].upper() + who[1:]} failed with {how}"
                + (f" and the launcher stopped the {stopped} other process(es)" if stopped
                   else "")
                + ": the error that ended it is not in these logs.",
        severity=Severity.CRITICAL, confidence=ctx["confidence_exit"], cause=None, step=step,
        ranks=() if rank is None else (rank,),
        evidence=[Evidence(summary=str(row["message"])[:300], source=str(row["source"]),
                           line=None if pd.isna(row["line"]) else int(row["line"]),
                           numbers={"exitcode": code, "rank": rank})],
        advice=[f"read {who}'s own output for its traceback (torchrun --log-dir writes one "
                "file per rank; with --tee 3 or [rankN]: prefixes it is in the job log): the "
                "other ranks only received SIGTERM from the launcher",
                "exit code 1 is an uncaught Python exception; a negative code is a signal "
                "(-9: killed, the OOM killer; -11: a segfault)"],
        title=f"{who} failed ({how})",
    )


def _loss_went_nonfinite(run: Run) -> bool:
    """Whether the training loss was NaN or Inf at some logged point (a script that stops on
    a NaN loss exits with an error the NaN explains)."""
    import numpy as np

    loss = run.series("loss").to_numpy(dtype=float)
    return bool(loss.size) and not bool(np.isfinite(loss).all())
