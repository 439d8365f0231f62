"""A progress bar on stderr for reads that take more than a second (terminals only)."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import IO, Any

#: Reads shorter than this draw nothing.
DELAY_S = 1.0


class StderrBar:
    """A listener for :mod:`autopsy.readers.progress` drawing one transient bar per kind
    of read, once the read has lasted :data:`DELAY_S`; nothing on a non-terminal."""

    def __init__(self, stream: IO[str] | None = None, *, force_terminal: bool | None = None,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.stream = stream if stream is not None else sys.stderr
        tty = getattr(self.stream, "isatty", lambda: False)()
        self.enabled = bool(force_terminal) if force_terminal is not None else bool(tty)
        self.force_terminal = force_terminal
        self.clock = clock
        self.started = clock()
        self._progress: Any = None
        self._tasks: dict[str, Any] = {}

    def __call__(self, what: str, done: int, total: int) -> None:
        if not self.enabled or self.clock() - self.started < DELAY_S:
            return
        if self._progress is None:
            from rich.console import Console
            from rich.progress import (
                BarColumn,
                DownloadColumn,
                Progress,
                TextColumn,
                TimeRemainingColumn,
            )

            console = Console(file=self.stream, force_terminal=self.force_terminal)
            self._progress = Progress(TextColumn("autopsy: {task.description}"), BarColumn(),
                                      DownloadColumn(), TimeRemainingColumn(),
                                      console=console, transient=True)
            self._progress.start()
        task = self._tasks.get(what)
        if task is None:
            task = self._tasks[what] = self._progress.add_task(what, total=max(total, 1))
        self._progress.update(task, completed=min(done, total), total=max(total, 1))

    def close(self) -> None:
        """Remove the bar (it is transient: the terminal is left as it was)."""
        if self._progress is not None:
            self._progress.stop()
            self._progress = None


@contextmanager
def stderr_progress() -> Iterator[None]:
    """Show progress bars on stderr for the reads made inside the block."""
    from autopsy.readers.progress import listening

    bar = StderrBar()
    if not bar.enabled:
        yield
        return
    try:
        with listening(bar):
            yield
    finally:
        bar.close()
