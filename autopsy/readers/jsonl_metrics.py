"""JSON-lines metric files: detectron2 ``metrics.json``, mmcv ``*.log.json``, mmengine
``vis_data/scalars.json``, and any JSON-lines file of metrics with a step-like key.

One JSON object per line. The step of a line is, in this order, its ``iteration``
(detectron2), ``step`` (mmengine), ``global_step``, ``_step`` (W&B exports),
``num_updates``/``update`` (fairseq) key; mmcv's epoch-based ``*.log.json`` lines give
``epoch`` and ``iter`` within the epoch, and the reader makes the global iteration by
adding the iterations of the epochs before (the largest ``iter`` seen in each). mmcv's
``mode: "val"`` lines are evaluation: their keys are prefixed ``val_`` (``val_loss`` is
``eval_loss``) and they take the last training step. Numeric values (and ``"nan"``,
``"inf"`` strings) are points; other values are skipped; a line that is not JSON costs
that line (counted in one problem); a line over ``csvtable.MAX_LINE_BYTES`` is skipped the
same way, and the file is read a line at a time.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any, BinaryIO

from autopsy.model.problem import Problem
from autopsy.readers.base import RunPart, head
from autopsy.readers.csvtable import MAX_STEP, Table, bounded_lines, json_number
from autopsy.readers.registry import Format

NAME = "jsonl_metrics"
FORMATS = (
    Format("detectron2_json", "detectron2 metrics.json (one JSON object per logged iteration)",
           ("scalars",), "output/metrics.json"),
    Format("mmengine_json", "mmcv *.log.json and mmengine vis_data/scalars.json",
           ("scalars",), "work_dirs/<exp>/20230101_120000.log.json, vis_data/scalars.json"),
    Format("jsonl_metrics", "any JSON-lines file of metrics with a step-like key",
           ("scalars",), "metrics.jsonl, log.jsonl"),
)
#: Step keys, most precise first.
STEP_KEYS: tuple[str, ...] = ("iteration", "step", "global_step", "_step", "num_updates",
                              "update")
SNIFF_HEAD = 4096
_NOT_OURS = frozenset({"trainer_state.json", "config.json", "generation_config.json",
                       "tokenizer.json", "tokenizer_config.json", "special_tokens_map.json",
                       "all_results.json", "train_results.json", "eval_results.json",
                       "error.json", "wandb-summary.json", "wandb-metadata.json"})
_KEY_HINTS = (b'"iteration"', b'"iter"', b'"step"', b'"global_step"', b'"_step"',
              b'"num_updates"', b'"mode"', b'"env_info"')


def sniff(path: Path) -> bool:
    """A JSON-lines file whose first object has a step-like key (two lines at least)."""
    name = path.name
    if name in _NOT_OURS or not name.endswith((".json", ".jsonl")):
        return False
    data = head(path, SNIFF_HEAD)
    text = data.lstrip()
    if not text.startswith(b"{") or text.startswith(b'{"message"'):
        return False
    first_end = text.find(b"\n")
    if first_end < 0:
        return False
    rest = text[first_end:].lstrip()
    if rest and not rest.startswith(b"{"):
        return False  # a pretty-printed JSON document, not JSON lines
    return any(k in data for k in _KEY_HINTS)


class _Steps:
    """Global steps of mmcv's epoch/iter lines."""

    def __init__(self) -> None:
        self.offset = 0
        self.epoch: int | None = None
        self.top = 0
        self.last = 0

    def of(self, doc: dict[str, Any]) -> int | None:
        for key in STEP_KEYS:
            v = json_number(doc.get(key))
            if v is not None and math.isfinite(v):
                if abs(v) > MAX_STEP:
                    raise ValueError("step too large")
                self.last = int(v)
                return self.last
        epoch, it = json_number(doc.get("epoch")), json_number(doc.get("iter"))
        if doc.get("mode") == "val":
            return self.last
        if epoch is None or it is None or not (math.isfinite(epoch) and math.isfinite(it)):
            return None
        if abs(it) > MAX_STEP or abs(epoch) > MAX_STEP or self.offset > MAX_STEP:
            raise ValueError("step too large")
        if self.epoch is not None and int(epoch) != self.epoch:
            self.offset += self.top
            self.top = 0
        self.epoch = int(epoch)
        self.top = max(self.top, int(it))
        self.last = self.offset + int(it)
        return self.last


def read(path: Path, rel: str) -> RunPart:
    """Read one JSON-lines file of metrics, a line at a time."""
    table = Table(rel)
    try:
        with open(path, "rb") as fh:
            _read_lines(fh, table)
    except OSError as exc:
        table.problems.append(Problem(rel, f"read stopped early: {exc}",
                                      used="the lines before it", kind="truncated"))
    table.close()
    return RunPart(scalars=table.frame(), problems=table.problems)


def _read_lines(fh: BinaryIO, table: Table) -> None:
    steps = _Steps()
    for raw in bounded_lines(fh, table):
        raw = raw.strip()
        if not raw:
            continue
        try:
            doc = json.loads(raw.decode("utf-8", errors="replace"))
        except (ValueError, RecursionError):
            table.bad_rows += 1
            continue
        if not isinstance(doc, dict) or "env_info" in doc:
            continue
        try:
            step = steps.of(doc)
        except ValueError:  # a step too large for one: the line costs itself
            table.bad_rows += 1
            continue
        if step is None:
            continue
        prefix = "val_" if doc.get("mode") == "val" else ""
        for key, value in doc.items():
            if key in STEP_KEYS or (key in ("epoch", "iter", "mode") and prefix):
                continue
            if key in ("iter", "mode"):
                continue
            v = json_number(value)
            if v is None:
                continue
            table.add(step, prefix + key, v)
