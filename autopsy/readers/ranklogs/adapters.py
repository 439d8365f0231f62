"""Metric-line adapters for the text logs of common frameworks.

Each adapter turns one log line into a :class:`~.metrics.MetricLine` (or None). Some
formats number their steps across lines (Keras prints ``Epoch 2/10`` on its own line;
tqdm bars restart at 0 every epoch), so adapters share a :class:`LineContext`, one per
file and rank. Raw tags are kept as the framework wrote them; the alias table maps them.

Shapes read (one example each; the tests hold real-format fixtures):

* mmengine / mmdetection: ``Epoch(train)  [1][ 50/735]  lr: 2.0e-04  eta: ...  time:
  0.51  data_time: 0.01  memory: 3456  grad_norm: 12.3  loss: 1.23``, the older mmcv
  ``Epoch [1][50/7330]\tlr: 1.990e-03, eta: ..., time: 0.506, ..., loss: 1.7``, and
  ``Iter(train) [ 50/90000]`` / ``Iter [50/90000]``; the step is the global iteration,
  ``(epoch - 1) × iterations per epoch + i``. ``Epoch(val)`` lines are evaluation: their
  keys get a ``val_`` prefix and they take the last training step.
* detectron2: ``eta: 1:23:45  iter: 19  total_loss: 2.1  ...  lr: 0.0002  max_mem: 2345M``.
* torchtitan: ``step:  1  loss: 12.2345  memory: 20.1GiB(25.34%)  tps: 1,234  mfu: 1.2%``.
* nanotron: ``iteration: 100 / 1000 | ... | lm_loss: 2.3 | lr: 0.0003 | grad_norm: 1.2``.
* DeepSpeed pipeline: ``steps: 100 loss: 2.3456 iter time (s): 0.512 samples/sec: 125.1``.
* TF Estimator / absl: ``INFO:tensorflow:loss = 0.123, step = 3451 (0.512 sec)``.
* Caffe: ``Iteration 100 (2.3 iter/s, 4.3s/100 iters), loss = 0.123``, ``Iteration 100,
  lr = 0.01``, ``Test net output #1: loss = 0.3`` (evaluation, at the last iteration).
* Keras: ``Epoch 2/10`` then ``1875/1875 [====] - 5s 3ms/step - loss: 0.3 - val_loss:
  0.35`` (Keras 3 draws ``━━━━``): one point per epoch and key, the epoch's last line, at
  the epoch number as printed.
* tqdm bars with a postfix (NeMo, Lightning, plain loops): ``Epoch 3:  45%|####5  | 450/1000
  [01:23<01:41, 5.41it/s, loss=2.34, v_num=0]``: the step is the postfix's
  ``global_step``/``step`` when there is one, else ``epoch × total + n`` (else ``n``,
  carried over when the bar restarts).
* PaddleClas, PaddleDetection, PaddleOCR, PaddleSeg: see :mod:`.paddle`.
* LeRobot: ``step:9 smpl:576 ep:2 epch:0.00 loss:1.051 grdn:4.482 ... data_s:13.330``: see
  :mod:`.lerobot`.
* VITS / so-vits-svc epoch times: ``====> Epoch: 6020, cost 14.01 s``: see :mod:`.vits`.
* Generic ``key: value`` / ``key=value`` runs after a step marker (``step 10``, ``Step
  10/1000``, ``iter: 10``, ``[Iter 10/500]``, ``global_step=10``) holding a loss.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Any

from autopsy.readers.ranklogs.gluonnlp import LITERALS as GLUONNLP_LITERALS
from autopsy.readers.ranklogs.gluonnlp import parse_gluonnlp
from autopsy.readers.ranklogs.lerobot import LITERALS as LEROBOT_LITERALS
from autopsy.readers.ranklogs.lerobot import parse_lerobot
from autopsy.readers.ranklogs.marian import LITERALS as MARIAN_LITERALS
from autopsy.readers.ranklogs.marian import parse_marian
from autopsy.readers.ranklogs.metrics import _NUM, MetricLine
from autopsy.readers.ranklogs.paddle import LITERALS as PADDLE_LITERALS
from autopsy.readers.ranklogs.paddle import parse_paddle
from autopsy.readers.ranklogs.rates import LITERALS as RATE_LITERALS
from autopsy.readers.ranklogs.rates import parse_rate_line
from autopsy.readers.ranklogs.vits import LITERALS as VITS_LITERALS
from autopsy.readers.ranklogs.vits import parse_vits

_VALUE = r"(" + _NUM + r")"
#: ``key: value`` pairs (mmengine, detectron2, torchtitan, nanotron, Keras, generic).
_COLON_PAIR = re.compile(r"(?<![\w/.(-])([A-Za-z_][\w/.@-]*?)\s*:\s+" + _VALUE
                         + r"(?:\s*(?:[KMGT]i?B|[KMGT]|%|ms|s))?(?=[\s,;`|()\]]|$)")
#: ``key value`` pairs of generic lines (``train_loss 0.45 acc 0.9``), metric words only.
#: A value may carry a seconds unit (``Time 7.420s (7.420s)``, the AverageMeter lines of
#: the PyTorch ImageNet example and its descendants) and a key an ``@k`` (``Acc@1``).
_SPACE_PAIR = re.compile(r"(?<![\w/.-])([A-Za-z_][\w/.@-]*)\s+" + _VALUE
                         + r"s?(?=[\s,;`|)\]]|$)")
#: ``key=value`` and ``key = value`` pairs (tqdm postfixes, TF, fairseq, generic).
_EQ_PAIR = re.compile(r"(?<![\w/.-])([A-Za-z_][\w/.@-]*)\s?=\s?" + _VALUE
                      + r"%?(?=[\s,;`|)\]]|$)")  # ``acc=81.2%``: the value as printed
_THOUSANDS = re.compile(r"(?<=\d),(?=\d{3}(?!\d))")
#: Keys never kept as series (clock times, counters of the bar itself, ids).
SKIPPED_KEYS = frozenset({"eta", "v_num", "epoch", "iter", "iteration", "step", "steps",
                          "global_step", "it", "rank", "pid", "time_stamp", "consumed_samples",
                          "consumed_tokens", "num_updates", "update"})

_MM = re.compile(r"\b(Epoch|Iter)(?:\((train|val|test)\))?\s*\[\s*(\d+)\s*\]"
                 r"(?:\s*\[\s*(\d+)\s*/\s*(\d+)\s*\])?")
_MM_ITER = re.compile(r"\bIter(?:\((train|val|test)\))?\s*\[\s*(\d+)\s*/\s*(\d+)\s*\]")
_D2_ITER = re.compile(r"\biter:\s+(\d+)\b")
_TITAN = re.compile(r"\bstep:\s+(\d+)\s+loss:")
_NANO = re.compile(r"\biteration:\s+(\d+)\s*/\s*\d+")
_DS_PIPE = re.compile(r"\bsteps:\s+(\d+)\s+loss:")
_TF = re.compile(r"\bstep\s?=\s?(\d+)\b")
_CAFFE_ITER = re.compile(r"\bIteration\s+(\d+)\b")
_CAFFE_TEST = re.compile(r"Test net output #\d+:\s+(\w+)\s+=\s+" + _VALUE)
_CAFFE_TRAIN = re.compile(r"Train net output #\d+:\s+(\w+)\s+=\s+" + _VALUE)
#: (Lasagne's mnist.py, copied into many repositories, prints ``Epoch 1 of 500 took 9.612s``
#: then ``  training loss:\t\t1.211208``, ``  validation accuracy:\t\t89.23 %`` lines)
_KERAS_EPOCH = re.compile(r"^\s*Epoch\s+(\d+)(?:\s*/\s*(\d+)|\s+out of\s+(\d+)|\s+of\s+(\d+)"
                          r"\s+took\s+(" + _NUM + r")s)?\s*$")
_KERAS_BAR = re.compile(r"^\s*(\d+)/(\d+)\s+(?:\[[=>.]*\]|[━─]+|-\s)")
#: The time a finished Keras bar took: ``[====] - 5s 3ms/step``, Keras 1's ``[====] - 12s -
#: loss``, Keras 3's ``━━━━ 5s 3ms/step`` (whole seconds; ``ms``/``us`` for a sub-second epoch)
_KERAS_TOOK = re.compile(r"^\s*\d+/\d+\s+(?:\[[=>.]*\]|[━─]+)\s+(?:-\s+)?(" + _NUM
                         + r")(s|ms|us)(?=\s)")
_TIME_UNITS = {"s": 1.0, "ms": 1e-3, "us": 1e-6}
_KERAS_PAIR = re.compile(r"\s-\s([A-Za-z_][\w/]*(?: [A-Za-z_][\w/]*)?):\s" + _VALUE)
_BAR = re.compile(r"(\d+)%\|[^|]*\|\s*(\d+)/(\d+)\s*\[([^\]]*)\]")
_BAR_EPOCH = re.compile(r"\bEpoch\s+(\d+)\b")
#: Words one key must contain to be kept from a generic line.
METRIC_WORDS = ("loss", "lr", "learning_rate", "learningrate", "grad", "norm", "scale", "time",
                "acc", "ppl", "perplexity", "tps", "throughput", "mem", "mfu", "flops", "per_sec",
                "/s", "samples", "tokens", "map", "top1", "top5", "f1", "bleu", "entropy", "nll",
                "xent", "speed", "prec", "smoothl1")

#: Keys kept only when they are the whole key: ``Data 0.001 (0.264)`` (an AverageMeter's data
#: wait) and ``data: 0.43`` (torchvision's MetricLogger), too common as a part of other words.
EXACT_METRIC_KEYS = frozenset({"data", "cost"})


@dataclass
class LineContext:
    """What adapters remember between the lines of one file and rank."""

    keras_epoch: int | None = None
    keras_values: list[tuple[str, float]] | None = None
    #: batches of a finished Keras bar met before any ``Epoch N/M`` line (an excerpt that
    #: starts at an epoch's end): its values wait in ``keras_values`` for the next header
    keras_orphan: int | None = None
    caffe_step: int | None = None
    #: ``Epoch 1/1`` headers seen (a loop of one-epoch ``fit`` calls: each is a step)
    keras_single_fits: int = 0
    #: finished Keras bars met before any ``Epoch N/M`` header
    keras_finished: int = 0
    bar_offset: int = 0
    pos_epoch: int | None = None
    pos_offset: int = 0
    pos_top: int = 0
    bar_last: int = -1
    bar_total: int = 0
    train_step: int | None = None
    #: the epoch, global step and epoch length (None when not given) of the last ``epoch +
    #: position`` line (``Epoch 3, Batch 40/80``): an epoch summary (``Epoch 3 Training -
    #: Loss: ...``) is stepped on the same scale as the batch lines, not at the epoch number
    pos_last: tuple[int, int, int | None] | None = None
    #: key/value lines of a pretty-printed JSON object seen so far, and the last line's number
    json_pending: list[tuple[str, float]] | None = None
    json_line: int = -10
    #: the number of the line being parsed (set by the scanner)
    line: int = 0
    #: metric names the Speedometer printed finite in the current MXNet epoch, and those it
    #: printed non-finite (see :func:`parse_mxnet`)
    mx_finite: set[str] = field(default_factory=set)
    mx_bad: set[str] = field(default_factory=set)
    #: GluonNLP: the sum and count of the batch losses of the evaluation being printed (None
    #: outside one), and the number of the first epoch (0 or 1; None until a training line)
    gluon_eval: tuple[float, int] | None = None
    gluon_base: int | None = None
    #: PyTorch's quickstart loop: the samples of the epochs before the current one, and the
    #: last ``[current/size]`` position read (see :func:`parse_torch_quickstart`)
    quick_offset: int = 0
    quick_last: int = -1


def _float(text: str) -> float:
    try:
        return float(text)
    except ValueError:
        return math.nan


def _pairs(text: str, pattern: re.Pattern[str], words: tuple[str, ...] | None = None
           ) -> list[tuple[str, float]]:
    out: list[tuple[str, float]] = []
    seen: set[str] = set()
    for key, value in pattern.findall(_THOUSANDS.sub("", text)):
        key = key.strip()
        low = key.lower()
        if low in SKIPPED_KEYS or key in seen:
            continue
        if words is not None and not any(w in low for w in words):
            continue
        seen.add(key)
        out.append((key, _float(value)))
    return out


def parse_mmengine(text: str, ctx: LineContext) -> MetricLine | None:
    """An mmengine/mmcv ``Epoch(train) [e][i/n] ...`` or ``Iter [i/n] ...`` line."""
    m = _MM.search(text)
    mode = None
    if m and m.group(4) is not None:
        mode = m.group(2) or "train"
        epoch, i, n = int(m.group(3)), int(m.group(4)), int(m.group(5))
        step = (epoch - 1) * n + i
        rest = text[m.end():]
    else:
        it = _MM_ITER.search(text)
        if it is None:
            if m is None or m.group(2) != "val":
                return None
            mode, step, rest = "val", None, text[m.end():]  # Epoch(val) [1][500] summary
        else:
            mode = it.group(1) or "train"
            step = int(it.group(2))
            rest = text[it.end():]
    pairs = _pairs(rest, _COLON_PAIR)
    if not pairs:
        return None
    if mode != "train":
        pairs = [(k if k.startswith(("val", "coco/", "pascal_voc/")) else f"val_{k}", v)
                 for k, v in pairs if k not in ("time", "data_time", "memory")]
        step = ctx.train_step
        if not pairs or step is None:
            return None
        return MetricLine("mmengine_eval", step, pairs)
    ctx.train_step = step
    return MetricLine("mmengine", step, pairs)


def parse_detectron2(text: str, ctx: LineContext) -> MetricLine | None:
    """A detectron2 ``iter: N  total_loss: ...`` line."""
    m = _D2_ITER.search(text)
    if m is None:
        return None
    pairs = _pairs(text, _COLON_PAIR)
    if not any("loss" in k for k, _ in pairs):
        return None
    return MetricLine("detectron2", int(m.group(1)), pairs)


def parse_torchtitan(text: str, ctx: LineContext) -> MetricLine | None:
    """A torchtitan ``step: N  loss: X  memory: ...`` line."""
    m = _TITAN.search(text)
    if m is None:
        return None
    pairs = _pairs(text[m.start():], _COLON_PAIR)
    return MetricLine("torchtitan", int(m.group(1)), pairs) if pairs else None


def parse_nanotron(text: str, ctx: LineContext) -> MetricLine | None:
    """A nanotron ``iteration: N / M | ... | lm_loss: X`` line."""
    m = _NANO.search(text)
    if m is None:
        return None
    pairs = _pairs(text[m.end():], _COLON_PAIR)
    if not any("loss" in k for k, _ in pairs):
        return None
    return MetricLine("nanotron", int(m.group(1)), pairs)


def parse_deepspeed_pipe(text: str, ctx: LineContext) -> MetricLine | None:
    """A DeepSpeed pipeline-engine ``steps: N loss: X iter time (s): ...`` line."""
    m = _DS_PIPE.search(text)
    if m is None:
        return None
    pairs = [(k, v) for k, v in _pairs(text[m.end() - 5:], _COLON_PAIR) if "loss" in k]
    t = re.search(r"iter time \(s\):\s+" + _VALUE, text)
    if t:
        pairs.append(("step_time", _float(t.group(1))))
    s = re.search(r"samples/sec:\s+" + _VALUE, text)
    if s:
        pairs.append(("samples_per_second", _float(s.group(1))))
    return MetricLine("deepspeed_pipe", int(m.group(1)), pairs)


def parse_tf(text: str, ctx: LineContext) -> MetricLine | None:
    """A TF Estimator / absl ``loss = X, step = N`` line."""
    if " = " not in text and "=" not in text:
        return None
    m = _TF.search(text)
    if m is None:
        return None
    pairs = _pairs(text, _EQ_PAIR)
    if not any("loss" in k for k, _ in pairs):
        return None
    return MetricLine("tf", int(m.group(1)), pairs)


def parse_caffe(text: str, ctx: LineContext) -> MetricLine | None:
    """Caffe solver lines: ``Iteration N ..., loss = X``, ``Iteration N, lr = X``, the test
    net's outputs (``test_`` keys) and the train net's outputs other than its losses
    (``Train net output #0: accuracy = 0.0078125``), at the last ``Iteration N``."""
    it = _CAFFE_ITER.search(text)
    if it is not None:
        step = int(it.group(1))
        ctx.caffe_step = step
        pairs = _pairs(text[it.end():], _EQ_PAIR, ("loss", "lr"))
        return MetricLine("caffe", step, pairs) if pairs else None
    if ctx.caffe_step is None:
        return None
    t = _CAFFE_TEST.search(text)
    if t:
        return MetricLine("caffe_eval", ctx.caffe_step, [(f"test_{t.group(1)}",
                                                          _float(t.group(2)))])
    r = _CAFFE_TRAIN.search(text)
    if r and "loss" not in r.group(1).lower():
        # the training batch's other outputs (accuracy); its losses are the iteration line's
        return MetricLine("caffe", ctx.caffe_step, [(r.group(1), _float(r.group(2)))],
                          stateless=False)
    return None


def keras_epoch(text: str, ctx: LineContext) -> MetricLine | None:
    """A Keras ``Epoch N/M`` line: closes the previous epoch (its last values)."""
    m = _KERAS_EPOCH.match(text)
    if m is None:
        return None
    epoch = int(m.group(1))
    if epoch == 1 and (m.group(2) or m.group(3) or m.group(4)) == "1":
        # ``model.fit(..., epochs=1)`` called in a loop prints ``Epoch 1/1`` each time: the
        # calls are the run's steps (1, 2, 3...), not one epoch logged again and again
        ctx.keras_single_fits += 1
        epoch = ctx.keras_single_fits
    if ctx.keras_epoch is None and ctx.keras_orphan is not None and epoch > 1:
        ctx.keras_epoch = epoch - 1  # the finished bar before the first header: its epoch
    done = flush_keras(ctx)
    ctx.keras_epoch = epoch
    if m.group(5) is not None:  # Lasagne's header carries the epoch's time
        ctx.keras_values = [("epoch_time", _float(m.group(5)))]
    return done


def flush_keras(ctx: LineContext) -> MetricLine | None:
    """The last values seen in the current Keras epoch, as one line at its number (a
    finished bar that no header followed: at its batch count, as :func:`parse_keras_batches`
    reads bars)."""
    if not ctx.keras_values:
        return None
    if ctx.keras_epoch is None:
        if ctx.keras_orphan is None:
            return None
        out = MetricLine("keras_batch", ctx.keras_orphan, ctx.keras_values)
    else:
        out = MetricLine("keras", ctx.keras_epoch, ctx.keras_values)
    ctx.keras_values = None
    ctx.keras_orphan = None
    return out


def parse_keras_batches(text: str, ctx: LineContext) -> MetricLine | None:
    """A Keras progress line with no ``Epoch N/M`` line before it (an excerpt): the
    batch number of the bar is the step. A finished bar (``40/40``) is an epoch's end:
    it waits for the next ``Epoch N/M`` line, which makes it epoch N - 1."""
    m = _KERAS_BAR.match(text)
    if m is None or ctx.keras_epoch is not None or " - " not in text:
        return None
    pairs = _keras_pairs(text, m)
    if not pairs:
        return None
    if m.group(1) == m.group(2) and "ETA" not in text:
        ctx.keras_finished += 1
        if ctx.keras_finished == 1:
            ctx.keras_orphan, ctx.keras_values = int(m.group(1)), pairs
            return None
        # finished bars with no header between them: Keras 3 prints none for ``fit(...,
        # epochs=1)``, so these are fit calls in a loop, stepped 1, 2, 3...
        if ctx.keras_values:
            ctx.keras_orphan = ctx.keras_finished - 1
        before = flush_keras(ctx)
        ctx.keras_orphan, ctx.keras_values = ctx.keras_finished, pairs
        return before
    if ctx.keras_finished:
        # an epoch in progress after finished ones (an excerpt cut mid-epoch): the next
        # epoch's running values, at its ordinal, not at its batch count (which would put
        # a point 100,000 steps past epochs numbered 1, 2, 3...)
        before = None
        if ctx.keras_values and ctx.keras_orphan != ctx.keras_finished + 1:
            ctx.keras_orphan = ctx.keras_finished
            before = flush_keras(ctx)
        ctx.keras_orphan, ctx.keras_values = ctx.keras_finished + 1, pairs
        return before
    return MetricLine("keras_batch", int(m.group(1)), pairs)


def parse_keras(text: str, ctx: LineContext) -> MetricLine | None:
    """A Keras progress line (kept until the epoch ends; see :func:`flush_keras`)."""
    if ctx.keras_epoch is None:
        return None
    last, bar = None, None
    for seg in re.split(r"[\r\x08]+", text):
        m = _KERAS_BAR.match(seg)
        if m and " - " in seg:
            last, bar = seg, m
    if last is None or bar is None:
        return None
    pairs = _keras_pairs(last, bar)
    if pairs:
        ctx.keras_values = pairs
    return None


def _keras_pairs(seg: str, bar: re.Match[str]) -> list[tuple[str, float]]:
    """The ``key: value`` pairs of one Keras bar, and ``epoch_time`` (seconds) when the bar
    is finished (``n/n``, no ETA) and says how long it took."""
    pairs = [(k.replace(" ", "_"), _float(v)) for k, v in _KERAS_PAIR.findall(seg)
             if k != "ETA"]
    if pairs and bar.group(1) == bar.group(2) and "ETA" not in seg:
        took = _KERAS_TOOK.match(seg)
        if took is not None:
            secs = _float(took.group(1)) * _TIME_UNITS[took.group(2)]
            if secs > 0:  # "0s": under half a second, rounded away; no time to give
                pairs.append(("epoch_time", secs))
    return pairs


def parse_bar(text: str, ctx: LineContext) -> MetricLine | None:
    """The last redraw of a tqdm bar whose postfix holds a loss."""
    found = last = None
    for m in _BAR.finditer(text):
        last = m
        if "loss" in m.group(4):
            found = m
    if found is None:
        if last is None:
            return None
        # the loss in the bar's description: "Epoch 0 | Batch 468/469 | Loss 3.94: 100%|..."
        desc = text[:last.start()].rstrip().rstrip(":")
        if not any(w in desc.lower() for w in LOSS_WORDS):
            return None
        return parse_generic_pairs(desc, ctx)
    postfix = found.group(4)
    n, total = int(found.group(2)), int(found.group(3))
    pairs = []
    for part in postfix.split(","):  # tqdm postfix: "k=v, k=v"; keys may hold spaces
        key, eq, value = part.partition("=")
        key = re.sub(r"\s*\([^)]*\)", "", key).strip()  # "loss (batch)" -> "loss"
        if eq and key and key.lower() not in SKIPPED_KEYS and re.fullmatch(_NUM, value.strip()):
            pairs.append((key, _float(value.strip())))
    explicit = re.search(r"\b(?:global_step|step)=(\d+(?:\.0)?)", postfix)
    if explicit:
        step = int(float(explicit.group(1)))
    else:
        ep = _BAR_EPOCH.search(text[:found.start()])
        if ep:
            step = int(ep.group(1)) * total + n
        else:
            if n < ctx.bar_last:
                ctx.bar_offset += max(ctx.bar_total, ctx.bar_last)
            ctx.bar_last, ctx.bar_total = n, total
            step = ctx.bar_offset + n
    pairs = [(k, v) for k, v in pairs if "loss" in k.lower() or k.lower() in ("lr", "grad_norm")
             or any(w in k.lower() for w in ("acc", "lr", "norm", "scale"))]
    return MetricLine("tqdm", step, pairs) if pairs else None


_BRACKET_KEY = re.compile(r"\[([A-Za-z][A-Za-z_ ]*)\]")
#: Step markers of generic lines, most precise first (case-insensitive).
_STEP_MARKERS = (
    re.compile(r"(?i)(?:^|[^\w])global[ _]?step\s*(?:[:=#]\s*)?(\d+)"),
    re.compile(r"(?i)(?:^|[^\w/])(?:step|steps|updates?|num_updates)\s*(?:[:=#]\s*)?(\d+)\b"),
    re.compile(r"(?i)(?:^|[^\w])(?:iter|iteration|it|batch)\s*(?:[:=#]\s*)?(?:\[\s*)?(\d+)\b"),
)
_EPOCH_MARKER = re.compile(r"(?i)(?:^|[^\w])(?:epoch|ep|e)\s*(?:[:=#]\s*)?(?:\[\s*)?(\d+)\b")
#: Multi-word keys ending in loss (``Total Loss 2.6``, ``Train Loss: 0.3``).
_WORDS_LOSS = re.compile(r"(?<![\w])((?:(?i:total|train|training|val|valid|validation|test|"
                         r"eval|avg|average|mean|running|epoch|batch|lm|cls|reg)[ _])?"
                         r"[A-Za-z]*[Ll][Oo][Ss][Ss])\s*(?:[:=]\s*)?"
                         + _VALUE + r"(?=[\s,;`|)\]]|$)")
#: A metric named with its phase in words (``train acc: 0.5 val acc: 0.5``, ``best test acc:
#: 0.91``): the key keeps the phase, so a best-so-far or a test figure is not the accuracy.
_WORDS_METRIC = re.compile(
    r"(?<![\w])((?i:best[ _](?:train|training|val|valid|validation|test|eval)|best|train|"
    r"training|val|valid|validation|test|testing|eval)[ _](?i:acc|accuracy|top1|top5|f1|auc|ppl|"
    r"perplexity|bleu|map|miou|iou|precision|recall))\s*(?:[:=]\s*)?" + _VALUE
    + r"%?(?=[\s,;`|)\]]|$)")  # an accuracy printed in percent keeps its printed value


#: A line that starts with its phase and a counter: ``Train 3, loss: ...``, ``Test 3: ...``.
_PHASE_STEP = re.compile(r"(?i)^\W*(train(?:ing)?|test(?:ing)?|val(?:id(?:ation)?)?|"
                         r"eval(?:uation)?)\s*(?:[:#]\s*)?(?:epoch\s*)?(\d+)\b")
#: A line that names an evaluation's loss and no step (``Test loss=0.9014``, ``Validation
#: loss: 0.41``, ``val_loss = 0.5``): at the rank's last training step.
_EVAL_NO_STEP = re.compile(r"(?i)^\W*(?:test|val(?:id(?:ation)?)?|eval(?:uation)?|dev)"
                           r"[ _]+loss\b")
#: An evaluation phase named right beside the step marker: ``Epoch 3 Validation - Loss: ...``,
#: ``Epoch [3/10] Test loss: ...``, ``Validation epoch 3: loss ...``, ``Eval step 200 ...``.
#: Each optional separator takes the spaces after it, so no two ``\s*`` can share a run of
#: spaces (a line of ``epoch 1`` and thousands of spaces costs linear time, not a blow-up).
#: A line that starts with a bare counter and a colon (``print("%d: [D loss: %f]" % i)``);
#: read only when nothing else on the line gives a step.
LEAD_COUNT = re.compile(r"^(\d{1,9}): ")
#: A line that starts with a bracketed count of a total (``[3/100] Train Loss: 15.9, Valid
#: Loss: 79.5``: a loop's epoch counter); read only when nothing else gives a step.
LEAD_FRACTION = re.compile(r"^\s?[\[(](\d{1,9})/\d{1,9}[\])]\s")
_PHASES = r"(?:val|valid|validation|eval|evaluation|test|testing)"
_MARKERS = r"(?:epoch|iter(?:ation)?|step)"
_PHASE_BESIDE = re.compile(
    r"(?i)\b" + _MARKERS + r"\s*(?:[:#]\s*)?(?:\[\s*)?\d+(?:/\s*\d+\s*|\s+/\s*\d+\s*|\s*)"
    r"(?:[\])]\s*)?(?:[-:|,]\s*)?(?:\(\s*)?" + _PHASES + r"\b(?!_)"
    r"|\b" + _PHASES + r"\s*(?:[-:|,]\s*)?" + _MARKERS + r"\s*(?:[:#]\s*)?(?:\[\s*)?\d")


def _generic_step(text: str) -> int | None:
    for marker in _STEP_MARKERS:
        m = marker.search(text)
        if m:
            return int(m.group(1))
    return None


#: Step keys of a JSON metrics line, most precise first (``update`` is fairseq's
#: fractional epoch: ``num_updates`` wins over it).
JSON_STEP_KEYS = ("iteration", "step", "global_step", "_step", "num_updates", "iter", "epoch")


def parse_json_line(text: str, ctx: LineContext) -> MetricLine | None:
    """A JSON object on one line (DINO/DeiT ``log.txt``, fairseq JSON logs, a pasted
    ``log_history`` entry): numeric values (and numeric strings) at its step key."""
    start = text.find('{"')
    if start < 0 or not text.rstrip().rstrip(",").endswith("}"):
        return None
    import json

    try:
        doc = json.loads(text[start:].rstrip().rstrip(","))
    except (ValueError, RecursionError):
        return None
    if not isinstance(doc, dict):
        return None
    step = None
    for key in JSON_STEP_KEYS:
        v = doc.get(key)
        try:
            f = float(v) if v is not None and not isinstance(v, bool) else math.nan
        except (TypeError, ValueError):
            continue
        if math.isfinite(f):
            step = int(f)
            break
    if step is None:
        return None
    pairs = []
    for key, value in doc.items():
        if key in JSON_STEP_KEYS or key in SKIPPED_KEYS or isinstance(value, bool):
            continue
        if isinstance(value, (int, float)):
            pairs.append((key, float(value)))
        elif isinstance(value, str):
            f = _float(value)
            if not math.isnan(f) or value.strip().lower() == "nan":
                pairs.append((key, f))
    if not any("loss" in k for k, _ in pairs):
        return None
    return MetricLine("json", step, pairs)


#: ``[Epoch e/E][Iter i/n]``, ``Epoch: [e][i/n]`` (PyTorch's ImageNet example), ``[Epoch
#: e][Batch b]`` (GluonCV): an epoch and a position within it.
_JSON_KEY_LINE = re.compile(r'^\s*"([\w/.@ -]+)":\s*(' + _NUM + r'|NaN|Infinity|-Infinity|null'
                            r'|"[^"]*")\s*(?:,\s*)?$')


def parse_json_key_line(text: str, ctx: LineContext) -> MetricLine | None:
    """One ``"key": value,`` line of a pretty-printed JSON object (a ``log_history``
    pasted from ``trainer_state.json``): kept until the entry's ``"step": N`` line, which
    gives the step of all of them. Lines must follow each other (a gap starts anew)."""
    m = _JSON_KEY_LINE.match(text)
    if m is None:
        return None
    if ctx.json_pending is None or ctx.line != ctx.json_line + 1:
        ctx.json_pending = []
    ctx.json_line = ctx.line
    key, raw = m.group(1), m.group(2)
    if key == "step":
        pending, ctx.json_pending = ctx.json_pending, None
        v = _float(raw)
        if not (math.isfinite(v) and pending and any(
                "loss" in k or k.startswith("eval_") for k, _ in pending)):
            return None
        kind = "json_eval" if any(k.startswith("eval_") for k, _ in pending) else "json"
        return MetricLine(kind, int(v), pending, stateless=False)
    if not raw.startswith(('"', "null")):
        ctx.json_pending.append((key, _float(raw.replace("Infinity", "inf"))))
    return None


#: (the Speedometer names the epoch ``Iter[e]`` when no metric is printed; MXNet before
#: Module, 2015, ends an epoch with ``Iteration[e] Train-accuracy=...``, ``Time cost=...``)
_MX_BATCH = re.compile(r"\b(?:Epoch|Iter)\[(\d+)\]\s+Batch\s*\[(\d+)(?:-(\d+))?\]")
_MX_EPOCH = re.compile(r"\b(?:Epoch|Iteration)\[(\d+)\]\s+(Train|Validation)-([\w-]+)=("
                       + _NUM + r")|\b(?:Epoch|Iteration)\[(\d+)\]\s+Time cost=(" + _NUM + r")")
_MX_PAIR = re.compile(r"(?:^|\s)([A-Za-z][\w-]*)=(" + _NUM + r")(?=\s|$)")


def _mx_name(key: str) -> str:
    """An MXNet metric's name without the ``Train-`` the older Speedometer puts before it."""
    key = key.lower()
    return key[6:] if key.startswith(("train-", "train_")) else key


def parse_mxnet(text: str, ctx: LineContext) -> MetricLine | None:
    """MXNet ``Module.fit`` lines: the Speedometer's ``Epoch[e] Batch [b]\tSpeed: X
    samples/sec\tname=value...`` (``Iter[e] Batch [b]`` with no metric; step: the batches
    of earlier epochs added up, as for GluonCV), and the epoch's ``Epoch[e]
    Train-name=value``, ``Validation-name=value`` and ``Time cost=X`` (``Iteration[e]`` in
    the 2015 ``FeedForward``; at the epoch's last batch step)."""
    m = _MX_BATCH.search(text)
    if m is not None:
        e = int(m.group(1))
        i = int(m.group(3) or m.group(2))
        if ctx.pos_epoch is not None and e != ctx.pos_epoch:
            ctx.pos_offset += ctx.pos_top + 1
            ctx.pos_top = 0
            ctx.mx_finite, ctx.mx_bad = set(), set()
        ctx.pos_epoch = e
        ctx.pos_top = max(ctx.pos_top, i)
        pairs = [(k, _float(v)) for k, v in _MX_PAIR.findall(text[m.end():])]
        for k, v in pairs:
            (ctx.mx_finite if math.isfinite(v) else ctx.mx_bad).add(_mx_name(k))
        sp = re.search(r"Speed:\s*(" + _NUM + r")", text)
        if sp:
            pairs.insert(0, ("samples_per_second", _float(sp.group(1))))
        return MetricLine("mxnet", ctx.pos_offset + i, pairs, stateless=False) \
            if pairs else None
    m = _MX_EPOCH.search(text)
    if m is None:
        return None
    if m.group(5) is not None:
        key, value = "epoch_time", m.group(6)
    else:
        key = ("train_" if m.group(2) == "Train" else "val_") + m.group(3)
        value = m.group(4)
        name = _mx_name(m.group(3))
        this_epoch = m.group(1) is not None and int(m.group(1)) == ctx.pos_epoch
        if (m.group(2) == "Train" and not math.isfinite(_float(value)) and this_epoch
                and name in ctx.mx_finite and name not in ctx.mx_bad):
            # an epoch's Train-X is the metric's mean since its last reset: the Speedometer
            # (auto_reset=True) resets it at each print, so an epoch whose last batch was
            # printed ends with no instances and a 0/0 = nan that is no training value (a
            # line with no step and no values: read, and no other parser takes it)
            return MetricLine("mxnet_epoch", None, [], stateless=False)
        if m.group(2) == "Train" and this_epoch and name in ctx.mx_finite | ctx.mx_bad:
            # the epoch's mean of a metric its batch lines already give: kept apart, so
            # the series is one value per step (the batch line at the epoch's last step)
            key = "epoch_" + key
    step = ctx.pos_offset + ctx.pos_top if ctx.pos_epoch is not None else int(m.group(1) or 0)
    kind = "mxnet_eval" if key.startswith("val_") else "mxnet_epoch"
    return MetricLine(kind, step, [(key, _float(value))], stateless=False)


#: Epoch + position markers: (epoch, position, epoch length or None). The last two are the
#: PyTorch examples' prints, copied into countless repositories: ``Train Epoch: 1 [640/60000
#: (1%)]\tLoss: 1.36`` (mnist: the position and length in samples) and ``[1,  2000] loss:
#: 2.187`` (the CIFAR-10 tutorial: epoch and mini-batch, no length).
_EPOCH_ITER = (
    # (each optional separator takes the spaces after it: no two \s* share a run of spaces,
    # so "epoch" and 60,000 spaces cost linear time)
    re.compile(r"(?i)\bepoch\s*(?::\s*)?\[\s*(\d+)\s*\]\s*\[\s*(\d+)\s*(?:/\s*(\d+)\s*)?\]"),
    re.compile(r"(?i)\bepoch\s*(?:[:=#]\s*)?(?:\[\s*)?(\d+)(?:\s*/\s*\d+)?\s*\]?.{0,40}?"
               r"\b(?:iter|iteration|batch|step)\b\s*(?:[:=#]\s*)?(?:\[\s*)?(\d+)(?:\s*/\s*(\d+))?"),
    re.compile(r"(?i)\bepoch\s*(?:[:=#]\s*)?(\d+)\s*\[\s*(\d+)\s*/\s*(\d+)\s*[(\]]"),
    re.compile(r"^\s*\[\s*(\d+)\s*,\s*(\d+)\s*(?:/\s*(\d+)\s*)?\]\s+\w"),
)
#: Words that make a key a loss (a line is kept only with one of them; "xent":
#: cross-entropy as OpenNMT-py and TF print it).
LOSS_WORDS = ("loss", "entropy", "nll", "xent")
#: Keys that are a loss only as the whole key: ``cost`` (the TF1 tutorials' ``Epoch: 0010 cost
#: = 15.205759``; ``batch_cost``/``reader_cost`` are times, ``Time cost=1.02s`` a duration).
EXACT_LOSS_KEYS = frozenset({"cost"})


def epoch_position(text: str) -> re.Match[str] | None:
    """An epoch + position-in-epoch marker of a line, if it has one."""
    for pattern in _EPOCH_ITER:
        m = pattern.search(text)
        if m is not None:
            return m
    return None


def _epoch_position(m: re.Match[str], ctx: LineContext) -> int:
    """The global step of an epoch + position match: ``e × n + i`` when the line gives
    the epoch's length ``n``, else the positions of earlier epochs added up."""
    e, i, n = int(m.group(1)), int(m.group(2)), m.group(3)
    if n:
        return e * int(n) + i
    if ctx.pos_epoch is not None and e != ctx.pos_epoch:
        ctx.pos_offset += ctx.pos_top + 1
        ctx.pos_top = 0
    ctx.pos_epoch = e
    ctx.pos_top = max(ctx.pos_top, i)
    return ctx.pos_offset + i


def parse_generic_pairs(text: str, ctx: LineContext) -> MetricLine | None:
    """A step marker and ``key: value``/``key=value``/``key value`` pairs, one of them a
    loss; keys in any case, ``[Loss] 2.3`` brackets allowed. Without a step marker, an
    ``Epoch N`` marker gives the step (the file then counts epochs)."""
    text = _BRACKET_KEY.sub(r"\1", text)
    evaluation = False
    ei = epoch_position(text)  # an iteration or batch counted within the epoch
    step = _epoch_position(ei, ctx) if ei else _generic_step(text)
    stateless = ei is None or ei.group(3) is not None
    if ei is not None and step is not None:
        ctx.pos_last = (int(ei.group(1)), step, int(ei.group(3)) if ei.group(3) else None)
    summary = False  # the summary line of an epoch whose batches were logged
    from_header = False  # the step is the epoch of a header line before this one
    if step is None:
        e = _EPOCH_MARKER.search(text)
        if e is not None:
            step = int(e.group(1))
            if ctx.pos_last is not None:  # the summary of an epoch whose batches were logged:
                summary = True
                stateless = False         # at the epoch's last batch, e x n + n - 1 (the
                _, at, n = ctx.pos_last   # batch lines may be read by a shape, past ctx)
                if n:
                    step = step * n + n - 1
                elif ctx.pos_last[0] == step:
                    step = at
        elif ctx.keras_epoch is not None:  # "Epoch 3/25" on its own line, then
            step = ctx.keras_epoch         # "train Loss: 0.57 Acc: 0.69" (PyTorch tutorial)
            stateless = False
            from_header = True
        else:
            phase = _PHASE_STEP.match(text)  # "Train 3, loss: ...", "Test 3, loss: ..."
            if phase is not None:
                step = int(phase.group(2))
                if phase.group(1).lower().startswith(("test", "val", "eval")):
                    evaluation = True
            elif ctx.train_step is not None and _EVAL_NO_STEP.match(text):
                step, evaluation, stateless = ctx.train_step, True, False
            elif (lead := LEAD_COUNT.match(text) or LEAD_FRACTION.match(text)) is not None:
                step = int(lead.group(1))  # "48: [D loss: 7.97 ...]": a loop's counter
            else:
                return None
    if not evaluation and _PHASE_BESIDE.search(text):
        evaluation = True  # "Epoch 3 Validation - Loss: 0.41": the line of an evaluation
    text = _THOUSANDS.sub("", text)
    uniq: list[tuple[str, float]] = []
    taken: set[int] = set()  # start offsets of values already used
    keys: set[str] = set()
    phased: set[str] = set()  # keys named with their phase (``validation accuracy``)
    for pattern in (_WORDS_LOSS, _WORDS_METRIC, _COLON_PAIR, _EQ_PAIR, _SPACE_PAIR):
        for m in pattern.finditer(text):
            key = "_".join(m.group(1).split())
            low = key.lower()
            if (m.start(2) in taken or low in keys or low in SKIPPED_KEYS
                    or not (low in EXACT_METRIC_KEYS or any(w in low for w in METRIC_WORDS))):
                continue
            taken.add(m.start(2))
            keys.add(low)
            if pattern is _WORDS_METRIC:
                phased.add(low)
            uniq.append((key, _float(m.group(2))))
    if not any(w in k.lower() for k, _ in uniq for w in LOSS_WORDS) and not any(
            k.lower() in EXACT_LOSS_KEYS for k, _ in uniq) and not (
            from_header and uniq and keys <= phased) and not (  # Lasagne's "validation
            uniq and keys <= phased and _evaluation_only(keys)):  # accuracy:" line
        return None  # (an evaluation's own line: ``Iter 5120: Testing Accuracy = 0.43``)
    if not evaluation and uniq and keys <= phased and _evaluation_only(keys):
        evaluation = True
    if any(k.lower() == "data_wait_time" for k, _ in uniq):
        # the wait the training loop saw; a worker's own load time overlaps the compute
        uniq = [(k, v) for k, v in uniq if k.lower() != "data_load_time"]
    if summary:  # its times are the whole epoch's, not one step's
        uniq = [(f"epoch_total_{k}" if "time" in k.lower() else k, v) for k, v in uniq]
    if evaluation:
        uniq = [(k if k.lower().startswith(("val", "test", "eval")) else f"val_{k}", v)
                for k, v in uniq]
        return MetricLine("generic_eval", step, uniq, stateless=stateless)
    return MetricLine("generic", step, uniq, stateless=stateless)


_EVAL_PHASES = ("val", "valid", "validation", "test", "testing", "eval", "best_val",
                "best_valid", "best_validation", "best_test", "best_eval")


def _evaluation_only(keys: set[str]) -> bool:
    """Whether every key names an evaluation's metric by its phase (``testing_accuracy``,
    ``val_acc``; a best-so-far ``best_test_acc`` among them): a line of an evaluation's
    accuracy, read though it holds no loss. A training key among them (``train_acc``) or a
    bare one (``acc``) is not."""
    evals = [k for k in keys if k.startswith(tuple(p + "_" for p in _EVAL_PHASES))]
    return bool(evals) and len(evals) == len(keys) and not all(
        k.startswith("best") for k in evals)


#: The evaluation line of the PyTorch mnist example (and the many scripts copied from it):
#: ``Test set: Average loss: 0.0528, Accuracy: 9833/10000 (98%)``.
_TORCH_TEST_SET = re.compile(r"\b(?:Test|Validation|Val|Eval|Dev) set: Average loss: (" + _NUM
                             + r"),\s*Accuracy: (\d+)\s*/\s*(\d+)")


def parse_torch_test_set(text: str, ctx: LineContext) -> MetricLine | None:
    """The PyTorch examples' ``Test set: Average loss: X, Accuracy: a/b (p%)`` line: an
    evaluation at the last training step (the accuracy as the fraction ``a / b``)."""
    m = _TORCH_TEST_SET.search(text)
    if m is None:
        return None
    total = int(m.group(3))
    pairs = [("val_loss", _float(m.group(1)))]
    if total > 0:
        pairs.append(("val_accuracy", int(m.group(2)) / total))
    return MetricLine("generic_eval", ctx.train_step, pairs, stateless=False)


#: PyTorch's "Learn the Basics" quickstart loop (and the many scripts copied from it):
#: ``print(f"loss: {loss:>7f}  [{current:>5d}/{size:>5d}]")`` every 100 batches, ``current``
#: the samples seen so far in the epoch of ``size``; after each epoch ``print(f"Test Error:
#: \n Accuracy: {(100*correct):>0.1f}%, Avg loss: {test_loss:>8f} \n")``.
_QUICK_TRAIN = re.compile(r"^\s*loss:\s*(" + _NUM + r")\s+\[\s*(\d+)\s*/\s*(\d+)\s*\]\s*$")
_QUICK_TEST = re.compile(r"^\s*Accuracy:\s*(" + _NUM + r")\s*%,\s*Avg loss:\s*(" + _NUM
                         + r")\s*$")


def parse_torch_quickstart(text: str, ctx: LineContext) -> MetricLine | None:
    """The quickstart loop's lines (:data:`_QUICK_TRAIN`): a training loss at the samples
    seen since the start (a position lower than the last one starts the next epoch, whose
    length the line gives), and the test accuracy (a fraction) and loss after the epoch, at
    the last training line's step."""
    m = _QUICK_TRAIN.match(text)
    if m is not None:
        current, size = int(m.group(2)), int(m.group(3))
        if current <= ctx.quick_last:
            ctx.quick_offset += size
        ctx.quick_last = current
        return MetricLine("torch_quickstart", ctx.quick_offset + current,
                          [("loss", _float(m.group(1)))], stateless=False)
    m = _QUICK_TEST.match(text)
    if m is None or ctx.train_step is None:
        return None
    return MetricLine("generic_eval", ctx.train_step,
                      [("val_accuracy", _float(m.group(1)) / 100.0),
                       ("val_loss", _float(m.group(2)))], stateless=False)


#: PyTorch's char-RNN tutorials (and their many copies), ``timeSince`` printing
#: ``'%dm %ds'``: the classification loop's ``print('%d %d%% (%s) %.4f %s / %s %s' % (iter,
#: iter / n_iters * 100, timeSince(start), loss, line, guess, correct))`` (``5000 5% (0m 12s)
#: 2.4177 Coelho / Portuguese ✓``) and the generation loop's ``print('%s (%d %d%%) %.4f' %
#: (timeSince(start), iter, iter / n_iters * 100, loss))`` (``0m 5s (5000 5%) 2.6523``).
_CHAR_RNN = (re.compile(r"^\s*(\d+) \d+(?:\.\d+)?% \(\d+m \d+s\) (" + _NUM + r")(?:\s|$)"),
             re.compile(r"^\s*\d+m \d+s \((\d+) \d+(?:\.\d+)?%\) (" + _NUM + r")\s*$"))


def parse_char_rnn(text: str, ctx: LineContext) -> MetricLine | None:
    """A char-RNN tutorial line (:data:`_CHAR_RNN`): the loss at the iteration it prints."""
    for pattern in _CHAR_RNN:
        m = pattern.match(text)
        if m is not None:
            return MetricLine("char_rnn", int(m.group(1)), [("loss", _float(m.group(2)))])
    return None


_ONMT_VALID = re.compile(r"\bValidation (perplexity|accuracy): (" + _NUM + r")\s*$")


def parse_opennmt_valid(text: str, ctx: LineContext) -> MetricLine | None:
    """OpenNMT-py's evaluation lines, ``Validation perplexity: 56.168`` and ``Validation
    accuracy: 35.9623``: stepped at the rank's last training step (the step line whose
    ``valid_steps`` triggered the evaluation)."""
    m = _ONMT_VALID.search(text)
    if m is None or ctx.train_step is None:
        return None
    return MetricLine("opennmt_eval", ctx.train_step,
                      [(f"validation {m.group(1)}", _float(m.group(2)))], stateless=False)


#: PyTorch's examples/word_language_model (and the nn.Transformer tutorial, and their many
#: copies): ``| epoch   1 |   200/ 2983 batches | lr 20.00 | ms/batch  7.54 | loss  6.91 |
#: ppl   1000.2``, then ``| end of epoch   1 | time: 23.00s | valid loss  5.53 | valid ppl
#: 252.03`` and ``| End of training | test loss  5.00 | test ppl   148.38``
_WLM_POS = re.compile(r"^\s*\|\s*epoch\s+(\d+)\s*\|\s*(\d+)\s*/\s*(\d+)\s+batches\s*\|")
_WLM_PAIR = re.compile(r"\|\s*([a-z][a-z /]*?)\s+(" + _NUM + r")(?=\s*\||\s*$)")
_WLM_END = re.compile(r"^\s*\|\s*(?:end of epoch\s+\d+|End of training)\s*\|")


def parse_word_lm(text: str, ctx: LineContext) -> MetricLine | None:
    """The word language model example's lines (see :data:`_WLM_POS`): a training line at
    its global batch (the batches of earlier epochs added up, from the ``/ N batches``
    it prints), ``ms/batch`` as the step time in milliseconds; the end-of-epoch
    evaluation at the last training line's step, the final test as ``final_test_*``."""
    m = _WLM_POS.match(text)
    if m is not None:
        pairs = [("step_time_ms" if k == "ms/batch" else k, _float(v))
                 for k, v in _WLM_PAIR.findall(text[m.end() - 1:])]
        if not any(k == "loss" for k, _ in pairs):
            return None
        step = (int(m.group(1)) - 1) * int(m.group(3)) + int(m.group(2))
        return MetricLine("word_lm", step, pairs)
    m = _WLM_END.match(text)
    if m is None or ctx.train_step is None:
        return None
    final = "End of training" in m.group(0)
    pairs = [((f"final_{k}" if final else k).replace(" ", "_"), _float(v))
             for k, v in _WLM_PAIR.findall(text[m.end() - 1:]) if "loss" in k or "ppl" in k]
    return MetricLine("word_lm_eval", ctx.train_step, pairs, stateless=False) \
        if pairs else None


#: BasicSR (and the image-restoration repositories built on it: Real-ESRGAN, SwinIR's
#: training code, HAT, NAFNet...): ``[train..][epoch:  0, iter:     100, lr:(1.000e-04,)]
#: [eta: 1 day, 0:33:40, time (data): 0.172 (0.003)] l_pix: 5.2374e-02``; its older logger
#: ``<epoch: 16, iter:   3,800, lr:2.999e-04> l_all: 3.4186e+00``; an evaluation as
#: ``<epoch: 16, iter:   4,000> psnr: 3.2174e+01. ssim: 8.1106e-01.``
_BSR_POS = re.compile(r"[<\[]epoch:\s*(\d+),\s*iter:\s*(\d+(?:,\d{3})*)(?:,\s*lr:\s*\(?(" + _NUM
                      + r"))?[^>\]]*[>\]]")
_BSR_TIME = re.compile(r"time \(data\):\s*(" + _NUM + r")\s*\((" + _NUM + r")\)")
_BSR_PAIR = re.compile(r"(?:^|\s)([A-Za-z][\w]*):\s*(" + _NUM + r")(?=[.\s]|$)")
#: BasicSR's loss names: one of these, or the sole ``l_*`` key, is the training loss.
_BSR_TOTAL = ("l_all", "l_total", "l_pix", "l_g_pix")


def parse_basicsr(text: str, ctx: LineContext) -> MetricLine | None:
    """BasicSR's training and evaluation lines (see :data:`_BSR_POS`): at the iteration
    they print; the total loss (or the sole, or the pixel, ``l_*`` loss) as ``loss``;
    ``time (data)`` as the step and data times; a line with no ``lr`` is an evaluation."""
    m = _BSR_POS.search(text)
    if m is None:
        return None
    step = int(m.group(2).replace(",", ""))
    rest = text[m.end():]
    tail = rest.split("]", 1)[1] if rest.lstrip().startswith("[eta") and "]" in rest else rest
    tail = tail.split("||", 1)[0]  # "|| Best PSNR: ... at iter: N": the best so far
    pairs = [(k, _float(v)) for k, v in _BSR_PAIR.findall(tail) if k.lower() != "best"]
    if m.group(3) is None:  # an evaluation: psnr, ssim, ...
        pairs = [(f"val_{k.lower()}", v) for k, v in pairs]
        return MetricLine("basicsr_eval", step, pairs, stateless=False) if pairs else None
    losses = [k for k, _ in pairs if k.startswith("l_")]
    total = next((k for k in _BSR_TOTAL if k in losses), losses[0] if len(losses) == 1 else None)
    pairs = [("loss" if k == total else k, v) for k, v in pairs]
    pairs.insert(0, ("lr", _float(m.group(3))))
    t = _BSR_TIME.search(rest)
    if t is not None:
        pairs += [("step_time", _float(t.group(1))), ("data_time", _float(t.group(2)))]
    return MetricLine("basicsr", step, pairs)


#: tf_cnn_benchmarks (TensorFlow's benchmark script, run under Horovod in its docs):
#: ``Step\tImg/sec\ttotal_loss\ttop_1_accuracy\ttop_5_accuracy`` then ``80\timages/sec:
#: 37.5 +/- 0.1 (jitter = 0.6)\t0.596\t1.000\t1.000`` (top-k only with --print_training_accuracy)
_TFCNN = re.compile(r"^\s*(\d+)\s+images/sec:\s*(" + _NUM + r")\s*\+/-\s*" + _NUM
                    + r"\s*\(jitter = " + _NUM + r"\)\s+(" + _NUM + r")(?:\s+(" + _NUM
                    + r"))?(?:\s+(" + _NUM + r"))?\s*$")


def parse_tf_cnn_benchmarks(text: str, ctx: LineContext) -> MetricLine | None:
    """A tf_cnn_benchmarks step line (see :data:`_TFCNN`): images/sec as the throughput,
    then the total loss and, when printed, the top-1 and top-5 accuracy."""
    m = _TFCNN.match(text)
    if m is None:
        return None
    pairs = [("images_per_second", _float(m.group(2))), ("total_loss", _float(m.group(3)))]
    if m.group(4) is not None:
        pairs.append(("top_1_accuracy", _float(m.group(4))))
    if m.group(5) is not None:
        pairs.append(("top_5_accuracy", _float(m.group(5))))
    return MetricLine("tf_cnn_benchmarks", int(m.group(1)), pairs)


#: Ultralytics YOLO's console lines (under ``Epoch GPU_mem box_loss cls_loss dfl_loss
#: Instances Size``; YOLOv5: ``Epoch gpu_mem box obj cls labels img_size``): ``3/3  11.3G
#: 1.362  1.543  0.007899  813  640: 63% ━━━━╸─── 40/63 16.1s/it 1:28:48<6:11`` (tqdm's
#: ``63%|██▎  | 40/63 [01:28<06:11, 16.1s/it]`` in older releases); the last redraw of a line
_YOLO = re.compile(r"(?:^|\r)\s*(\d+)/(\d+)\s+(" + _NUM + r")G((?:\s+" + _NUM
                   + r")+?)\s+(\d+)\s+(\d+):\s+\d+%\s*[|━─╸ ]*?[^\d\r]*?(\d+)/(\d+)\s*"
                   r"\[?(?:[\d:]+<[\d:.s]+,\s*)?(" + _NUM + r")(s/it|it/s)")


def parse_yolo_console(text: str, ctx: LineContext) -> MetricLine | None:
    """The last Ultralytics YOLO progress line of a physical line (see :data:`_YOLO`): at
    ``(epoch - 1) x batches + batch``; the loss columns summed as ``loss_sum`` (the
    ``train/loss_sum`` of the results.csv reader), each kept as ``loss_part_k``, the rate
    as a step time."""
    found = None
    for m in _YOLO.finditer(text):
        found = m
    if found is None:
        return None
    parts = [_float(v) for v in found.group(4).split()]
    if not parts:
        return None
    epoch, n, total = int(found.group(1)), int(found.group(7)), int(found.group(8))
    rate = _float(found.group(9))
    secs = rate if found.group(10) == "s/it" else (1.0 / rate if rate > 0 else math.nan)
    pairs = [("train/loss_sum", sum(parts)), *((f"loss_part_{i}", v) for i, v in
                                               enumerate(parts)),
             ("gpu_mem_gb", _float(found.group(3))), ("step_time", secs)]
    return MetricLine("yolo_console", (epoch - 1) * total + n, pairs)


#: Adapters tried in order on a line holding a loss (or an ``Epoch``/``Iteration`` marker),
#: each only when the line holds one of its literals (every shape an adapter reads has one:
#: a substring test spares a regex search per adapter on every other line);
#: :func:`parse_generic_pairs` is tried last, after the built-in generic parser.
ADAPTERS: tuple[tuple[tuple[str, ...], Any], ...] = (
    (RATE_LITERALS, parse_rate_line), (MARIAN_LITERALS, parse_marian),
    (('{"',), parse_json_line), (("Epoch[", "Iter[", "Iteration["), parse_mxnet),
    (PADDLE_LITERALS, parse_paddle),
    (LEROBOT_LITERALS, parse_lerobot), (VITS_LITERALS, parse_vits),
    (GLUONNLP_LITERALS, parse_gluonnlp),
    (("<epoch:", "[epoch:"), parse_basicsr),
    (("Epoch", "Iter"), parse_mmengine), (("iter:",), parse_detectron2),
    (("step:",), parse_torchtitan), (("iteration:",), parse_nanotron),
    (("steps:",), parse_deepspeed_pipe),
    (("Iteration", "Test net output", "Train net output"), parse_caffe),
    (("step",), parse_tf), (("%|",), parse_bar), ((" - ",), parse_keras_batches),
    (("Validation perplexity: ", "Validation accuracy: "), parse_opennmt_valid),
    ((" set: Average loss: ",), parse_torch_test_set),
    (("loss: ", "Avg loss: "), parse_torch_quickstart),
    (("% (", "%) "), parse_char_rnn),
    (("batches |", "end of epoch", "End of training"), parse_word_lm),
    (("images/sec: ",), parse_tf_cnn_benchmarks),
    (("G    ",), parse_yolo_console),
)


def parse_line(text: str, ctx: LineContext) -> MetricLine | None:
    """Try the framework adapters on one line (after the built-in parsers failed)."""
    if text.lstrip().startswith('"'):
        return parse_json_key_line(text, ctx)
    if "Epoch" in text:
        got = keras_epoch(text, ctx)
        if got is not None or _KERAS_EPOCH.match(text):
            return got
    if ctx.keras_epoch is not None and (" - " in text):
        parse_keras(text, ctx)
        if ctx.keras_values is not None and _KERAS_BAR.search(text):
            return None
    for literals, adapter in ADAPTERS:
        for lit in literals:
            if lit in text:
                got = adapter(text, ctx)
                if got is not None:
                    return got
                break
    return None
