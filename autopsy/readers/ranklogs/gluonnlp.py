"""GluonNLP fine-tuning logs (``scripts/bert/finetune_classifier.py`` and its copies).

Training lines: ``[Epoch 1 Batch 60/82] loss=0.6668, lr=0.0000188, metrics:accuracy:0.5546``
(the loss is the mean over the last ``log_interval`` batches, the metrics cumulative over the
epoch). An evaluation opens with ``Now we are doing evaluation on dev with gpu(0).``, prints
``[Batch 10/35] loss=0.6475, metrics:accuracy:0.6500`` lines (no epoch: their loss is again a
mean over ``log_interval`` batches) and closes with ``validation metrics:accuracy:0.6534``. The
evaluation is one point at the last training step: the eval loss is the mean of its batch
lines, the metrics those of the closing line. Epochs are 1-based in most copies of the
script and 0-based in some: the first epoch seen (0 or 1) is taken as the first.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from autopsy.readers.ranklogs.metrics import _NUM, MetricLine, _float

if TYPE_CHECKING:  # pragma: no cover
    from autopsy.readers.ranklogs.adapters import LineContext

#: Literals one of which a GluonNLP line that this module reads holds.
LITERALS: tuple[str, ...] = ("Now we are doing evaluation on", "validation metrics:",
                             "] loss=")

_TRAIN = re.compile(r"\[Epoch (\d+) Batch (\d+)/(\d+)\] loss=(" + _NUM + r")")
_EVAL = re.compile(r"\[Batch (\d+)/(\d+)\] loss=(" + _NUM + r")")
_METRIC = re.compile(r"([A-Za-z_][\w-]*):(" + _NUM + r")(?=,|\s|$)")
_LR = re.compile(r"\blr=(" + _NUM + r")")


def _metrics(text: str) -> list[tuple[str, float]]:
    """The ``name:value`` pairs after ``metrics:``."""
    at = text.find("metrics:")
    return [] if at < 0 else [(k, _float(v)) for k, v in _METRIC.findall(text[at + 8:])]


def parse_gluonnlp(text: str, ctx: LineContext) -> MetricLine | None:
    """One GluonNLP line (see the module docstring)."""
    if "Now we are doing evaluation on" in text:
        ctx.gluon_eval = (0.0, 0)
        return MetricLine("gluonnlp_eval", None, [], stateless=False)  # opens a block
    m = _TRAIN.search(text)
    if m is not None:
        epoch, batch, n = int(m.group(1)), int(m.group(2)), int(m.group(3))
        if ctx.gluon_base is None:
            ctx.gluon_base = min(epoch, 1)
        step = (epoch - ctx.gluon_base) * n + batch
        pairs = [("loss", _float(m.group(4)))]
        if (lr := _LR.search(text)) is not None:
            pairs.append(("lr", _float(lr.group(1))))
        pairs += _metrics(text)
        ctx.gluon_eval = None  # training again: any evaluation block is over
        ctx.train_step = step
        return MetricLine("gluonnlp", step, pairs, stateless=False)
    if ctx.gluon_eval is None:
        return None
    if (e := _EVAL.search(text)) is not None:
        total, count = ctx.gluon_eval  # a sum and a count: an unclosed block costs nothing
        ctx.gluon_eval = (total + _float(e.group(3)), count + 1)
        return MetricLine("gluonnlp_eval", None, [], stateless=False)  # progress only
    if "validation metrics:" in text and not text.rstrip().endswith("validation metrics:"):
        (total, count), ctx.gluon_eval = ctx.gluon_eval, None
        if ctx.train_step is None:
            return None
        pairs = [(f"val_{k}", v) for k, v in _metrics(text)]
        if count:
            pairs.insert(0, ("val_loss", total / count))
        return MetricLine("gluonnlp_eval", ctx.train_step, pairs, stateless=False) \
            if pairs else None
    return None
