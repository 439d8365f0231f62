"""CRASH001: a rank raised an exception and the others failed because of it."""

from __future__ import annotations

from typing import Any

import pandas as pd

from autopsy.model.finding import Evidence, Family, Finding, Severity
from autopsy.model.ranklist import compact_ranks
from autopsy.model.run import Run
from autopsy.rules.context import RuleContext
from autopsy.rules.crash._failures import (
    CAUSE_ADVICE,
    Candidate,
    attributed,
    cascade_summary,
    claim_evidence,
    earliest,
    first_bad_step,
    user_frame,
)
from autopsy.rules.crash.thresholds import CRASH001
from autopsy.rules.exceptions import (
    SIGNATURES,
    ExceptionRow,
    Signature,
    exception_rows,
    interrupted_wait,
)
from autopsy.rules.registry import rule
from autopsy.signals.ranks import went_on_past

#: Exception kinds this rule reads.
EXCEPTION_KINDS: frozenset[str] = frozenset({"traceback", "error_file"})
#: Root kinds that other rules explain (an OOM, a host kill, a collective mismatch):
#: a rank with one of these is not this rule's.
EXPLAINED_KINDS: frozenset[str] = frozenset({"oom", "host_kill", "collective_mismatch"})
#: Events that say more than a bare ``Traceback`` line: when one is in the logs, a
#: traceback whose exception line was not read is not the cause by itself.
TELLING_KINDS: frozenset[str] = frozenset({
    "oom", "host_kill", "nan_loss", "overflow_skip", "nccl_timeout", "collective_timeout",
    "collective_mismatch", "rendezvous_timeout", "signal", "connection_closed", "nccl_warn",
})


def _own(r: ExceptionRow, telling: bool) -> Signature | bool | None:
    """The row's signature when it is this rule's (a crash), ``None`` for a plain
    exception, ``False`` when another family explains it or it says nothing."""
    d = r.row["details"] if isinstance(r.row["details"], dict) else {}
    if interrupted_wait(d, r.before) is not None:  # the user gave up on a stuck run: HANG006
        return False
    if r.signature is not None:
        return r.signature if r.signature.family is Family.CRASH else False
    if telling and not d.get("exception"):
        return False  # a traceback whose exception was not read: the other events say more
    return None


def _refined(sig: Signature | bool | None, first: Candidate, rows: pd.DataFrame,
             own: dict[Any, Signature | bool | None]) -> Signature | bool | None:
    """The signature of the exception that ended the rank, made more specific by the lines
    printed just before it in the same log at the same step: a device-side assert's
    ``RuntimeError: CUDA error: device-side assert triggered`` follows the kernel's
    assertion lines, which say what was asserted (a label id out of range). A signature
    earlier in the catalogue, of the same family, is the more specific one."""
    if not isinstance(sig, Signature):
        return sig
    row = first.row
    same = rows[(rows["source"].astype(str) == str(row["source"]))
                & (rows["rank"].astype("float").fillna(-1)
                   == (-1.0 if first.rank is None else float(first.rank)))]
    order = {s.name: i for i, s in enumerate(SIGNATURES)}
    best = sig
    for idx, other in same.iterrows():
        if idx == row.name:
            break
        o = own.get(idx)
        same_step = ((pd.isna(other["step"]) and pd.isna(row["step"]))
                     or other["step"] == row["step"])
        if (isinstance(o, Signature) and o.family is sig.family and same_step
                and order[o.name] < order[best.name]):
            best = o
    return best


@rule(
    code="CRASH001",
    name="rank-exception",
    family=Family.CRASH,
    causes=("exception", "cuda_error", "nccl_error", "segfault", "killed",
            "label_out_of_range"),
    thresholds=CRASH001,
)
def rank_exception(run: Run, ctx: RuleContext) -> Finding | None:
    """A rank raised an exception that killed the run.

    What happened:
        One process raised an exception of its own (a ``ValueError`` from a bad
        batch, an ``IndexError``, a ``KeyError``, an assertion...) and died; in a
        distributed job the other ranks then failed in the next collective: they
        timed out, lost their connection to the dead rank ("Connection closed by
        peer") or were SIGTERMed by the launcher. Those later errors are the
        cascade; the first exception of its own class is the root. Ranks are
        ordered by wall time when the logs have it, else by step, else by
        torchelastic's error report; within a rank, its last traceback (whose
        exception line was read) is the one that ended it, and the assertion lines
        printed just before a device-side assert name what was asserted.
        torchelastic's "Root Cause (first observed
        failure)" is checked, not trusted: it names the first child *it saw*
        exit, often a victim.

        When the run logged later steps after it (it was caught, or the job was
        restarted from a checkpoint and went on), it is a warning, not the verdict.

    Why it happens:
        A bug in the training or data code, or a bad sample that reaches only one
        rank's shard. Tracebacks of out-of-memory errors, host kills and
        collective mismatches are left to their own rules (OOM001, OOM002 and the
        mismatch rules).

    How to fix:
        Read the root traceback: fix the code at the user frame shown, or the
        sample it names; ignore the other ranks' timeouts and connection errors,
        they are consequences. Reproduce on one process at the step shown.

    Evidence shown:
        The exception type and message, the rank, the step it failed in (the step
        after the last one it logged), the innermost frame in user code and the
        traceback's file:line, how the other ranks failed, and whether
        torchelastic's root cause agrees. Confidence is ``confidence``, or
        ``confidence_disputed`` when several ranks raised exceptions of their own.
    """
    if run.events.empty:
        return None
    ev = attributed(run.events)
    kinds = ev["kind"].astype(str)
    explained = set(ev.loc[kinds.isin(EXPLAINED_KINDS), "rank"].dropna().astype(int))
    rows = ev[kinds.isin(EXCEPTION_KINDS) & (ev["role"] == "root")]
    every = exception_rows(run, ("root", "cascade", "info"), ctx)
    # an interrupt of a stuck run (HANG006) tells more than a traceback without its exception
    telling = bool(kinds.isin(TELLING_KINDS).any()) or any(
        interrupted_wait(r.row["details"] if isinstance(r.row["details"], dict) else None,
                         r.before) is not None for r in every)
    own = {r.row.name: _own(r, telling) for r in every if r.row["role"] == "root"}
    rows = rows.loc[pd.Series([own[idx] is not False for idx in rows.index], index=rows.index,
                              dtype=bool)]
    rows = rows[~rows["rank"].isin(explained)] if explained else rows
    if rows.empty:
        return None
    ranked = earliest(rows, ev, last=True)
    first = ranked[0]
    sig = _refined(own.get(first.row.name), first, rows, own)
    cause = sig.cause if isinstance(sig, Signature) and sig.cause else "exception"
    d = first.row["details"] if isinstance(first.row["details"], dict) else {}
    head, _, tail = str(first.row["message"] or "").partition(": ")
    exc = str(d.get("exception") or (head if tail and " " not in head else "Exception"))
    text = str(d.get("exc_message") or (tail if exc == head else first.row["message"]) or "")
    text = text.split("\n")[0]
    step = first_bad_step(first.step)
    who = f"rank {first.rank}" if first.rank is not None else "the process"
    where = f"{first.row['source']}:{first.row['line']}" if pd.notna(first.row["line"]) \
        else str(first.row["source"])
    evidence = [Evidence(
        summary=f"{who} raised {exc}: {text}" + (f" in step {step} (its log stops after "
                                                 f"step {first.step})" if step else ""),
        source=str(first.row["source"]),
        line=None if pd.isna(first.row["line"]) else int(first.row["line"]),
        numbers={"rank": first.rank, "step": step, "exception": exc},
    )]
    frame = user_frame(d)
    advice = []
    if exc == "Xid":  # the driver's report, not an exception the code raised
        who = f"the GPU at PCI {d.get('pci')}" if d.get("pci") else "a GPU"
        evidence[0] = Evidence(summary=f"{who} reported {text}", source=evidence[0].source,
                               line=evidence[0].line, numbers={"xid": d.get("xid")})
        advice.append(f"treat {who} as faulty: Xid {d.get('xid')} is a hardware or driver "
                      "fault (Xid 79: "
                      "fallen off the bus; 48, 63, 64, 92, 94, 95: ECC memory errors; 74: "
                      "NVLink; 13, 31, 43: a kernel fault, possibly the code's): drain the "
                      "node and run the vendor diagnostics (nvidia-smi -q, dcgmi diag -r 3) "
                      "before reusing it")
        advice.append("resume from the last checkpoint on healthy hardware")
    else:
        if frame:
            loc = (f"{frame.get('function', '?')} ({frame.get('file', '?')}:"
                   f"{frame.get('line', '?')})")
            evidence.append(Evidence(summary=f"raised in user code at {loc}",
                                     source=str(frame.get("file")), line=frame.get("line")))
            advice.append(f"fix the {exc} raised in {loc}: {text[:120]}")
        else:
            advice.append(f"fix the {exc} of the traceback at {where}: {text[:120]}")
        advice += CAUSE_ADVICE.get(cause, [])
    cascade, victims = (None, []) if first.rank is None else cascade_summary(run, first.rank, ctx)
    if cascade:
        evidence.append(Evidence(summary=cascade, numbers={"ranks": compact_ranks(victims)}))
        advice.append("ignore the other ranks' errors: they are consequences of "
                      f"rank {first.rank}'s exception")
    claim, agrees = claim_evidence(ev, first.rank)
    if claim:
        evidence.append(Evidence(summary=claim))
    others = [c for c in ranked[1:] if c.rank is not None]
    if others:
        evidence.append(Evidence(summary="other ranks raised exceptions of their own later: "
                                 + compact_ranks(c.rank for c in others if c.rank is not None)))
    if step is not None:
        advice.append(f"reproduce on a single process by running to step {step}")
    confidence = ctx["confidence_disputed"] if others else ctx["confidence"]
    if agrees:
        confidence = min(1.0, confidence + 0.05)
    later = went_on_past(run, step, first.rank)
    if later is not None:  # caught, or the job was resumed and went on: not what ended it
        evidence.append(Evidence(summary=f"the run went on after it: steps up to {later} "
                                         "were logged later (a restart or resume)"))
        return ctx.finding(
            message=f"{who[0].upper() + who[1:]} raised {exc}: {text[:160]}"
                    + (f" (step {step})" if step else "")
                    + f", but the run went on to step {later}: it was restarted or resumed.",
            severity=Severity.WARNING, confidence=confidence, cause=cause, step=step,
            ranks=() if first.rank is None else (first.rank,),
            evidence=evidence, advice=advice,
            title=f"{exc} on {who}, then the run went on",
        )
    verb = "reported" if exc == "Xid" else f"raised {exc}:"
    return ctx.finding(
        message=f"{who[0].upper() + who[1:]} {verb} {text[:160].rstrip('.')}"
                + (f" (step {step})" if step else "")
                + (f"; {cascade}" if cascade else "") + ".",
        severity=Severity.CRITICAL, confidence=confidence, cause=cause, step=step,
        ranks=() if first.rank is None else (first.rank,),
        evidence=evidence, advice=advice,
        title=f"{exc} on {who}",
    )
