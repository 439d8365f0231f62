"""The events frame: things that happened, from text logs."""

from __future__ import annotations

from enum import Enum
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd


class EventKind(str, Enum):
    """The closed set of event kinds readers may record."""

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
