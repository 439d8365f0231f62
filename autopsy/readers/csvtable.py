"""Shared reading of metric tables (CSV files written by training frameworks).

A table is read row by row with the standard library's ``csv`` module, never whole
into memory twice: every numeric cell becomes one scalar point, an empty cell is no
point (Lightning writes sparse rows), and a cell that is not a number costs that cell
only (counted in one problem per file). A row that ``csv`` cannot parse costs that row.
"""

from __future__ import annotations

import csv
import math
from array import array
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO

from autopsy.model.problem import Problem
from autopsy.model.scalars import empty_scalars, make_scalars

#: Tables larger than this are read up to this many bytes (the rest is a problem): metric
#: tables are kilobytes to a few megabytes; at 20 bytes a point kept, 64 MiB of the
#: densest table (``1,2`` rows) is under 400 MB.
MAX_TABLE_BYTES = 64 << 20
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


def json_number(value: object) -> float | None:
    """A JSON value as a float: a number (not a bool), or a string :func:`cell_value`
    reads (``"nan"``, ``"8.725"``: fairseq and mmcv quote theirs); else ``None``."""
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, str):
        return cell_value(value)
    return None


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
    """Points read from one table, as compact columns (8 bytes a value, not a tuple)."""

    rel: str
    steps: array = field(default_factory=lambda: array("q"))
    codes: array = field(default_factory=lambda: array("i"))
    values: array = field(default_factory=lambda: array("d"))
    names: list[str] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)
    bad_cells: int = 0
    bad_rows: int = 0
    _code: dict[str, int] = field(default_factory=dict)

    def add(self, step: int, tag: str, value: float) -> None:
        """One point."""
        code = self._code.get(tag)
        if code is None:
            code = self._code[tag] = len(self.names)
            self.names.append(tag)
        self.steps.append(step)
        self.codes.append(code)
        self.values.append(value)

    def add_cells(self, step: int, row: list[str], cols: list[tuple[int, str]]) -> None:
        """The numeric cells of one row at ``step`` (``cols``: index and name of each
        column read); an empty cell is no point, a cell that is not a number costs itself."""
        for i, name in cols:
            if i >= len(row):
                break
            cell = row[i]
            if not cell.strip():
                continue
            v = cell_value(cell)
            if v is None:
                self.bad_cells += 1
                continue
            self.add(step, name, v)

    def frame(self, segment: int = 0):  # type: ignore[no-untyped-def]
        """The points as a scalars frame (``raw_tag`` the column name)."""
        import numpy as np
        import pandas as pd

        if not self.steps:
            return empty_scalars()
        tags = pd.Categorical.from_codes(np.frombuffer(self.codes, dtype=np.intc).copy(),
                                         categories=self.names)
        return make_scalars(np.frombuffer(self.steps, dtype=np.int64), tags,
                            np.frombuffer(self.values, dtype=np.float64), segment=segment,
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


#: A longer line is skipped (counted as a bad row), never held whole.
MAX_LINE_BYTES = 1 << 20


def bounded_lines(fh: BinaryIO, table: Table) -> Iterator[bytes]:
    """The lines of a binary file, up to :data:`MAX_TABLE_BYTES` in all (then a problem);
    a line over :data:`MAX_LINE_BYTES` is skipped a chunk at a time and counted as a bad
    row, so memory stays bounded whatever the file holds."""
    read = 0
    while True:
        raw = fh.readline(MAX_LINE_BYTES + 1)
        if not raw:
            return
        read += len(raw)
        if len(raw) > MAX_LINE_BYTES and not raw.endswith(b"\n"):
            table.bad_rows += 1
            while raw and not raw.endswith(b"\n"):  # the rest of the over-long line
                raw = fh.readline(MAX_LINE_BYTES)
                read += len(raw)
            if read > MAX_TABLE_BYTES:
                break
            continue
        if read > MAX_TABLE_BYTES:
            break
        yield raw
    table.problems.append(Problem(table.rel, f"larger than {MAX_TABLE_BYTES >> 20} MiB",
                                  used="its first part", kind="truncated"))


def _text_lines(fh: BinaryIO, table: Table) -> Iterator[str]:
    """The file's lines as text (see :func:`bounded_lines`), NUL bytes and a BOM dropped,
    bad bytes replaced."""
    first = True
    for raw in bounded_lines(fh, table):
        text = raw.decode("utf-8", errors="replace").replace("\0", "")
        if first:
            text = text.lstrip("\ufeff")
            first = False
        yield text


def rows(path: Path, table: Table, delimiter: str = ",") -> Iterator[list[str]]:
    """The rows of a CSV file after its header (header first), tolerating bad rows.

    The file is streamed: memory follows the points kept, not the file."""
    try:
        fh = open(path, "rb")
    except OSError as exc:
        table.problems.append(Problem(table.rel, f"cannot read: {exc.strerror}",
                                      kind="unreadable"))
        return
    with fh:
        reader = csv.reader(_text_lines(fh, table), delimiter=delimiter)
        while True:
            try:
                row = next(reader)
            except StopIteration:
                return
            except csv.Error:
                table.bad_rows += 1
                continue
            except OSError as exc:
                table.problems.append(Problem(table.rel, f"read stopped early: {exc}",
                                              used="the rows before it", kind="truncated"))
                return
            if row:  # a blank line (Keras on Windows ends rows with \r\r\n) is no row
                yield row


#: A step beyond this is no step (the 64-bit step column could not hold it).
MAX_STEP = 2**62


def step_of(text: str) -> int | None:
    """A step cell as an int (``3.0`` is 3); None when empty, not a finite number, or
    beyond :data:`MAX_STEP`."""
    v = cell_value(text)
    if v is None or not math.isfinite(v) or abs(v) > MAX_STEP:
        return None
    return int(v)
