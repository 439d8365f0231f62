"""HANG006: the run was stuck and the user (or the scheduler) stopped it."""

from __future__ import annotations

import pandas as pd

from autopsy.model.finding import Evidence, Family, Finding, Severity
from autopsy.model.run import Run
from autopsy.rules.context import RuleContext
from autopsy.rules.exceptions import exception_rows, interrupted_wait
from autopsy.rules.hang.thresholds import HANG006
from autopsy.rules.registry import rule


@rule(code="HANG006", name="interrupted-stall", family=Family.HANG,
      causes=("dataloader_hang",), thresholds=HANG006)
def interrupted_stall(run: Run, ctx: RuleContext) -> Finding | None:
    """The run was stuck, and whoever was waiting stopped it.

    What happened:
        The run ended in a ``KeyboardInterrupt`` (Ctrl-C) or a SIGTERM (``scancel``,
        a job timeout), and the innermost frame of that traceback is a wait: a
        queue ``get``, a lock ``acquire``, a ``poll``/``select``, a thread
        ``join``, a ``barrier``. The process was not failing; it was waiting
        for something that never came, and someone gave up. The interrupt is
        how the run ended, not why: this is a hang, and the ``KeyboardInterrupt``
        is never called a crash.

    Why it happens:
        With the DataLoader in the frames: a worker deadlocked or died without
        the main process noticing (``num_workers`` > 0 with a fork-unsafe
        library, OpenCV threads, a full shared memory ``/dev/shm``). Otherwise:
        a collective or a barrier another rank never reached, a lock, a remote
        service.

    How to fix:
        DataLoader: try ``num_workers=0`` to confirm, then set
        ``multiprocessing_context="spawn"``, ``cv2.setNumThreads(0)``, raise
        ``/dev/shm`` (``--shm-size`` in Docker), set a DataLoader ``timeout``.
        Otherwise: dump the stacks of every rank when it hangs (``py-spy dump``,
        ``faulthandler``) and find the one that is elsewhere.

    Evidence shown:
        The interrupt and the frame it waited in. Confidence is ``confidence``.
    """
    hits = []
    for r in exception_rows(run, ("root", "cascade"), ctx):
        where = interrupted_wait(r.row["details"] if isinstance(r.row["details"], dict)
                                 else None, r.before)
        if where is not None:
            hits.append((r.row, where))
    if not hits:
        return None
    row, where = hits[-1]
    d = row["details"] if isinstance(row["details"], dict) else {}
    frames = [f for f in d.get("frames") or [] if isinstance(f, dict)]
    inner = frames[-1] if frames else {"function": "a wait"}
    rank = None if pd.isna(row["rank"]) else int(row["rank"])
    exc = str(d.get("exception") or "an interrupt")
    waited = f"{inner.get('function', '?')} ({inner.get('file', '?')}:{inner.get('line', '?')})"
    loader = where == "dataloader"
    return ctx.finding(
        message=f"The run was stuck waiting in {waited}"
                + (" inside the DataLoader" if loader else "")
                + f" and was stopped by {exc}: a hang, not a crash.",
        severity=Severity.CRITICAL, confidence=ctx["confidence"],
        cause="dataloader_hang" if loader else None,
        ranks=() if rank is None else (rank,),
        evidence=[Evidence(summary=f"{exc} raised while waiting in {waited}",
                           source=str(row["source"]),
                           line=None if pd.isna(row["line"]) else int(row["line"]))],
        advice=(["run with num_workers=0 to confirm the DataLoader is the one stuck, then use "
                 "multiprocessing_context='spawn', cv2.setNumThreads(0), a larger /dev/shm "
                 "and a DataLoader timeout"] if loader else
                ["dump every rank's stacks while it hangs (py-spy dump, faulthandler) to find "
                 "the one that is elsewhere"]),
        title="stuck, then interrupted",
    )
