"""Ultralytics YOLO results: ``results.csv`` (YOLOv5 since 6.0, YOLOv8/11) and the older
YOLOv5/YOLOv3 ``results.txt`` (no header).

``results.csv`` has one row per epoch (0-based ``epoch``), header cells padded with
spaces, and the loss split into parts (``train/box_loss``, ``train/obj_loss`` or
``train/dfl_loss``, ``train/cls_loss``; the same under ``val/``) plus ``metrics/*`` and
``lr/pg0``/``x/lr0``. YOLO reports no total, so the reader adds the sum of the parts of a
row as ``train/loss_sum`` (canonical ``loss``) and ``val/loss_sum`` (``eval_loss``), when
every part of the row is present and there are several (a classification run's single
``train/loss`` is its total already); the parts stay as their own series. Its ``time``
(Ultralytics 8.1+) is the seconds since training started, not the epoch's time: it is kept
as ``elapsed_time``, and its increase from the previous row as ``epoch_time`` (an epoch's
duration, canonical ``step_time``; none for the first row, whose start is not logged, nor
where it falls: a resume restarts the clock).

``results.txt`` lines are ``epoch/last  gpu_mem  box  obj  cls  total  targets  img_size
P  R  mAP@.5  mAP@.5:.95  val_box  val_obj  val_cls``: ``total`` is YOLO's own train
total (``train/loss_sum``); the val parts are summed as above.
"""

from __future__ import annotations

import math
import re
from pathlib import Path

from autopsy.readers.base import RunPart, head
from autopsy.readers.csvtable import Table, cell_value, header_of, rows, step_of
from autopsy.readers.registry import Format

NAME = "ultralytics_csv"
FORMATS = (
    Format("ultralytics_csv", "Ultralytics YOLOv5/v8 results.csv (one row per epoch)",
           ("scalars",), "runs/train/exp/results.csv"),
    Format("yolo_txt", "YOLOv5/YOLOv3 results.txt (one line per epoch, no header)",
           ("scalars",), "runs/train/exp/results.txt"),
)
SNIFF_HEAD = 4096
_TXT_LINE = re.compile(rb"^\s*(\d+)/(\d+)\s+[\d.]+G?\s+(?:[-+\d.eE]+|nan|inf)\s+")
#: results.txt column -> raw tag (columns after the epoch and memory ones).
TXT_COLUMNS: tuple[str, ...] = (
    "train/box_loss", "train/obj_loss", "train/cls_loss", "train/loss_sum", "targets",
    "img_size", "metrics/precision", "metrics/recall", "metrics/mAP_0.5",
    "metrics/mAP_0.5:0.95", "val/box_loss", "val/obj_loss", "val/cls_loss",
)


def sniff(path: Path) -> bool:
    """``results.csv`` with YOLO loss columns (``train/box_loss``..., or a classification
    run's single ``train/loss``), or a YOLO ``results.txt``."""
    if path.name == "results.csv":
        cells = header_of(head(path, SNIFF_HEAD)) or []
        return "epoch" in cells and any(
            c.startswith("train/") and (c.endswith("_loss") or c == "train/loss")
            for c in cells)
    if path.name == "results.txt":
        return bool(_TXT_LINE.match(head(path, 512)))
    return False


def read(path: Path, rel: str) -> RunPart:
    """Read one results file."""
    table = Table(rel)
    if path.name == "results.txt":
        _read_txt(path, table)
    else:
        _read_csv(path, table)
    table.close()
    return RunPart(scalars=table.frame(), problems=table.problems)


def _add_sum(table: Table, step: int, prefix: str, parts: list[float | None]) -> None:
    # one part (a classification run's train/loss) is already the total
    if len(parts) > 1 and all(p is not None for p in parts):
        total = math.fsum(p for p in parts if p is not None)
        table.add(step, f"{prefix}/loss_sum", total)


def _read_csv(path: Path, table: Table) -> None:
    it = rows(path, table)
    header = [h.strip() for h in next(it, None) or []]
    if "epoch" not in header:
        table.bad_rows += 1
        return
    e = header.index("epoch")
    elapsed = None  # the previous row's ``time``
    for row in it:
        if len(row) <= e:
            continue
        step = step_of(row[e])
        if step is None:
            table.bad_rows += 1
            continue
        parts: dict[str, list[float | None]] = {"train": [], "val": []}
        for i, name in enumerate(header):
            if i == e or i >= len(row) or not name:
                continue
            v = cell_value(row[i])
            if v is None:
                if row[i].strip():
                    table.bad_cells += 1
                continue
            if name == "time":  # seconds since training started, not the epoch's time
                table.add(step, "elapsed_time", v)
                if elapsed is not None and math.isfinite(v) and v >= elapsed:
                    table.add(step, "epoch_time", v - elapsed)
                elapsed = v if math.isfinite(v) else None  # a bad cell: no duration up to
                continue                                   # it nor from it
            table.add(step, name, v)
            for prefix in parts:
                if name.startswith(prefix + "/") and name.endswith("_loss"):
                    parts[prefix].append(v)
        for prefix, values in parts.items():
            _add_sum(table, step, prefix, values)


def _read_txt(path: Path, table: Table) -> None:
    for row in rows(path, table, delimiter="\t"):
        fields = " ".join(row).split()
        if len(fields) < 2 or "/" not in fields[0]:
            continue
        step = step_of(fields[0].split("/", 1)[0])
        if step is None:
            table.bad_rows += 1
            continue
        vals = [cell_value(f) for f in fields[2:2 + len(TXT_COLUMNS)]]
        for name, v in zip(TXT_COLUMNS, vals, strict=False):
            if v is None:
                table.bad_cells += 1
                continue
            if name in ("targets", "img_size"):
                continue
            table.add(step, name, v)
        if len(vals) == len(TXT_COLUMNS):
            _add_sum(table, step, "val", vals[-3:])
