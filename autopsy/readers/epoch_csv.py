"""Metric tables with one row per epoch or step: Keras ``CSVLogger``, a saved Keras
``history`` (``pd.DataFrame(history.history).to_csv(...)``), timm ``summary.csv``, and any
CSV of metrics with a step-like column.

The step of a row is, in this order of preference, its ``step``, ``global_step``,
``iteration``, ``iter`` or ``epoch`` column as written (Keras and timm count epochs
from 0), else the pandas index column (a first column with an empty or ``Unnamed: 0``
header), else the row's ordinal from 0 (a saved Keras history written without its index:
a ``loss`` column and every column a lower-case Keras key). Every other numeric cell is a point
(``raw_tag`` the column name: Keras ``loss``/``val_loss``/``lr``, timm
``train_loss``/``eval_loss``); the step column itself is not a series, except
``epoch`` when a finer step column exists.

A file is taken when it is named ``*.csv`` (or Keras's default ``training.log``, or
``*.log``/``*.txt`` whose first line is such a header), its header names a step-like
column or a pandas index, and at least one column name says loss, accuracy or error.
A d3rlpy per-metric file (``critic_loss.csv``: headerless ``epoch,step,value`` rows, the
metric named by the file) is read too, at its step column.
"""

from __future__ import annotations

import re
from pathlib import Path

from autopsy.model.problem import Problem
from autopsy.readers.base import RunPart, head
from autopsy.readers.csvtable import Table, delimiter_of, header_of, rows, step_of
from autopsy.readers.registry import Format

NAME = "epoch_csv"
FORMATS = (
    Format("keras_csv", "Keras CSVLogger log / saved history (one row per epoch)",
           ("scalars",), "training.log, history.csv, log.csv"),
    Format("timm_csv", "timm train.py summary.csv (one row per epoch)", ("scalars",),
           "output/train/<exp>/summary.csv"),
    Format("csv_metrics", "any CSV (or TSV) of metrics with a step, iteration or epoch column",
           ("scalars",), "metrics.csv, progress.csv, loss.tsv"),
)
#: Step-like columns, most precise first.
STEP_COLUMNS: tuple[str, ...] = ("step", "global_step", "iteration", "iter", "epoch")
#: Words one column name must contain for the file to be taken as a metrics table.
METRIC_WORDS: tuple[str, ...] = ("loss", "acc", "error", "top1", "perplexity", "ppl")
SNIFF_HEAD = 4096
_SUFFIXES = (".csv", ".log", ".txt", ".tsv")


#: A column of a saved Keras ``history`` (``loss``, ``val_accuracy``, ``learning_rate``,
#: ``val_mean_absolute_error``...): a lower-case identifier.
_HISTORY_KEY = re.compile(r"[a-z][a-z0-9_]*\Z")


def _index_column(cells: list[str]) -> bool:
    return bool(cells) and cells[0] in ("", "Unnamed: 0", "index")


def _layout(cells: list[str]) -> tuple[int | None, str] | None:
    """(index of the step column or None for the ordinal, its name) for a metrics header."""
    lower = [c.strip().lower() for c in cells]
    if not any(any(w in c for w in METRIC_WORDS) for c in lower):
        return None
    for name in STEP_COLUMNS:
        if name in lower:
            return lower.index(name), name
    if _index_column(cells):
        return 0, "index"
    if any("loss" in c for c in lower) and all(_HISTORY_KEY.match(c) for c in lower):
        # a saved history without its index (Keras, or a loop's own train_loss/val_loss
        # columns): one row per epoch
        return None, "row"
    return None


_NUMBER = re.compile(r"\s*[-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?\s*\Z|\s*(?:nan|inf)\s*\Z",
                     re.I)


def _per_metric(path: Path, cells: list[str]) -> bool:
    """A d3rlpy-style per-metric file: ``<metric>.csv`` of headerless ``epoch,step,value``
    rows (``critic_loss.csv``: ``1,1000,28.409847``)."""
    stem = path.stem.lower()
    return (len(cells) == 3 and all(_NUMBER.match(c) for c in cells)
            and cells[0].strip().isdigit() and cells[1].strip().isdigit()
            and any(w in stem for w in METRIC_WORDS))


def sniff(path: Path) -> bool:
    """A metrics CSV (see the module docstring)."""
    name = path.name.lower()
    if not name.endswith(_SUFFIXES):
        return False
    cells = header_of(head(path, SNIFF_HEAD))
    if not cells or len(cells) < 2:
        return False
    if name.endswith(".csv") and _per_metric(path, cells):
        return True
    if not name.endswith((".csv", ".tsv")) and not (
            name == "training.log" or cells[0].strip().lower() in STEP_COLUMNS):
        return False
    return _layout(cells) is not None


def read(path: Path, rel: str) -> RunPart:
    """Read one table into points at its step column."""
    table = Table(rel)
    it = rows(path, table, delimiter=delimiter_of(head(path, SNIFF_HEAD)))
    header = next(it, None)
    if header is not None and _per_metric(path, header):
        return _read_per_metric(header, it, table, path.stem)
    layout = _layout(header or [])
    if header is None or layout is None:
        table.problems.append(Problem(rel, "no metrics header", kind="bad_header"))
        return RunPart(problems=table.problems)
    s, s_name = layout
    names = [h.strip() for h in header]
    keep_epoch = s_name != "epoch"
    cols = [(i, n) for i, n in enumerate(names)
            if i != s and n and (n.lower() != "epoch" or keep_epoch)
            and not (i == 0 and _index_column(names))]
    ordinal = -1
    for row in it:
        if not row or all(not c.strip() for c in row):
            continue
        ordinal += 1
        step = step_of(row[s]) if s is not None and s < len(row) else ordinal
        if step is None:
            table.bad_rows += 1
            continue
        table.add_cells(step, row, cols)
    table.close()
    return RunPart(scalars=table.frame(), problems=table.problems)


def _read_per_metric(first: list[str], it: object, table: Table, name: str) -> RunPart:
    """Rows ``epoch,step,value`` of one metric named by the file: points at ``step``."""
    cols = [(2, name)]
    for row in (first, *it):  # type: ignore[misc]
        if len(row) < 3 or not row[1].strip():
            continue
        step = step_of(row[1])
        if step is None:
            table.bad_rows += 1
            continue
        table.add_cells(step, row, cols)
    table.close()
    return RunPart(scalars=table.frame(), problems=table.problems)
