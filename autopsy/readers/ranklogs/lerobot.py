"""LeRobot training logs (``lerobot/scripts/train.py``, its ``MetricsTracker``).

One line per ``log_freq`` steps: ``step:9 smpl:576 ep:2 epch:0.00 loss:1.051 grdn:4.482
lr:1.8e-06 updt_s:0.302 data_s:13.330``, each meter written ``name:value`` with no space.
``grdn`` is the gradient norm, ``updt_s`` the seconds of the update (forward, backward,
optimizer step: the compute time), ``data_s`` the seconds spent waiting for the batch (the
data time). The step and sample counts are written by ``format_big_number``, which rounds
from 1,000 on (``step:20K``, ``step:2M``): such a step is read at that rounding, and lines that
round to the same step give one point.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from autopsy.readers.ranklogs.metrics import _NUM, MetricLine

if TYPE_CHECKING:  # pragma: no cover
    from autopsy.readers.ranklogs.adapters import LineContext

#: Literals one of which a LeRobot metric line holds.
LITERALS: tuple[str, ...] = ("updt_s:", "data_s:")

_STEP = re.compile(r"(?<![\w.])step:(\d+(?:\.\d+)?)([KMBTQ]?)(?=\s)")
_PAIR = re.compile(r"(?<![\w.])([A-Za-z_][\w]*):(" + _NUM + r")(?=\s|$)")
_SUFFIX = {"": 1, "K": 10**3, "M": 10**6, "B": 10**9, "T": 10**12, "Q": 10**15}
#: The tracker's counters, not series.
_COUNTERS = frozenset({"step", "smpl", "ep", "epch"})
#: The tracker's short names -> the names the alias table knows.
_NAMES = {"grdn": "grad_norm", "updt_s": "compute_time", "data_s": "data_time"}


def parse_lerobot(text: str, ctx: LineContext) -> MetricLine | None:
    """One ``MetricsTracker`` line (see the module docstring)."""
    m = _STEP.search(text)
    if m is None:
        return None
    step = round(float(m.group(1)) * _SUFFIX[m.group(2)])
    pairs = [(_NAMES.get(k, k), float(v)) for k, v in _PAIR.findall(text[m.end():])
             if k not in _COUNTERS]
    if not any(k == "loss" for k, _ in pairs):
        return None
    return MetricLine("lerobot", step, pairs)
