"""Shared reading of metric tables (CSV files written by training frameworks).

A table is read row by row with the standard library's ``csv`` module, never whole
into memory twice: every numeric cell becomes one scalar point, an empty cell is no
point (Lightning writes sparse rows), and a cell that is not a number costs that cell
only (counted in one problem per file). A row that ``csv`` cannot parse costs that row.
"""

from __future__ import annotations

import csv
import io
import math
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from autopsy.model.problem import Problem
from autopsy.model.scalars import empty_scalars, make_scalars

#: Tables larger than this are read up to this many bytes (the rest is a problem).
MAX_TABLE_BYTES = 512 << 20
#: A header line longer than this is not a metrics table (sniffing stops there).
MAX_HEADER_CHARS = 16 << 10
#: Spellings of non-finite values that frameworks write into CSV cells.
NONFINITE: dict[str, float] = {
    "nan": math.nan, "-nan": math.nan, "inf": math.inf, "+inf": math.inf, "-inf": -math.inf,
    "infinity": math.inf, "-infinity": -math.inf,
}

csv.field_size_limit(MAX_HEADER_CHARS * 64)


def cell_value(text: str) -> float | None:
    """A cell as a float; ``None`` for an empty cell or one that is not a number.

    Accepts ``nan``/``inf`` in any case and ``tensor(0.5)``-style wrappers that
    loggers write when a tensor was logged as text.
    """
    t = text.strip()
    if not t:
        return None
    if t.startswith("tensor(") and t.endswith(")"):
        t = t[7:-1].split(",", 1)[0].strip()
    try:
        return float(t)
    except ValueError:
        return NONFINITE.get(t.lower())


def delimiter_of(head: bytes) -> str:
    """``\t`` when the first line has tabs and no commas (a TSV), else ``,``."""
    first = head.split(b"\n", 1)[0]
    return "\t" if b"\t" in first and b"," not in first else ","


def header_of(head: bytes) -> list[str] | None:
    """The header cells of a CSV (or TSV) whose first bytes are ``head``; None if it is
    not one."""
    text = head.decode("utf-8", errors="replace").lstrip("\ufeff")
    end = text.find("\n")
    if end < 0 or end > MAX_HEADER_CHARS:
        return None
    line = text[:end].rstrip("\r")
    delimiter = delimiter_of(head)
    if delimiter not in line:
        return None
    try:
        cells = next(csv.reader([line], delimiter=delimiter))
    except (csv.Error, StopIteration):
        return None
    return [c.strip() for c in cells]


@dataclass
class Table:
    """Points read from one table, as columns."""

    rel: str
    steps: list[int] = field(default_factory=list)
    tags: list[str] = field(default_factory=list)
    values: list[float] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)
    bad_cells: int = 0
    bad_rows: int = 0

    def add(self, step: int, tag: str, value: float) -> None:
        """One point."""
        self.steps.append(step)
        self.tags.append(tag)
        self.values.append(value)

    def frame(self, segment: int = 0):  # type: ignore[no-untyped-def]
        """The points as a scalars frame (``raw_tag`` the column name)."""
        if not self.steps:
            return empty_scalars()
        return make_scalars(self.steps, self.tags, self.values, segment=segment,
                            source=self.rel)

    def close(self) -> None:
        """Record the cells and rows that were not used."""
        if self.bad_cells:
            self.problems.append(Problem(
                self.rel, f"{self.bad_cells:,} cells are not numbers", used="the other cells",
                kind="bad_value", count=self.bad_cells))
        if self.bad_rows:
            self.problems.append(Problem(
                self.rel, f"{self.bad_rows:,} rows could not be parsed", used="the other rows",
                kind="bad_row", count=self.bad_rows))


def rows(path: Path, table: Table, delimiter: str = ",") -> Iterator[list[str]]:
    """The rows of a CSV file after its header (header first), tolerating bad rows."""
    try:
        size = path.stat().st_size
        fh = open(path, "rb")
    except OSError as exc:
        table.problems.append(Problem(table.rel, f"cannot read: {exc.strerror}",
                                      kind="unreadable"))
        return
    with fh:
        raw = fh.read(MAX_TABLE_BYTES)
    if size > MAX_TABLE_BYTES:
        table.problems.append(Problem(table.rel, f"larger than {MAX_TABLE_BYTES >> 20} MiB",
                                      used="its first part", kind="truncated"))
    text = raw.decode("utf-8", errors="replace").lstrip("\ufeff").replace("\0", "")
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=delimiter)
    while True:
        try:
            row = next(reader)
        except StopIteration:
            return
        except csv.Error:
            table.bad_rows += 1
            continue
        if row:  # a blank line (Keras on Windows ends rows with \r\r\n) is no row
            yield row


def step_of(text: str) -> int | None:
    """A step cell as an int (``3.0`` is 3); None when empty or not a finite number."""
    v = cell_value(text)
    if v is None or not math.isfinite(v):
        return None
    return int(v)
