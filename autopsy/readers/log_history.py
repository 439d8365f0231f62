"""A Hugging Face ``log_history`` on its own: a JSON file holding a trainer state under
another name (``trainer_state (1).json``, ``state.json``), a JSON list of log entries,
or the Python ``repr`` of that list pasted into a text file (``[{'loss': 2.3, ...}, ...]``,
as people paste ``trainer.state.log_history`` into issues).

Entries are read as in ``trainer_state.json`` (see :mod:`autopsy.readers.trainer_state`):
each key of an entry with an integer ``step`` is a point at that step. The Python form
is parsed with :func:`ast.literal_eval` (literals only: nothing is evaluated), after
``nan``/``inf`` are quoted; a damaged JSON list keeps every entry before the damage.
"""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path
from typing import Any

from autopsy.model.problem import Problem
from autopsy.readers.base import RunPart, head
from autopsy.readers.registry import Format
from autopsy.readers.trainer_state import FILE_NAME, _array_items, _Copy, copy_from, part_of

NAME = "log_history"
FORMATS = (
    Format("hf_log_history", "an HF Trainer log_history: a state JSON under another name, a "
           "JSON list of log entries, or the pasted Python list", ("scalars", "config"),
           "log_history.json, state.json, log_history.txt"),
)
#: Files larger than this are not read as a log history (histories are a few MB at most).
MAX_BYTES = 64 << 20
SNIFF_HEAD = 4096
#: The Python form of a list is parsed by ``ast.literal_eval`` only up to this size (its
#: parse tree takes about 100 times the text); a longer one is read as JSON, as far as
#: it goes.
MAX_LITERAL_CHARS = 2 << 20
_ENTRY = re.compile(rb"""^\s*\[\s*\{\s*['"](?:loss|eval_loss|epoch|learning_rate|grad_norm"""
                    rb"""|step|train_runtime)['"]\s*:""")
_NONFINITE = re.compile(r"(?<=[:\s\[,])(-?(?:nan|inf))(?=\s*[,}\]])")


def sniff(path: Path) -> bool:
    """A state JSON not named ``trainer_state.json``, or a list of log entries."""
    name = path.name
    if name == FILE_NAME or not name.endswith((".json", ".txt", ".log")):
        return False
    data = head(path, SNIFF_HEAD)
    if _ENTRY.match(data):
        return True
    return (name.endswith(".json") and data.lstrip().startswith(b"{")
            and b'"log_history"' in data)


def _parse(text: str, copy: _Copy) -> dict[str, Any] | None:
    stripped = text.strip()
    try:
        data = json.loads(stripped)
    except (ValueError, RecursionError):
        data = None
    if data is None and stripped.startswith("["):
        try:
            if len(stripped) > MAX_LITERAL_CHARS:  # the parse tree is ~100x the text
                raise ValueError("too long for a literal parse")
            data = ast.literal_eval(_NONFINITE.sub(r"'\1'", stripped))
        except (ValueError, SyntaxError, RecursionError, MemoryError, TypeError,
                OverflowError):
            entries: list[Any] = []
            try:
                _array_items(json.JSONDecoder(), stripped, 1, entries)
            except (ValueError, IndexError, RecursionError):
                pass
            copy.problems.append(Problem(copy.rel, "the list does not parse to its end",
                                         used=f"{len(entries):,} entries before the damage",
                                         kind="invalid_json"))
            data = entries
    if isinstance(data, list):
        return {"log_history": data}
    if isinstance(data, dict):
        return data
    copy.problems.append(Problem(copy.rel, "neither a trainer state nor a list of entries",
                                 kind="invalid_json"))
    return None


def read(path: Path, rel: str) -> RunPart:
    """Read one log history."""
    copy = _Copy(rel)
    try:
        if path.stat().st_size > MAX_BYTES:
            return RunPart(problems=[Problem(rel, "larger than 64 MiB; not read as a log "
                                             "history", kind="too_large")])
        text = path.read_bytes().decode("utf-8", errors="replace")
    except OSError as exc:
        return RunPart(problems=[Problem(rel, f"cannot read: {exc.strerror}",
                                         kind="unreadable")])
    data = _parse(text, copy)
    if data is None:
        return RunPart(problems=copy.problems)
    return part_of([copy_from(data, copy)])
