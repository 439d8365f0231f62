"""One run of a fleet: its JSON report and its table row, a pure function of its files.

:func:`diagnose_one` runs in a worker (a local process, or a Dask worker). Whatever
happens inside, it returns a result: autopsy failing on a run, or a run past its time
limit, is a row with an ``error``, never an exception that stops the fleet.
"""

from __future__ import annotations

import math
import signal
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from autopsy._version import __version__
from autopsy.fleet.signatures import is_hardware, signature

#: Rank counts above this are not listed host by host in a row (they are counted).
MAX_HOSTS_LISTED = 64


class RunTimeout(BaseException):
    """The run took longer than the fleet's per-run limit (a BaseException, like
    KeyboardInterrupt, so that no reader's own error handling can swallow it)."""


def _raise_in(thread_id: int) -> None:
    """Raise :class:`RunTimeout` in the thread ``thread_id`` at its next bytecode."""
    import ctypes

    ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(thread_id),
                                               ctypes.py_object(RunTimeout))


@contextmanager
def _time_limit(seconds: float | None) -> Iterator[None]:
    """Raise :class:`RunTimeout` in this thread after ``seconds``.

    In a process's main thread (a local pool worker, a run in the calling process) by a
    timer signal; in another thread (a Dask worker runs tasks in threads) by raising the
    exception in that thread from a timer thread, which takes effect between two Python
    bytecodes (a single long C call, such as one regex over a huge line, finishes first).
    """
    if not seconds:
        yield
        return
    if threading.current_thread() is threading.main_thread():
        def expired(signum: int, frame: Any) -> None:
            raise RunTimeout

        previous = signal.signal(signal.SIGALRM, expired)
        signal.setitimer(signal.ITIMER_REAL, seconds)
        try:
            yield
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, previous)
        return
    lock = threading.Lock()
    state = {"done": False}
    target = threading.get_ident()

    def fire() -> None:
        with lock:
            if not state["done"]:
                _raise_in(target)

    timer = threading.Timer(seconds, fire)
    timer.daemon = True
    timer.start()
    try:
        yield
    finally:
        with lock:
            state["done"] = True
        timer.cancel()


def empty_row(root: Path, path: Path) -> dict[str, Any]:
    """A row with every column, nothing known yet."""
    try:
        rel = path.relative_to(root).as_posix() or "."
    except ValueError:
        rel = path.as_posix()
    return {
        "path": rel, "root": str(root), "family": None, "cause": None, "code": None,
        "step": None, "ranks": [], "first_step": None, "last_step": None, "steps": None,
        "wall_start": None, "wall_end": None, "wall_hours": None, "hosts": [],
        "world_size": None, "last_checkpoint_step": None, "hours_since_checkpoint": None,
        "gpu_hours_lost": None, "signature": None, "deciding_line": None,
        "hardware": None, "problems": 0, "problem_kinds": [], "error": None,
        "elapsed_s": None, "autopsy_version": __version__,
    }


def _finite(values: Any) -> Any:
    import numpy as np

    arr = np.asarray(values, dtype="float64")
    return arr[np.isfinite(arr)]


def _wall_at(run: Any, step: int) -> float | None:
    """The run's wall time at ``step`` (the last logged at or before it)."""
    import numpy as np

    df = run.scalars
    if df.empty:
        return None
    steps = df["step"].to_numpy()
    wall = df["wall_time"].to_numpy(dtype="float64")
    keep = (steps <= step) & np.isfinite(wall)
    return float(wall[keep].max()) if keep.any() else None


def _hosts(run: Any) -> list[str]:
    hosts: dict[str, None] = {}
    if not run.events.empty:
        for d in run.events["details"]:
            if isinstance(d, dict) and isinstance(d.get("host"), str):
                hosts.setdefault(d["host"], None)
    return list(hosts)


def row_of(rep: Any, root: Path, path: Path) -> dict[str, Any]:
    """The table row of one run's :class:`~autopsy.report.report.Report`."""
    from autopsy.report.report import rank_count

    run, verdict = rep.run, rep.diagnosis.verdict
    row = empty_row(root, path)
    row.update(family=verdict.family.value, cause=verdict.cause, code=verdict.code,
               step=verdict.step, ranks=list(verdict.ranks))
    df = run.scalars
    if not df.empty:
        row["first_step"], row["last_step"] = int(df["step"].min()), int(df["step"].max())
        row["steps"] = row["last_step"] - row["first_step"] + 1
    walls = [_finite(df["wall_time"])] if not df.empty else []
    if not run.events.empty:
        walls.append(_finite(run.events["wall_time"]))
    import numpy as np

    wall = np.concatenate(walls) if walls else np.zeros(0)
    if wall.size:
        row["wall_start"], row["wall_end"] = float(wall.min()), float(wall.max())
        row["wall_hours"] = (row["wall_end"] - row["wall_start"]) / 3600
    hosts = _hosts(run)
    row["hosts"] = hosts[:MAX_HOSTS_LISTED]
    row["world_size"] = max(rank_count(run), 1)
    steps = [c.step for c in run.checkpoints if c.step is not None]
    if steps:
        row["last_checkpoint_step"] = max(steps)
    failed = verdict.family.value not in ("healthy", "unknown")
    if failed and row["wall_end"] is not None:
        since = row["wall_start"]
        if row["last_checkpoint_step"] is not None:
            at = _wall_at(run, row["last_checkpoint_step"])
            since = at if at is not None else since
        hours = max(0.0, (row["wall_end"] - since) / 3600)
        row["hours_since_checkpoint"] = hours
        row["gpu_hours_lost"] = hours * row["world_size"]
    finding = next((f for f in rep.diagnosis.findings if f.code == verdict.code), None)
    # the deciding error line where the verdict rests on one (an exception, an OOM, a
    # timeout: its first evidence cites a log line), else the verdict's title (a curve)
    cited = finding is not None and finding.evidence and finding.evidence[0].line is not None
    line = finding.evidence[0].summary if cited else (verdict.title or "")
    if failed or verdict.family.value == "unknown":
        row["deciding_line"] = line
        row["signature"] = signature(verdict.family.value, line)
        row["hardware"] = is_hardware(line)
    row["problems"] = len(run.problems)
    row["problem_kinds"] = sorted({p.kind for p in run.problems})
    for key in ("wall_hours", "hours_since_checkpoint", "gpu_hours_lost"):
        if row[key] is not None and not math.isfinite(row[key]):
            row[key] = None
    return row


def diagnose_one(root: str, path: str, sets: tuple[str, ...] = (),
                 timeout: float | None = None) -> dict[str, Any]:
    """``{"row": ..., "report": ...}`` of the run at ``path`` (``report`` is exactly what
    ``autopsy analyze PATH --format json`` prints, as a dict; None when autopsy could
    not diagnose the run, and ``row["error"]`` says why)."""
    from autopsy.api import is_empty, load_run, load_settings, nothing_readable, report

    start = time.monotonic()
    row = empty_row(Path(root), Path(path))
    out: dict[str, Any] = {"row": row, "report": None}
    try:
        with _time_limit(timeout):
            run = load_run(path)
            if is_empty(run):
                row["error"] = nothing_readable(run, path)
            else:
                rep = report(run, load_settings(sets=sets))
                out["report"] = rep.to_dict()
                out["row"] = row = row_of(rep, Path(root), Path(path))
    except RunTimeout:
        row["error"] = f"timed out after {timeout:g} s"
    except Exception as exc:  # autopsy failing on one run never stops the fleet
        row["error"] = f"autopsy failed: {type(exc).__name__}: {str(exc)[:200]}"
    row["elapsed_s"] = time.monotonic() - start
    return out
