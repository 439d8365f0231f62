"""Marian NMT training logs.

Marian's scheduler logs training every ``--disp-freq`` updates and validation every
``--valid-freq`` updates, each on its own line after a ``[date time]`` prefix::

    [2017-12-05 15:09:59] Ep. 1 : Up. 1000 : Sen. 81308 : Cost 84.54 : Time 382.09s :
        2688.68 words/s
    Ep. 2 : Up. 1000 : Sen. 311,824 : Cost 4.95877838 : Time 163.05s : 33655.40 words/s :
        L.r. 1.0000e-04
    [2019-10-17 17:51:28] [valid] Ep. 2 : Up. 80000 : cross-entropy : 53.9433 : new best

(each training line is one line in the log, wrapped here).

The update count (``Up.``) is the step. ``Cost`` is the training loss (whatever ``--cost-type``
says: a sum or a mean); ``L.r.`` the learning rate and ``gNorm`` the gradient norm where
printed; ``words/s`` the throughput (added by :mod:`.rates`). A validation line's metric is
``valid_<metric>`` (``cross-entropy`` and the ``ce-*`` costs are its loss, ``perplexity`` its
perplexity): its value is stepped at its own update count.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from autopsy.readers.ranklogs.metrics import _NUM, MetricLine, _float

if TYPE_CHECKING:  # pragma: no cover
    from autopsy.readers.ranklogs.adapters import LineContext

#: The literal every train and validation line holds.
LITERALS: tuple[str, ...] = (" : Up. ",)

_POS = re.compile(r"\bEp\. (\d+) : Up\. (\d+(?:,\d{3})*) : ")
_COST = re.compile(r"\bCost (" + _NUM + ")")
_LR = re.compile(r"\bL\.r\. (" + _NUM + ")")
_GNORM = re.compile(r"\bgNorm (" + _NUM + ")")
_VALID = re.compile(r"\[valid\] Ep\. \d+ : Up\. (\d+(?:,\d{3})*) : ([\w.-]+) : (" + _NUM
                    + ")")
_VALID_NAMES = {"cross-entropy": "valid_loss", "ce-mean": "valid_loss",
                "ce-mean-words": "valid_loss", "ce-sum": "valid_loss",
                "perplexity": "valid_perplexity"}


def parse_marian(text: str, ctx: LineContext) -> MetricLine | None:
    """One Marian training (``Ep. N : Up. M : ... Cost X``) or ``[valid]`` line."""
    v = _VALID.search(text)
    if v is not None:
        name = v.group(2).lower()
        tag = _VALID_NAMES.get(name, f"valid_{name}")
        return MetricLine("marian_eval", int(v.group(1).replace(",", "")),
                          [(tag, _float(v.group(3)))])
    pos = _POS.search(text)
    cost = _COST.search(text)
    if pos is None or cost is None:
        return None
    pairs = [("loss", _float(cost.group(1)))]
    for pattern, tag in ((_LR, "learning_rate"), (_GNORM, "grad_norm")):
        m = pattern.search(text)
        if m is not None:
            pairs.append((tag, _float(m.group(1))))
    return MetricLine("marian", int(pos.group(2).replace(",", "")), pairs)
