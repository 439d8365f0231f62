"""The bundles ``autopsy.capture`` writes: ``autopsy-capture/step_<N>/``.

``meta.json`` (the step, the batch ids, the error, the data checks and the probe's first bad
module) becomes a ``nan_loss`` event at that step (a ``traceback`` event when an error ended
the step), its details the whole record; ``ring.json`` (the last steps: loss, grad norm,
learning rates, loss scale, step time) becomes scalars. ``batch.pt``, ``rng.pt`` and
``data_position.pt`` are claimed and never loaded (they are pickles: the batch is for the
user to load). Both JSON files are read whole up to :data:`MAX_JSON_BYTES`.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from autopsy.model.events import events_frame
from autopsy.model.problem import Problem
from autopsy.readers.base import RunPart
from autopsy.readers.registry import Format

NAME = "capture"
FORMATS = (
    Format("autopsy_capture", "autopsy.capture bundles: the step a run went non-finite or "
           "failed, its batch ids, the data checks and the first bad module",
           ("scalars", "events"), "autopsy-capture/step_<N>/meta.json"),
)
#: The largest meta.json / ring.json read (the recorder writes kilobytes).
MAX_JSON_BYTES = 16 << 20
_FILES = ("meta.json", "ring.json", "batch.pt", "rng.pt", "data_position.pt")


def sniff(path: Path) -> bool:
    """A file of a bundle folder ``autopsy-capture/step_<N>[_rank<R>]/``."""
    return (path.name in _FILES and path.parent.name.startswith("step_")
            and path.parent.parent.name == "autopsy-capture")


def read(path: Path, rel: str) -> RunPart:
    """Read one file (:func:`read_group` with one file)."""
    return read_group([path], [rel])


def _load(path: Path, rel: str, problems: list[Problem]) -> Any:
    try:
        if path.stat().st_size > MAX_JSON_BYTES:
            problems.append(Problem(rel, "larger than a capture file is", kind="too_large"))
            return None
        return json.loads(path.read_bytes())
    except (OSError, ValueError, RecursionError) as exc:
        problems.append(Problem(rel, f"not readable JSON: {exc}", kind="invalid_json"))
        return None


def read_group(paths: list[Path], rels: list[str]) -> RunPart:
    """Every bundle's meta (an event) and ring (scalars)."""
    part = RunPart()
    events: list[list[Any]] = []
    points: list[tuple[int, str, float, str]] = []
    for path, rel in zip(paths, rels, strict=True):
        if path.name == "meta.json":
            meta = _load(path, rel, part.problems)
            if isinstance(meta, dict):
                events.append(_event(meta, rel))
        elif path.name == "ring.json":
            ring = _load(path, rel, part.problems)
            for entry in ring if isinstance(ring, list) else []:
                points.extend(_points(entry, rel))
    if events:
        part.events = events_frame(events)
    if points:
        from autopsy.model.scalars import make_scalars

        part.scalars = make_scalars([p[0] for p in points], [p[1] for p in points],
                                    [p[2] for p in points], source=[p[3] for p in points])
    return part


def _number(value: Any) -> float | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, str) and value.lower() in ("nan", "inf", "-inf", "infinity"):
        return float(value)
    return None


def _points(entry: Any, rel: str) -> list[tuple[int, str, float, str]]:
    if not isinstance(entry, dict) or not isinstance(entry.get("step"), int):
        return []
    step, out = entry["step"], []
    for key, tag in (("loss", "loss"), ("grad_norm", "grad_norm"), ("loss_scale", "loss_scale"),
                     ("step_time", "step_time")):
        v = _number(entry.get(key))
        if v is not None:
            out.append((step, tag, v, rel))
    lrs = entry.get("lr")
    if isinstance(lrs, list) and lrs and (v := _number(lrs[0])) is not None:
        out.append((step, "learning_rate", v, rel))
    return out


def _samples(rows: Any, ids: Any) -> str:
    rows = rows if isinstance(rows, list) else []
    if isinstance(ids, list) and rows and all(isinstance(r, int) and 0 <= r < len(ids)
                                              for r in rows):
        return f"sample(s) {[ids[r] for r in rows]}"
    return f"batch row(s) {rows}"


def _data_text(data: Any, ids: Any = None) -> str:
    """What the data checks found, in words (empty when nothing)."""
    if not isinstance(data, dict):
        return ""
    parts = []
    for name, info in (data.get("labels_out_of_range") or {}).items():
        parts.append(f"label(s) {info.get('values')} (batch item {name}) outside "
                     f"0..{info.get('num_classes')} in {_samples(info.get('rows'), ids)}")
    for name, info in (data.get("nonfinite_inputs") or {}).items():
        parts.append(f"{info.get('count')} non-finite value(s) in batch item {name}, "
                     f"{_samples(info.get('rows'), ids)}")
    return "; ".join(parts)


def _event(meta: dict[str, Any], rel: str) -> list[Any]:
    step = meta.get("step") if isinstance(meta.get("step"), int) else None
    rank = meta.get("rank") if isinstance(meta.get("rank"), int) else None
    world = meta.get("world_size")
    if not isinstance(world, int) or world <= 1:
        rank = None  # one process: no rank to name
    details = {**meta, "from": "capture"}
    error = meta.get("error")
    if isinstance(error, str) and error:
        exc, _, msg = error.partition(": ")
        found = _data_text(meta.get("data"), meta.get("batch_ids"))
        if found:
            msg = f"{msg} ({found})"
        details.update(exception=exc, exc_message=msg, headerless=True)
        # an event's step is the last step logged before it: the step in progress is after
        before = step - 1 if isinstance(step, int) and step > 0 else None
        return [rank, math.nan, before, "traceback", f"{exc}: {msg}", rel, None, details]
    probe = meta.get("probe") if isinstance(meta.get("probe"), dict) else {}
    where = f": first non-finite in module {probe.get('module')}" if probe.get("module") else ""
    return [rank, math.nan, step, "nan_loss",
            f"autopsy.capture: step {step} is not finite{where}", rel, None, details]
