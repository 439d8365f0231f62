"""Shared helpers of the crash and OOM rules: root candidates, cascades, torchelastic's claim."""

from __future__ import annotations

import itertools
import math
import re
from dataclasses import dataclass
from typing import Any

import pandas as pd

from autopsy.model.ranklist import compact_ranks
from autopsy.signals.ranks import attributed_ranks, event_roles, rank_status

#: Short names of cascade errors, for "ranks 0,1,3 then failed with ...".
CASCADE_LABELS: tuple[tuple[str, str], ...] = (
    (r"connection closed by peer", "Connection closed by peer"),
    (r"connection reset by peer", "Connection reset by peer"),
    (r"watchdog caught collective operation timeout", "an NCCL watchdog timeout"),
    (r"timed? ?out", "a collective timeout"),
    (r"communicator (?:was )?aborted", "an aborted NCCL communicator"),
    (r"remote process exited|DistBackendError", "a NCCL remote error"),
)


@dataclass(frozen=True)
class Candidate:
    """One rank's (or the rank-less process's) first root event of a kind."""

    rank: int | None
    row: pd.Series
    wall_time: float
    step: int | None
    claimed: bool


#: What to change for a cause the exception catalogue names, before the exception's own
#: fix: a device, a network or a signal is not fixed in the line that raised.
CAUSE_ADVICE: dict[str, list[str]] = {
    "cuda_error": [
        "re-run with CUDA_LAUNCH_BLOCKING=1 so the error is raised at the kernel that failed "
        "(CUDA errors are reported asynchronously, often at a later, innocent line)",
        "if the same node fails again with other code, suspect the GPU: an ECC or Xid error "
        "is the GPU itself (nvidia-smi -q -d ECC, dcgmi diag, the kernel log's Xid lines): "
        "drain that node"],
    "nccl_error": [
        "find the rank that failed first (its own exception, an OOM or a kill): the others "
        "lose their peer and report the network",
        "set NCCL_DEBUG=INFO (and TORCH_NCCL_ASYNC_ERROR_HANDLING=1) to see which link or "
        "host failed; check the NICs and the NCCL_IB_* settings of that host"],
    "segfault": [
        "get a native backtrace: run with PYTHONFAULTHANDLER=1 (or under gdb); a segfault "
        "is in native code, most often a driver, CUDA or extension (apex, flash-attn, custom "
        "ops) built for another torch or CUDA: update or rebuild them to match",
        "with DataLoader workers, a segfault in a worker is often a library that is not "
        "fork-safe: try multiprocessing_context='spawn' or num_workers=0 to isolate it"],
    "killed": [
        "the process was stopped from outside (the scheduler's time limit, a preemption, "
        "a kill): resume from the last checkpoint, and checkpoint often enough to lose "
        "little when it happens again",
        "if it was the time limit, ask for more time or save before it (a signal handler "
        "on SIGTERM/SIGUSR1)"],
    "label_out_of_range": [
        "a label id is outside [0, number of classes): check the dataset's label range and "
        "the model's number of outputs (num_labels), and the ignore index (-100)"],
}


def attributed(events: pd.DataFrame) -> pd.DataFrame:
    """The events with launcher rows given their pid's rank and a ``role`` column."""
    ev = events.assign(rank=attributed_ranks(events))
    return ev.assign(role=event_roles(ev))


def claimed_root(events: pd.DataFrame) -> tuple[int | None, pd.Series | None]:
    """The rank torchelastic's "Root Cause (first observed failure)" names, with its row."""
    for idx, kind in zip(events.index, events["kind"].astype(str), strict=True):
        d = events.at[idx, "details"]
        if kind == "child_failed" and isinstance(d, dict) and d.get("claimed_root"):
            r = d.get("rank", events.at[idx, "rank"])
            return (None if r is None or pd.isna(r) else int(r)), events.loc[idx]
    return None, None


def earliest(rows: pd.DataFrame, events: pd.DataFrame, *, last: bool = False) -> list[Candidate]:
    """Group candidate rows by rank; order ranks by wall_time, else step, else torchelastic.

    Each rank's candidate is its first row in log order (a log line rather than an
    ``error_file`` copy when both exist); its time and step are the earliest of its rows.
    With ``last``, it is the rank's last row whose exception line was read (else its last
    row), at that row's own step: the exception that ended the rank, not one it caught and
    logged earlier. Ranks are still ordered by their earliest row.
    """
    claimed, _ = claimed_root(events)
    out: list[Candidate] = []
    # plain columns, one sort, then each rank's run of rows: no frame per rank (a job of
    # thousands of ranks, each with its error line)
    ranks = rows["rank"].astype("float").fillna(-1).tolist()
    sources = rows["source"].astype(str).tolist()
    lines = rows["line"].tolist()
    kinds = rows["kind"].astype(str).tolist()
    steps = rows["step"].tolist()
    walls = rows["wall_time"].astype(float).tolist()
    details = rows["details"].tolist()

    def missing(value: Any) -> bool:
        return value is None or value is pd.NA or (isinstance(value, float) and value != value)

    order = sorted(range(len(ranks)), key=lambda i: (
        ranks[i], sources[i], math.inf if missing(lines[i]) else float(lines[i])))
    for r, members_iter in itertools.groupby(order, key=lambda i: ranks[i]):
        members = list(members_iter)
        pool = [i for i in members if kinds[i] != "error_file"] or members
        rank = None if r < 0 else int(r)
        known = [int(steps[i]) for i in members if not missing(steps[i])]
        step = min(known) if known else None
        if last:
            read = [i for i in pool if _exception_read(details[i])]
            pick = (read or pool)[-1]
            step = int(steps[pick]) if not missing(steps[pick]) else step
        else:
            pick = pool[0]
        timed = [walls[i] for i in members if walls[i] == walls[i]]
        out.append(Candidate(
            rank=rank, row=rows.iloc[pick],
            wall_time=min(timed) if timed else math.nan,
            step=step,
            claimed=rank is not None and rank == claimed,
        ))
    if out and all(not math.isnan(c.wall_time) for c in out):
        return sorted(out, key=lambda c: (c.wall_time, c.rank if c.rank is not None else -1))
    return sorted(out, key=lambda c: (c.step if c.step is not None else math.inf,
                                      not c.claimed,
                                      c.rank if c.rank is not None else -1))


def _exception_read(details: Any) -> bool:
    """Whether a traceback row's exception line was read (not a log cut short)."""
    return isinstance(details, dict) and bool(details.get("exception"))


def cascade_label(message: str | None) -> str:
    """A short name for a cascade error message."""
    text = message or ""
    for pattern, label in CASCADE_LABELS:
        if re.search(pattern, text, re.IGNORECASE):
            return label
    return text.split("\n")[0][:80] or "an error"


def shared_rank_status(run: Any, ctx: Any = None) -> pd.DataFrame:
    """:func:`rank_status` of the run, computed once per engine run when ``ctx`` (a
    :class:`~autopsy.rules.context.RuleContext`) is given: the crash, OOM and hang rules
    all need it, and it walks every rank's events."""
    if ctx is None:
        return rank_status(run)
    return ctx.cached("rank_status", lambda: rank_status(run))  # type: ignore[no-any-return]


def cascade_summary(run: Any, culprit: int | None,
                    ctx: Any = None) -> tuple[str | None, list[int]]:
    """Summarise how the other ranks failed: "ranks 0,1,3 then failed with ..."."""
    status = shared_rank_status(run, ctx)
    groups: dict[str, list[int]] = {}
    for r, row in status.iterrows():
        if culprit is not None and int(r) == culprit:
            continue
        if row["ended"] == "timed_out":
            label = f"failed with {cascade_label(row['first_error_message'])}"
        elif row["ended"] in ("silent", "terminated"):
            label = "stopped without an error of their own (terminated by the launcher)"
        elif row["ended"] == "exited":
            label = f"exited with code {row['exitcode']}"
        else:
            continue
        groups.setdefault(label, []).append(int(r))
    if not groups:
        return None, []
    parts = [f"rank{'s' if len(rs) > 1 else ''} {compact_ranks(rs)} then {label}"
             for label, rs in groups.items()]
    return "; ".join(parts), sorted(r for rs in groups.values() for r in rs)


def claim_evidence(events: pd.DataFrame, culprit: int | None) -> tuple[str | None, bool | None]:
    """Compare torchelastic's claimed root with the culprit: (summary, agrees)."""
    claimed, row = claimed_root(events)
    if claimed is None or row is None:
        return None, None
    code = row["details"].get("exitcode") if isinstance(row["details"], dict) else None
    if claimed == culprit:
        return (f"torchelastic's \"Root Cause (first observed failure)\" also names rank "
                f"{claimed} (exitcode {code})"), True
    return (f"torchelastic's \"Root Cause (first observed failure)\" names rank {claimed} "
            f"(exitcode {code}), but that rank is a victim: its error came after and "
            f"because of rank {culprit}'s"), False


def user_frame(details: dict[str, Any]) -> dict[str, Any] | None:
    """The innermost traceback frame in user code (not under site-packages or torch)."""
    uf = details.get("user_frame")
    if isinstance(uf, dict):
        return uf
    frames = details.get("frames") or []
    for fr in reversed(frames):
        path = str(fr.get("file", ""))
        if "site-packages" not in path and "/torch/" not in path and "dist-packages" not in path:
            return fr
    return None


def first_bad_step(step: int | None) -> int | None:
    """The step the rank failed in: the reader's event step is the last one it logged."""
    return None if step is None else step + 1
