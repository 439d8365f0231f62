"""Turn report data into strict JSON: numpy scalars unwrapped, NaN/Inf as strings."""

from __future__ import annotations

import math
from collections.abc import Mapping
from enum import Enum
from pathlib import Path
from typing import Any

#: How non-finite floats are written, so that the output stays valid JSON.
NON_FINITE = {"nan": "NaN", "inf": "Infinity", "-inf": "-Infinity"}


def jsonable(value: Any) -> Any:
    """Return ``value`` as plain JSON-able Python (recursively).

    Non-finite floats become the strings ``"NaN"``, ``"Infinity"`` and
    ``"-Infinity"``; numpy scalars become Python numbers; enums their value.
    """
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, Enum):
        return value.value
    if isinstance(value, int):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else NON_FINITE[repr(value)]
    if isinstance(value, Path):
        return value.as_posix()
    if isinstance(value, Mapping):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, set, frozenset)):
        return [jsonable(v) for v in value]
    item = getattr(value, "item", None)  # numpy scalar
    if callable(item):
        try:
            return jsonable(item())
        except (TypeError, ValueError):
            pass
    if value.__class__.__name__ in ("NAType", "NaTType"):
        return None
    return str(value)
