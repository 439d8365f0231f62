"""The events frame: things that happened, from text logs."""

from __future__ import annotations

from enum import Enum
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd


class EventKind(str, Enum):
    """The closed set of event kinds readers may record.

    ``nccl_timeout`` is a NCCL/c10d watchdog timeout; ``collective_timeout`` one of
    another backend (gloo's "Timed out waiting ... for recv"); ``signal`` a process
    receiving or dying of a signal (SIGTERM, SIGKILL...); ``exit`` a rank's exit code
    as its launcher reports it; ``error_file`` a torchelastic ``error.json``; ``stack_dump``
    one thread's stack from a ``faulthandler`` or ``py-spy dump`` printout.
    """

    NAN_LOSS = "nan_loss"
    OVERFLOW_SKIP = "overflow_skip"
    OOM = "oom"
    HOST_KILL = "host_kill"
    TRACEBACK = "traceback"
    NCCL_TIMEOUT = "nccl_timeout"
    COLLECTIVE_MISMATCH = "collective_mismatch"
    RENDEZVOUS_TIMEOUT = "rendezvous_timeout"
    CHILD_FAILED = "child_failed"
    HEARTBEAT_STUCK = "heartbeat_stuck"
    RESTART = "restart"
    CHECKPOINT_SAVED = "checkpoint_saved"
    COLLECTIVE_TIMEOUT = "collective_timeout"
    CONNECTION_CLOSED = "connection_closed"
    DESYNC_REPORT = "desync_report"
    NCCL_WARN = "nccl_warn"
    SIGNAL = "signal"
    EXIT = "exit"
    ERROR_FILE = "error_file"
    STACK_DUMP = "stack_dump"


#: column -> pandas dtype of ``run.events``.
EVENT_COLUMNS: dict[str, str] = {
    "rank": "Int64",
    "wall_time": "float64",
    "step": "Int64",
    "kind": "category",
    "message": "object",
    "source": "category",
    "line": "Int64",
    "details": "object",
}


def empty_events() -> pd.DataFrame:
    """Return an events frame with no rows and the right dtypes."""
    import pandas as pd

    return pd.DataFrame({c: pd.Series(dtype=t) for c, t in EVENT_COLUMNS.items()})


def events_frame(rows: list[list[Any]]) -> pd.DataFrame:
    """An events frame from rows in the order of :data:`EVENT_COLUMNS` (empty rows: an empty
    frame with the right dtypes)."""
    import pandas as pd

    if not rows:
        return empty_events()
    frame = pd.DataFrame(rows, columns=list(EVENT_COLUMNS))
    for col, dtype in EVENT_COLUMNS.items():
        if col != "details":
            frame[col] = frame[col].astype(dtype)
    return frame
