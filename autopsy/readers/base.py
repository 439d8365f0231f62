"""The reader protocol: what every reader module provides and returns.

A reader module defines:

* ``NAME``: a short slug (``"tensorboard"``, ``"trainer_state"``, ...);
* ``sniff(path: Path) -> bool``: cheap recognition by name and first bytes;
* ``read(path: Path, rel: str) -> RunPart``: read one file; ``rel`` is the path
  relative to the run root, to be used as ``source`` on every row.

Readers keep every point, keep provenance, never execute anything from the
input, and never raise on bad content: they record a :class:`Problem` and return
what they could read. They may raise only for bugs or bad arguments.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from autopsy.model.config import ConfigValue
from autopsy.model.problem import Problem

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd

#: How many bytes a sniff may read from the head of a file.
SNIFF_BYTES = 64


@dataclass
class RunPart:
    """What one reader got out of one file (or one group of files)."""

    scalars: pd.DataFrame | None = None
    events: pd.DataFrame | None = None
    config: list[ConfigValue] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)


class Reader(Protocol):
    """The shape of a reader module (see the module docstring)."""

    NAME: str

    def sniff(self, path: Path) -> bool:  # pragma: no cover - protocol
        """Whether this reader recognises ``path``."""
        ...

    def read(self, path: Path, rel: str) -> RunPart:  # pragma: no cover - protocol
        """Read ``path``; label every row with ``rel``."""
        ...


def head(path: Path, n: int = SNIFF_BYTES) -> bytes:
    """Return up to ``n`` first bytes of ``path``, or ``b""`` if it cannot be read."""
    try:
        with open(path, "rb") as fh:
            return fh.read(n)
    except OSError:
        return b""
