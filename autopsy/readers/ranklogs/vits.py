"""VITS-family training logs (VITS, so-vits-svc, Bert-VITS2 and their forks).

Their ``train.py`` logs the duration of each epoch on its own line, ``====> Epoch: 6020, cost
14.01 s`` (``logger.info('====> Epoch: {}, cost {:.2f} s'.format(epoch, duration))``), apart
from the loss lines (``Train Epoch: 12 [45%]`` followed by a printed list of losses). The
epoch line gives the epoch's wall time: as these logs count epochs, it is read as the step
time of step ``epoch``.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from autopsy.readers.ranklogs.metrics import MetricLine

if TYPE_CHECKING:  # pragma: no cover
    from autopsy.readers.ranklogs.adapters import LineContext

#: The literal every epoch line holds.
LITERALS: tuple[str, ...] = ("====> Epoch:",)

_EPOCH = re.compile(r"====> Epoch: (\d+), cost (\d+(?:\.\d*)?) s\b")


def parse_vits(text: str, ctx: LineContext) -> MetricLine | None:
    """One ``====> Epoch: N, cost X s`` line."""
    m = _EPOCH.search(text)
    if m is None:
        return None
    return MetricLine("vits", int(m.group(1)), [("epoch_time", float(m.group(2)))])
