"""Progress of long reads, reported to whoever listens.

Readers call :func:`report` as they go (``what``, bytes done, bytes in all); nothing
happens unless a listener is installed with :func:`listening` (the CLI draws a bar on
stderr when it is a terminal; see :mod:`autopsy.report.progress`). A context
variable carries the listener, so the library's signatures stay as they are and
worker processes, which do not inherit it, stay quiet.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar

#: ``listener(what, done, total)``: ``done`` and ``total`` in bytes.
Listener = Callable[[str, int, int], None]

_LISTENER: ContextVar[Listener | None] = ContextVar("autopsy_progress", default=None)


def report(what: str, done: int, total: int) -> None:
    """Tell the listener, if any, that ``done`` of ``total`` bytes of ``what`` are read."""
    listener = _LISTENER.get()
    if listener is not None:
        listener(what, done, total)


@contextmanager
def listening(listener: Listener | None) -> Iterator[None]:
    """Install ``listener`` for the reads made inside the block (None: no one listens)."""
    token = _LISTENER.set(listener)
    try:
        yield
    finally:
        _LISTENER.reset(token)
