"""PaddlePaddle training logs: PaddleClas, PaddleDetection, PaddleOCR, PaddleSeg.

The Paddle suites print one line per logged iteration with their own step markers and
their own timing keys (``reader_cost``/``data_cost`` is the data wait, ``batch_cost``
the whole iteration, data wait included, ``ips`` the throughput):

* PaddleClas: ``[Train][Epoch 1/120][Iter: 10/5005]lr: 0.10000, CELoss: 6.91201, loss:
  6.91201, batch_cost: 0.90415s, reader_cost: 0.60117, ips: 283.13886 images/sec, eta:
  ...``; the epoch counts from 1 and the iteration from 0 within it, so the step is
  ``(epoch - 1) × iterations + i``. The learning rate may be written ``lr(Cosine):``.
  ``[Eval][Epoch 1][Avg]CELoss: ..., loss: ..., top1: ...`` is the evaluation's average
  (its keys get a ``val_`` prefix, at the last training step); ``[Eval]...[Iter: i/n]``
  lines are per-batch evaluation progress and give no point.
* PaddleDetection: ``Epoch: [0] [  20/3665] learning_rate: 0.000100 loss_class: ...
  loss: 3.71 eta: 2 days, 23:11:54 batch_cost: 2.9313 data_cost: 2.6409 ips: 0.6822
  images/s``; the epoch counts from 0: the step is ``epoch × iterations + i``.
* PaddleOCR: ``epoch: [1/500], iter: 10, lr: 0.001000, loss: 24.5, ..., reader_cost:
  0.82114 s, batch_cost: 0.97212 s, samples: 1280, ips: 1316.7 samples/s``; ``iter``
  (``global_step`` in some versions) is the global step.
* PaddleOCR 1.x (static graph): ``epoch: 0, iter: 20, 'lr': 0.002, 'total_loss': 1.0,
  'loss_shrink_maps': 0.0, ..., time: 0.471`` (detection) and ``epoch: 0, iter: 2, lr:
  0.000001, 'loss': nan, 'acc': 0.0, time: 2.346`` (recognition): the outputs printed as a
  dict's items, then the iteration's time; ``iter`` is the global step.
* PaddleSeg: ``[TRAIN] epoch: 1, iter: 10/80000, loss: 2.6213, lr: 0.009999, batch_cost:
  0.5522, reader_cost: 0.36331, ips: 14.4880 samples/sec | ETA 12:15:53``; ``iter`` is
  the global step.

The formats follow the suites' own logging calls (``ppcls/engine/train/utils.py``,
``ppdet/engine/callbacks.py``, ``tools/program.py`` of PaddleOCR,
``paddleseg/core/train.py``).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from autopsy.readers.ranklogs.metrics import _NUM, MetricLine

if TYPE_CHECKING:  # pragma: no cover
    from autopsy.readers.ranklogs.adapters import LineContext

#: Literals one of which a Paddle metric line holds (the adapter's cheap pre-check).
LITERALS: tuple[str, ...] = ("[Train][Epoch", "[Eval][Epoch", "batch_cost", ", iter: ")

_CLAS = re.compile(r"\[(Train|Eval)\]\[Epoch (\d+)(?:/\d+)?\]\[(?:Iter: (\d+)/(\d+)|Avg)\]")
_DET = re.compile(r"\bEpoch: \[(\d+)\]\s*\[\s*(\d+)\s*/\s*(\d+)\s*\]")
_OCR = re.compile(r"\bepoch: \[\d+/\d+\], (?:iter|global_step): (\d+)\b")
_OCR1 = re.compile(r"\bepoch: \d+, iter: (\d+), (?=(?:lr: [^,]*, )?')")
_QUOTED_PAIR = re.compile(r"'([A-Za-z_][\w/.-]*)': (" + _NUM + r")(?=[,}\s]|$)")
_SEG = re.compile(r"\[TRAIN\] epoch: \d+, iter: (\d+)/\d+\b")
#: ``lr(Cosine): 0.1`` (PaddleClas names the schedule): read as ``lr``.
_LR_NAMED = re.compile(r"\blr\([^)]*\):")
#: Keys that are counters or clocks, not series.
_SKIPPED = frozenset({"samples", "eta"})


#: PaddleOCR (and PaddleSeg, PaddleVideo) print their averaged values with
#: ``'{}: {:x<6f}'.format(k, v)``: a finite value has six decimals, but a NaN or an Inf is
#: padded with ``x`` to six characters (``loss: nanxxx``, ``-infxx``).
_X_PADDED = re.compile(r"(?<![\w.])(-?(?:nan|inf))x+(?![\w.])")


def _pairs(rest: str) -> list[tuple[str, float]]:
    from autopsy.readers.ranklogs.adapters import _COLON_PAIR, _pairs

    if "x" in rest:
        rest = _X_PADDED.sub(r"\1", rest)
    return [(k, v) for k, v in _pairs(_LR_NAMED.sub("lr:", rest), _COLON_PAIR)
            if k.lower() not in _SKIPPED]


def parse_paddle(text: str, ctx: LineContext) -> MetricLine | None:
    """One PaddleClas/PaddleDetection/PaddleOCR/PaddleSeg line (see the module docstring)."""
    m = _CLAS.search(text)
    if m is not None:
        rest = text[m.end():]
        if m.group(1) == "Eval":
            if m.group(3) is not None or ctx.train_step is None:
                return MetricLine("paddle_eval", None, [], stateless=False)  # progress only
            pairs = [(f"val_{k}", v) for k, v in _pairs(rest)]
            return MetricLine("paddle_eval", ctx.train_step, pairs, stateless=False) \
                if pairs else None
        step = (int(m.group(2)) - 1) * int(m.group(4)) + int(m.group(3))
    elif (m := _DET.search(text)) is not None:
        rest = text[m.end():]
        step = int(m.group(1)) * int(m.group(3)) + int(m.group(2))
    elif (m := _OCR1.search(text)) is not None:
        rest = text[m.end():]
        unquoted = _pairs(_QUOTED_PAIR.sub("", rest))  # lr (1.x recognition) and time
        pairs = [(k, v) for k, v in unquoted if k == "lr"]
        pairs += [(k, float(v)) for k, v in _QUOTED_PAIR.findall(rest)]
        pairs += [(k, v) for k, v in unquoted if k == "time"]
        if not pairs:
            return None
        ctx.train_step = int(m.group(1))
        return MetricLine("paddle", ctx.train_step, pairs)
    elif (m := _OCR.search(text) or _SEG.search(text)) is not None:
        rest = text[m.end():]
        step = int(m.group(1))
    else:
        return None
    pairs = _pairs(rest)
    if not pairs:
        return None
    ctx.train_step = step
    return MetricLine("paddle", step, pairs)
