"""Chainer ``LogReport`` files: ``result/log``, a JSON array of one object per report.

Chainer's ``extensions.LogReport`` writes ``json.dump(log, f, indent=4)`` to a file named
``log`` in the trainer's output directory (``result/log`` by default), after every
report (each epoch, or each N iterations)::

    [
        {
            "main/loss": 0.054182298481464386,
            "validation/main/loss": 0.04035056382417679,
            "epoch": 1,
            "iteration": 847,
            "elapsed_time": 11.271149158477783
        },
        ...

The step of a record is its ``iteration`` (else its ``epoch``). ``main/`` is the name of
the observed model (``main/loss`` the training loss, ``validation/main/loss`` the
evaluator's); the alias table maps them. The file is read a record at a time (one indented
object), so memory follows the largest record, not the file; a record that is not JSON
costs itself (counted in one problem).
"""

from __future__ import annotations

import json
import math
from pathlib import Path

from autopsy.readers.base import RunPart, head
from autopsy.readers.csvtable import MAX_STEP, Table, bounded_lines, json_number
from autopsy.readers.registry import Format

NAME = "chainer_log"
FORMATS = (
    Format("chainer_log", "Chainer LogReport result/log (a JSON array, one object per report)",
           ("scalars",), "result/log"),
)
SNIFF_HEAD = 2048
#: A record longer than this is no LogReport record: it is skipped (a bad row).
MAX_RECORD_BYTES = 1 << 20
_STEP_KEYS = ("iteration", "epoch")


def sniff(path: Path) -> bool:
    """A file named ``log`` (or ``log.json``) holding a JSON array of report objects."""
    if path.name not in ("log", "log.json"):
        return False
    text = head(path, SNIFF_HEAD).lstrip()
    if not text.startswith(b"["):
        return False
    body = text[1:].lstrip()
    return body.startswith(b"{") and (b'"epoch"' in text or b'"iteration"' in text) \
        and b'"main/' in text


def _add(table: Table, raw: bytes) -> None:
    try:
        doc = json.loads(raw.decode("utf-8", errors="replace"))
    except (ValueError, RecursionError):
        table.bad_rows += 1
        return
    if not isinstance(doc, dict):
        table.bad_rows += 1
        return
    step = None
    for key in _STEP_KEYS:
        v = json_number(doc.get(key))
        if v is not None and math.isfinite(v) and abs(v) <= MAX_STEP:
            step = int(v)
            break
    if step is None:
        table.bad_rows += 1
        return
    for key, value in doc.items():
        if key in _STEP_KEYS:
            continue
        v = json_number(value)
        if v is not None:
            table.add(step, key, v)


def read(path: Path, rel: str) -> RunPart:
    """Read a Chainer ``log`` a record (one ``{...}`` object) at a time."""
    table = Table(rel)
    try:
        with open(path, "rb") as fh:
            record: list[bytes] | None = None  # the lines of the open record
            size = 0
            for line in bounded_lines(fh, table):
                stripped = line.strip()
                if record is None:
                    if stripped.startswith(b"{"):
                        if stripped.rstrip(b",").endswith(b"}"):  # a record on one line
                            _add(table, stripped.rstrip(b","))
                        else:
                            record, size = [line], len(line)
                    continue
                size += len(line)
                if size > MAX_RECORD_BYTES:
                    table.bad_rows += 1
                    record = None
                    continue
                record.append(line)
                # LogReport's values are numbers and strings: a line that closes an object
                # ends the record (it writes no nested objects)
                if stripped in (b"}", b"},"):
                    _add(table, b"".join(record).strip().rstrip(b","))
                    record = None
    except OSError as exc:
        from autopsy.model.problem import Problem

        table.problems.append(Problem(rel, f"read stopped early: {exc}",
                                      used="the records before it", kind="truncated"))
    table.close()
    return RunPart(scalars=table.frame(), problems=table.problems)
