"""A Keras ``history`` saved as JSON: ``json.dump(history.history, f)``.

The object maps each metric to its list of per-epoch values (``{"loss": [...],
"val_loss": [...], "accuracy": [...]}``). Variants read too: the lists under a
``"history"`` or ``"metrics"`` key, with the epoch numbers in an ``"epoch"`` or
``"epochs"`` list beside them (else epoch ``i`` is the list's position, counted from 0 as
Keras counts). ``NaN`` and ``Infinity`` (as Python's json module writes them) are kept.
A list whose length differs from the epochs' is read as far as both go, with a problem.

A file is taken when it is named ``*.json``, starts with ``{`` and its first bytes hold
a loss or accuracy key whose value is a list.
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Any

from autopsy.model.problem import Problem
from autopsy.readers.base import RunPart, head
from autopsy.readers.csvtable import Table
from autopsy.readers.registry import Format

NAME = "history_json"
FORMATS = (
    Format("keras_history_json", "a Keras history saved as JSON (metric -> per-epoch list)",
           ("scalars",), "history.json"),
)
#: Files larger than this are not read (a history is a few KB per metric).
MAX_BYTES = 64 << 20
SNIFF_HEAD = 4096
_KEY = re.compile(rb'"(?:val_)?(?:loss|acc|accuracy|\w*_loss)"\s*:\s*\[')
#: Keys whose list holds the epoch numbers rather than a metric.
EPOCH_KEYS = ("epoch", "epochs")
#: Keys under which the metric lists may be nested.
NESTED_KEYS = ("history", "metrics")


def sniff(path: Path) -> bool:
    """A ``*.json`` object whose first bytes hold a metric list (module docstring)."""
    if not path.name.lower().endswith(".json"):
        return False
    data = head(path, SNIFF_HEAD)
    return data.lstrip().startswith(b"{") and _KEY.search(data) is not None


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    try:
        return float(value)
    except OverflowError:  # an integer past a float's range: that value only
        return math.inf if value > 0 else -math.inf


def _metrics(data: dict[str, Any]) -> tuple[dict[str, list[Any]], list[Any] | None]:
    """The metric lists and the epoch list, at the top level or under a nested key."""
    source = data
    for key in NESTED_KEYS:
        inner = data.get(key)
        if isinstance(inner, dict) and any(isinstance(v, list) for v in inner.values()):
            source = inner
            break
    epochs = next((v for k in EPOCH_KEYS for v in (data.get(k), source.get(k))
                   if isinstance(v, list)), None)
    lists = {str(k): v for k, v in source.items()
             if isinstance(v, list) and k not in EPOCH_KEYS}
    return lists, epochs


def read(path: Path, rel: str) -> RunPart:
    """Read the per-epoch lists into points at their epochs."""
    table = Table(rel)
    try:
        if path.stat().st_size > MAX_BYTES:
            return RunPart(problems=[Problem(rel, f"larger than {MAX_BYTES:,} bytes: not read",
                                             kind="too_large")])
        with open(path, encoding="utf-8", errors="replace") as fh:
            data = json.load(fh)
    except OSError as exc:
        return RunPart(problems=[Problem(rel, f"cannot read: {exc.strerror}",
                                         kind="unreadable")])
    except (ValueError, RecursionError) as exc:
        return RunPart(problems=[Problem(rel, f"not JSON: {str(exc)[:120]}",
                                         kind="invalid_json")])
    if not isinstance(data, dict):
        return RunPart(problems=[Problem(rel, "not a JSON object", kind="unexpected_structure")])
    lists, epochs = _metrics(data)
    steps: list[int | None] = []
    if epochs is not None:
        for e in epochs:
            v = _number(e)
            steps.append(int(v) if v is not None and math.isfinite(v) and v == int(v)
                         and abs(v) < 2**62 else None)
    uneven = []
    for key, values in lists.items():
        n = len(values) if epochs is None else min(len(values), len(steps))
        if epochs is not None and len(values) != len(steps):
            uneven.append(key)
        for i in range(n):
            step = i if epochs is None else steps[i]
            value = _number(values[i])
            if step is None or value is None:
                table.bad_rows += 1
                continue
            table.add(step, key, value)
    if uneven:
        table.problems.append(Problem(
            rel, f"{', '.join(uneven[:5])} do(es) not have one value per epoch",
            used="the values up to the shorter list's end", kind="uneven_lists",
            count=len(uneven)))
    table.close()
    return RunPart(scalars=table.frame(), problems=table.problems)
