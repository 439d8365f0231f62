"""Which run to read from a store that holds many (a W&B folder, an MLflow store).

``autopsy analyze --run ID`` (``load_run(path, run="ID")``) sets :data:`RUN_ID` while the
run is read; the readers of multi-run stores pick that run, and otherwise choose one
themselves and say which in a problem.
"""

from __future__ import annotations

from contextvars import ContextVar

#: The run id (or name) asked for, or None: the reader picks.
RUN_ID: ContextVar[str | None] = ContextVar("autopsy_run_id", default=None)


def wanted() -> str | None:
    """The run id asked for, if any."""
    return RUN_ID.get()
