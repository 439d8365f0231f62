"""Per-rank signals of a distributed run: root or cascade events; how each rank ended.

When one rank of a distributed job fails, the others fail *because of it*: they time
out in the collective the dead rank never joined, lose their connection to it, or are
SIGTERMed by the launcher. Those later errors are the **cascade**; the failure that
started it is the **root**. The classification below is data (tables of kinds and
message patterns) so that rules and the ``autopsy ranks`` command agree on it.

Roles (:func:`event_roles`):

- ``"root"``: a failure of the rank's own — :data:`ROOT_KINDS` (an OOM, a host kill,
  a collective mismatch), a ``traceback`` / ``error_file`` whose exception is not a
  cascade (see below), a ``signal`` that kills outright (:data:`ROOT_SIGNALS`).
- ``"cascade"``: :data:`CASCADE_KINDS` (timeouts, lost connections, heartbeat and
  desync reports, the launcher's ``exit`` / ``child_failed`` lines), any other
  ``signal`` (SIGTERM from the launcher...), and a ``traceback`` / ``error_file``
  whose exception type is in :data:`CASCADE_EXCEPTIONS` or whose message matches
  :data:`CASCADE_MESSAGE_PATTERNS` (a timeout, "Connection closed/reset by peer",
  an aborted NCCL communicator...).
- ``"info"``: everything else (:data:`INFO_KINDS`: checkpoints, overflow skips, NCCL
  warnings, restarts, and ``nan_loss``: a non-finite loss is the loss rules' business,
  it does not end a rank).
"""

from __future__ import annotations

import math
import numbers
import re
from typing import Any

import numpy as np
import pandas as pd

from autopsy.model.run import Run

#: Event kinds that are always a consequence of another rank's failure (or the launcher's).
CASCADE_KINDS: frozenset[str] = frozenset({
    "nccl_timeout", "collective_timeout", "connection_closed", "heartbeat_stuck",
    "desync_report", "rendezvous_timeout", "child_failed", "exit",
})
#: Event kinds that are a failure of the rank's own.
ROOT_KINDS: frozenset[str] = frozenset({"oom", "host_kill", "collective_mismatch"})
#: Event kinds that are notes, not failures.
INFO_KINDS: frozenset[str] = frozenset({
    "checkpoint_saved", "overflow_skip", "nccl_warn", "restart", "nan_loss", "stack_dump",
})
#: Kinds whose role depends on the exception they carry.
EXCEPTION_KINDS: frozenset[str] = frozenset({"traceback", "error_file"})
#: Launcher-level kinds: they say how a rank ended, not what it did.
LAUNCHER_KINDS: frozenset[str] = frozenset({"exit", "child_failed", "signal"})
#: Signals that kill a process outright (the kernel's OOM killer, ``kill -9``): a root.
ROOT_SIGNALS: frozenset[str] = frozenset({"SIGKILL", "Killed", "KILL"})

#: Exception types (last dotted component) that are a cascade.
CASCADE_EXCEPTIONS: frozenset[str] = frozenset({
    "ChildFailedError",      # torchelastic's summary of failed children
    "DistBackendError",      # NCCL error: remote process exited / network error
    "DistNetworkError",      # the store or a peer went away
    "DistStoreError",        # timed out waiting for clients
    "CalledProcessError",    # torch.distributed.launch's wrapper around a failed child
    "SignalException",       # torchelastic agent got a signal
})
#: Message patterns (case-insensitive regexes) of a cascade exception.
CASCADE_MESSAGE_PATTERNS: tuple[str, ...] = (
    r"timed?[ _-]?out",
    r"timeout",
    r"connection (?:closed|reset) by peer",
    r"communicator (?:was )?aborted",
    r"remote process exited",
    r"received errors while waiting",
    r"failed to pass monitoredbarrier",
    r"broken pipe",
)
_CASCADE_RE = re.compile("|".join(CASCADE_MESSAGE_PATTERNS), re.IGNORECASE)

#: ``ended`` values, in the order they are tested (the first that applies wins).
ENDINGS: tuple[str, ...] = (
    "oom", "killed", "raised", "timed_out", "silent", "terminated", "exited", "ok",
)
#: Exit codes of a process killed by SIGKILL (-9 from Python, 137 from a shell).
KILLED_EXITCODES: frozenset[int] = frozenset({-9, 137})
#: Exit codes of a process ended by SIGTERM.
TERMINATED_EXITCODES: frozenset[int] = frozenset({-15, 143})
#: Exit codes of a process aborted (SIGABRT, e.g. the NCCL watchdog).
ABORTED_EXITCODES: frozenset[int] = frozenset({-6, 134})

RANK_COLUMNS: tuple[str, ...] = (
    "last_step", "last_time", "ended", "exitcode", "first_error_kind", "first_error_step",
    "first_error_message", "first_error_source", "first_error_line", "root",
)


def _details(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def exception_name(details: dict[str, Any]) -> str:
    """Return the last dotted component of an event's exception type ("" if none)."""
    return str(details.get("exception") or "").rsplit(".", 1)[-1]


def is_cascade_exception(exception: str, message: str) -> bool:
    """Whether an exception (type, message) is a cascade of another rank's failure."""
    if exception.rsplit(".", 1)[-1] in CASCADE_EXCEPTIONS:
        return True
    return bool(_CASCADE_RE.search(message or ""))


def event_role(kind: str, message: str, details: dict[str, Any]) -> str:
    """Return the role (``"root"``, ``"cascade"`` or ``"info"``) of one event."""
    if kind in ROOT_KINDS:
        return "root"
    if kind in CASCADE_KINDS:
        return "cascade"
    if kind == "signal":
        return "root" if str(details.get("signal", "")) in ROOT_SIGNALS else "cascade"
    if kind in EXCEPTION_KINDS:
        exc = str(details.get("exception") or "")
        text = str(details.get("exc_message") or message or "")
        return "cascade" if is_cascade_exception(exc, text) else "root"
    return "info"


def event_roles(events: pd.DataFrame) -> pd.Series:
    """Return each event's role (``"root"``, ``"cascade"``, ``"info"``), aligned on ``events``."""
    if events.empty:
        return pd.Series([], index=events.index, dtype=object, name="role")
    roles = [
        event_role(str(k), "" if m is None else str(m), _details(d))
        for k, m, d in zip(events["kind"], events["message"], events["details"], strict=True)
    ]
    return pd.Series(roles, index=events.index, dtype=object, name="role")


def as_int(value: Any) -> int | None:
    """An int from a detail value (an int, or a string of digits); None for anything else
    (missing, NaN, a list, a dict...): details come from logs and may be odd."""
    if isinstance(value, bool):
        return None
    if isinstance(value, numbers.Integral):
        return int(value)
    if isinstance(value, float):
        return int(value) if value == value and abs(value) < 2**63 else None
    if isinstance(value, str):
        text = value.strip()
        if text.lstrip("-").isdigit() and len(text) < 19:
            return int(text)
    return None


def _pid_ranks(events: pd.DataFrame) -> dict[int, int]:
    """Map launcher pids to ranks from ``exit`` / ``child_failed`` rows."""
    out: dict[int, int] = {}
    for rank, det in zip(events["rank"], events["details"], strict=True):
        d = _details(det)
        pid = as_int(d.get("pid"))
        r = as_int(d["rank"] if d.get("rank") is not None else rank)
        if pid is not None and r is not None:
            out[pid] = r
    return out


def attributed_ranks(events: pd.DataFrame) -> pd.Series:
    """Return the events' ranks, launcher signals with a rank-less row given their pid's rank."""
    ranks = events["rank"].astype("Int64").copy()
    if events.empty:
        return ranks
    pids = _pid_ranks(events)
    for idx, det in zip(events.index, events["details"], strict=True):
        if pd.isna(ranks.at[idx]):
            pid = as_int(_details(det).get("pid"))
            if pid is not None and pid in pids:
                ranks.at[idx] = pids[pid]
    return ranks


class _Ev:
    """One event row as plain values (the per-rank work runs on these, not on frames)."""

    __slots__ = ("details", "kind", "line", "message", "role", "source", "step", "wall")

    def __init__(self, kind: str, role: str, details: dict[str, Any], step: Any, wall: float,
                 source: str, line: Any, message: Any) -> None:
        self.kind, self.role, self.details = kind, role, details
        self.step, self.wall, self.source, self.line, self.message = (step, wall, source,
                                                                      line, message)


def _missing(value: Any) -> bool:
    return value is None or value is pd.NA or (isinstance(value, float) and value != value)


def _by_rank(ev: pd.DataFrame, roles: pd.Series) -> dict[int, list[_Ev]]:
    """Each rank's events, in one pass over the columns, each rank's in order (:func:`_ordered`)."""
    out: dict[int, list[_Ev]] = {}
    if ev.empty:
        return out
    cols = zip(ev["rank"].tolist(), ev["kind"].astype(str).tolist(), roles.tolist(),
               ev["details"].tolist(), ev["step"].tolist(),
               ev["wall_time"].astype(float).tolist(), ev["source"].astype(str).tolist(),
               ev["line"].tolist(), ev["message"].tolist(), strict=True)
    for rank, kind, role, det, step, wall, source, line, message in cols:
        if _missing(rank):
            continue
        out.setdefault(int(rank), []).append(
            _Ev(kind, str(role), _details(det), step, wall, source, line, message))
    return {r: _ordered(evs) for r, evs in out.items()}


def _ordered(evs: list[_Ev]) -> list[_Ev]:
    """By wall time when every event is timed, else by (source, line); stable."""
    def line_key(e: _Ev) -> float:
        return math.inf if _missing(e.line) else float(e.line)

    if all(e.wall == e.wall for e in evs):
        return sorted(evs, key=lambda e: (e.wall, e.source, line_key(e)))
    return sorted(evs, key=lambda e: (e.source, line_key(e)))


def _exitcode(evs: list[_Ev]) -> int | None:
    codes: dict[str, int] = {}
    for e in evs:
        code = as_int(e.details.get("exitcode"))
        if code is not None and e.kind in ("child_failed", "exit") and e.kind not in codes:
            codes[e.kind] = code
    return codes.get("child_failed", codes.get("exit"))


def _signals(evs: list[_Ev]) -> set[str]:
    out: set[str] = set()
    for e in evs:
        if e.kind in LAUNCHER_KINDS and e.details.get("signal"):
            out.add(str(e.details["signal"]))
        if e.kind == "exit" and str(e.details.get("how", "")).lower().startswith("terminated"):
            out.add("SIGTERM")
    return out


def _ending(evs: list[_Ev], exitcode: int | None, others_failed: bool,
            stopped_early: bool) -> str:
    kinds = {e.kind for e in evs}
    signals = _signals(evs)
    if "oom" in kinds:
        return "oom"
    if ("host_kill" in kinds or exitcode in KILLED_EXITCODES
            or bool(signals & ROOT_SIGNALS)):
        return "killed"
    if any(e.role == "root" and e.kind not in LAUNCHER_KINDS for e in evs):
        return "raised"
    own_cascades = [e for e in evs if e.role == "cascade" and e.kind not in LAUNCHER_KINDS]
    if own_cascades and all(_terminated(e) for e in own_cascades):
        return "terminated"  # the launcher's SIGTERM, as the rank's own traceback says
    if own_cascades:
        return "timed_out"
    if others_failed or stopped_early:
        return "silent"
    if exitcode in TERMINATED_EXITCODES or "SIGTERM" in signals:
        return "terminated"
    if exitcode not in (None, 0):
        return "exited"
    return "ok"


#: A rank's own exception saying the launcher ended it: torchelastic's ``SignalException:
#: Process 4001 got signal: 15`` (SIGTERM), or a ``KeyboardInterrupt``/SIGINT it was sent.
_TERMINATED_RE = re.compile(r"got signal:?\s*(?:15|2)\b|\bSIGTERM\b|\bSIGINT\b")


def _terminated(e: _Ev) -> bool:
    """Whether a rank's own cascade event says it was ended by a signal it was sent."""
    name = exception_name(e.details)
    text = str(e.details.get("exc_message") or e.message or "")
    return (name in ("SignalException", "KeyboardInterrupt")
            or "SignalException" in text) and (name == "KeyboardInterrupt"
                                               or bool(_TERMINATED_RE.search(text)))


def _first_error(evs: list[_Ev]) -> _Ev | None:
    """The rank's first root event, else its first own cascade, else its first launcher line.

    A torchelastic ``error_file`` (error.json, a copy of the traceback) is taken only when
    the rank's log holds no line of the same role: the log line has a step and a line.
    """
    tests = (lambda e: e.role == "root",
             lambda e: e.role == "cascade" and e.kind not in LAUNCHER_KINDS,
             lambda e: e.role == "cascade")
    for test in tests:
        hits = [e for e in evs if test(e)]
        if hits:
            logged = [e for e in hits if e.kind != "error_file"]
            return (logged or hits)[0]
    return None


def _scalar_tops(scalars: pd.DataFrame) -> tuple[dict[int, int], dict[int, float]]:
    """Per rank, the highest step and the latest wall time of its scalar points.

    Works on the numpy columns with one table indexed by rank (no sort, no copy of
    the frame), so a million points cost a few MB, not a sort's worth.
    """
    if scalars.empty:
        return {}, {}
    codes = scalars["rank"].to_numpy(dtype="int64", na_value=-1)
    has = codes >= 0
    if not has.any():
        return {}, {}
    steps = scalars["step"].to_numpy()
    walls = scalars["wall_time"].to_numpy()
    if not has.all():
        codes, steps, walls = codes[has], steps[has], walls[has]
    top = int(codes.max())
    if top < 1 << 22:
        inv, n = codes, top + 1
    else:  # sparse, huge rank numbers: number them first
        uniq, inv = np.unique(codes, return_inverse=True)
        n = len(uniq)
    top_step = np.full(n, np.iinfo(np.int64).min, dtype=np.int64)
    np.maximum.at(top_step, inv, steps)
    top_wall = np.full(n, -np.inf)
    np.fmax.at(top_wall, inv, walls)
    seen = np.flatnonzero(top_step > np.iinfo(np.int64).min)
    names = seen if top < 1 << 22 else uniq[seen]
    return ({int(r): int(top_step[i]) for r, i in zip(names, seen, strict=True)},
            {int(r): (float(top_wall[i]) if np.isfinite(top_wall[i]) else np.nan)
             for r, i in zip(names, seen, strict=True)})


def rank_status(run: Any) -> pd.DataFrame:
    """Return one row per rank known from scalars or events (index ``rank``).

    Columns: ``last_step``, ``last_time``, ``ended`` (one of :data:`ENDINGS`),
    ``exitcode``, ``first_error_kind``, ``first_error_step``, ``first_error_message``,
    ``first_error_source``, ``first_error_line`` (the rank's first root event, else its
    first cascade event; its step is the reader's, i.e. the last step the rank logged
    before the error), ``root`` (the rank has a root event). ``silent`` means no
    error of its own while another rank has one, or a log that stops at an earlier
    step than the other ranks'.
    """
    scalars: pd.DataFrame = run.scalars
    events: pd.DataFrame = run.events
    ev = events.assign(rank=attributed_ranks(events)) if not events.empty else events
    roles = event_roles(ev)
    scalar_steps, scalar_times = _scalar_tops(scalars)
    ranks: set[int] = set(scalar_steps)
    if not ev.empty:
        ranks |= {int(r) for r in ev["rank"].dropna().unique()}
    rows: list[dict[str, Any]] = []
    # each rank's events as plain records, grouped in one pass: per-rank work on frames
    # (or a filter per rank) would cost seconds per thousand ranks
    per_rank = _by_rank(ev, roles)
    max_step = max(scalar_steps.values(), default=None)
    failing = {r for r, evs in per_rank.items()
               if any(e.role != "info" and e.kind not in LAUNCHER_KINDS for e in evs)}
    for r in sorted(ranks):
        evs = per_rank.get(r, [])
        last_step = scalar_steps.get(r)
        steps = [int(e.step) for e in evs if not _missing(e.step)]
        if last_step is None and steps:
            last_step = max(steps)
        walls = [e.wall for e in evs if e.wall == e.wall]
        times = [max(walls) if walls else np.nan, scalar_times.get(r, np.nan)]
        last_time = float(np.nanmax(times)) if np.isfinite(np.asarray(times, float)).any() \
            else np.nan
        exitcode = _exitcode(evs) if evs else None
        stopped_early = (r in scalar_steps and max_step is not None
                         and scalar_steps[r] < max_step)
        others_failed = len(failing) > (1 if r in failing else 0)  # not failing - {r}: R²
        ended = _ending(evs, exitcode, others_failed, stopped_early) \
            if evs else ("silent" if (failing or stopped_early) else "ok")
        first = _first_error(evs) if evs else None
        rows.append({
            "rank": r, "last_step": last_step, "last_time": last_time, "ended": ended,
            "exitcode": exitcode,
            "first_error_kind": None if first is None else first.kind,
            "first_error_step": None if first is None or _missing(first.step)
            else int(first.step),
            "first_error_message": None if first is None else first.message,
            "first_error_source": None if first is None else first.source,
            "first_error_line": None if first is None or _missing(first.line)
            else int(first.line),
            "root": any(e.role == "root" for e in evs),
        })
    out = pd.DataFrame(rows, columns=["rank", *RANK_COLUMNS])
    for col in ("rank", "last_step", "exitcode", "first_error_step", "first_error_line"):
        out[col] = out[col].astype("Int64")
    out["last_time"] = out["last_time"].astype(float)
    out["root"] = out["root"].astype(bool)
    for col in ("ended", "first_error_kind", "first_error_message", "first_error_source"):
        out[col] = out[col].astype(object)
    return out.set_index("rank")


def went_on_past(run: Run, step: int | None, rank: int | None = None) -> int | None:
    """The last step logged if it is beyond ``step``, else None.

    A failure at ``step`` after which the run logged later steps did not end the run:
    it was caught, or the job was restarted (a resume from a checkpoint) and went on.
    With ``rank``, only that rank's steps count (when it logged any): in a job that
    died, the other ranks may have logged a step further than the one that failed.
    """
    if step is None or run.scalars.empty:
        return None
    steps = run.scalars["step"]
    if rank is not None:
        own = steps[run.scalars["rank"] == rank]
        if len(own):
            steps = own
    last = int(steps.max())
    return last if last > step else None
