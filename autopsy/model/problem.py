"""Problems: inputs that could not be read fully, kept as data."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any


@dataclass(frozen=True)
class Problem:
    """One input that could not be read fully.

    An unreadable file degrades the report; it never crashes it.

    Attributes:
        source: the file, relative to the run root where possible.
        what: what is wrong, in one line (``"truncated last record"``).
        used: what was still used (``"1,204 records before it"``), or ``""``.
        kind: a short machine-readable slug (``truncated``, ``corrupt_record``,
            ``invalid_json``, ``not_an_event_file``, ``unsafe_pickle``, ...).
        count: how many times it happened in this source (corrupt records, say).
    """

    source: str
    what: str
    used: str = ""
    kind: str = "unreadable"
    count: int = 1

    def to_dict(self) -> dict[str, Any]:
        """Return a JSON-able dict of this problem."""
        return asdict(self)
