"""Per-step metric lines: HF Trainer dicts, Megatron, DeepSpeed, fairseq, generic.

:func:`parse_metrics` turns one line into a :class:`MetricLine` (or None). Raw
tags are kept as the framework wrote them (``loss``, ``lm loss``, ``loss scale``,
``grad norm``, ``number of skipped iterations``...); the alias table maps them.

HF Trainer dict lines carry no step. The reader takes it from the tqdm bar the
Trainer redraws right after printing the dict (exact: the bar shows
``global_step``), else from ``logging_steps`` printed in the same log times the
dict's ordinal, else from the ordinal alone (1, 2, 3...), and says which in a
Problem (see ``reader``).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pragma: no cover
    from autopsy.readers.ranklogs.adapters import LineContext

_NUM = (r"[-+]?(?:\d+(?:\.\d*)?(?:[eE][-+]?\d+)?|\.\d+(?:[eE][-+]?\d+)?"
        r"|nan|NaN|NAN|inf|Inf|INF|-inf)")
_HF_PAIR = re.compile(r"'([^']+)':\s*(?:'(" + _NUM + r")'|(" + _NUM + r")|np\.float\d*\((" + _NUM
                      + r")\)|tensor\((" + _NUM + r"))")
_MEGATRON = re.compile(r"\biteration\s+(\d+)\s*/\s*(\d+)\s*\|")
# ``| lm loss: 5.76 |``; Megatron before 2020 wrote no colon: ``| lm loss 5.763325E+00 |``
_MEGA_PAIR = re.compile(r"\|\s*([A-Za-z][\w ()/.-]*?)(?::\s*|\s+)(" + _NUM + r")\s*(?=\||$)")
_DS_STEP = re.compile(r"\bstep=(\d+), skipped=(\d+)(?:, lr=\[([^\]]*)\])?")
_FAIRSEQ_PIPE = re.compile(r"\|\s*(\w+)\s+(" + _NUM + r")(?=\s*\||\s*$)")
_FAIRSEQ_EQ = re.compile(r"\b(\w+)=(" + _NUM + r")(?=,|\s|$)")
_FAIRSEQ_POS = re.compile(r"\bepoch\s+(\d+):\s+(\d+)\s*/\s*(\d+)\b")
_GEN_STEP = re.compile(r"\b(?:[Ss]tep|[Ii]ter(?:ation)?|global_step)(?:\s*[:=#]|\s)\s*(\d+)")
_GEN_PAIR = re.compile(
    r"\b(loss|lr|learning_rate|grad_norm|gnorm|loss_scale|ppl|data_time|compute_time|step_time"
    r"|iter_time|batch_time|(?<![\w.])time(?=\s*[:=]))\s*(?:[:=]\s*)?(" + _NUM + r")(?![\w.])")
_QUOTED_PAIR = re.compile(r"'([A-Za-z_][\w/.]*)':\s*'?(" + _NUM + r")'?(?=[,\s]|$)")
_LOGGING_STEPS = re.compile(r"logging_steps\s*[=:]\s*(\d+)")
_BAR_AFTER = re.compile(rb"\r\s*\d+%\|[^|\r\n]*\|\s*(\d+)/(\d+) \[[^\r\n\x1b]*?\](?!\x1b\[A)")

#: HF summary keys: the end-of-training dict is not a series.
HF_SUMMARY = "train_runtime"


@dataclass
class MetricLine:
    """Values read from one line; ``step`` is None where the line has none."""

    kind: str
    step: int | None
    values: list[tuple[str, float]] = field(default_factory=list)
    rank: int | None = None
    #: the parse used nothing from earlier lines (so a learned line shape may repeat it)
    stateless: bool = True


def _float(text: str) -> float:
    try:
        return float(text)
    except ValueError:
        return math.nan


def parse_hf_dict(text: str) -> MetricLine | None:
    """An HF Trainer ``{'loss': ..., ...}`` line (values maybe quoted)."""
    start = text.find("{'")
    if start < 0:
        return None
    body = text[start:]
    if HF_SUMMARY in body:
        return None
    pairs = []
    for m in _HF_PAIR.finditer(body):
        raw = m.group(m.lastindex or 0)  # the one alternative that matched
        pairs.append((m.group(1), _float(raw)))
    keys = {k for k, _ in pairs}
    if not pairs or not (keys & {"loss", "grad_norm", "learning_rate"}
                         or any(k.startswith("eval_") for k in keys)):
        return None
    kind = "hf_eval" if any(k.startswith("eval_") for k in keys) else "hf"
    return MetricLine(kind, None, pairs)


def parse_megatron(text: str) -> MetricLine | None:
    """A Megatron-LM ``iteration N/M | key: value | ...`` line."""
    m = _MEGATRON.search(text)
    if not m:
        return None
    pairs = [(k.strip(), _float(v)) for k, v in _MEGA_PAIR.findall(text[m.end() - 1:])]
    return MetricLine("megatron", int(m.group(1)), pairs) if pairs else None


def parse_deepspeed(text: str) -> MetricLine | None:
    """A DeepSpeed ``[Rank 0] step=N, skipped=M, lr=[...]`` line."""
    m = _DS_STEP.search(text)
    if not m:
        return None
    pairs = [("skipped", float(m.group(2)))]
    if m.group(3):
        lrs = [x.strip() for x in m.group(3).split(",") if x.strip()]
        if lrs:
            pairs.append(("lr", _float(lrs[0])))
    return MetricLine("deepspeed", int(m.group(1)), pairs)


def parse_fairseq(text: str) -> MetricLine | None:
    """fairseq ``| epoch 001 | loss 5.1 | ... | num_updates 100`` or ``key=value`` lines."""
    if "epoch" not in text:
        return None
    pairs = _FAIRSEQ_PIPE.findall(text)
    if not any(k.endswith("loss") for k, _ in pairs):
        pairs = _FAIRSEQ_EQ.findall(text)
    if not any(k.endswith("loss") for k, _ in pairs):
        return None
    values = [(k, _float(v)) for k, v in pairs if k not in ("epoch",)]
    step = next((int(_float(v)) for k, v in values if k == "num_updates"
                 and math.isfinite(v)), None)
    values = [(k, v) for k, v in values if k != "num_updates"]
    if step is None:  # fairseq-py 0.x: "| epoch 001:   1000 / 3925 loss=..." (no num_updates)
        m = _FAIRSEQ_POS.search(text)
        if m:
            step = (int(m.group(1)) - 1) * int(m.group(3)) + int(m.group(2))
    if "valid on" in text:
        values = [(k if k.startswith("valid") else f"valid_{k}", v) for k, v in values]
        return MetricLine("fairseq_eval", step, values)
    return MetricLine("fairseq", step, values)


def parse_generic(text: str) -> MetricLine | None:
    """A generic ``step 10 ... loss 2.3`` line (both a step and a loss needed)."""
    s = _GEN_STEP.search(text)
    if not s:
        return None
    pairs = [(k, _float(v)) for k, v in _GEN_PAIR.findall(text)]
    if not any(k == "loss" for k, _ in pairs):
        return None
    return MetricLine("generic", int(s.group(1)), pairs)


def parse_metrics(text: str, ctx: LineContext | None = None) -> MetricLine | None:
    """Try each known metric format on one line; the first that fits wins.

    ``ctx`` carries what the framework adapters (:mod:`.adapters`) remember between the
    lines of one file and rank; a fresh one is used when it is not given. A pace the line
    writes as a figure and its unit (``2.00it/s``, ``0.1 sec/batch``, ``6000 tok/s``) is
    added to what the format's parser read (:mod:`.rates`).
    """
    got = _parse_metrics(text, ctx)
    if got is not None and got.values:
        from autopsy.readers.ranklogs.rates import add_rates

        add_rates(text, got)
    return got


def _parse_metrics(text: str, ctx: LineContext | None) -> MetricLine | None:
    """:func:`parse_metrics` without the rates."""
    from autopsy.readers.ranklogs.adapters import LineContext, parse_line

    if "{'" in text:
        got = parse_hf_dict(text)
        if got is not None:
            return got
    if "': " in text:  # "'loss': '24.06'" items of a dict printed without its braces
        text = _QUOTED_PAIR.sub(r"\1: \2", text)  # (PaddleDetection before 2.0)
    if "iteration" in text and "|" in text:
        got = parse_megatron(text)
        if got is not None:
            return got
    if "step=" in text and "skipped=" in text:
        return parse_deepspeed(text)
    got = parse_line(text, ctx if ctx is not None else LineContext())
    if got is not None or (ctx is not None and ctx.keras_values is not None
                           and "Epoch" not in text and " - " in text):
        return got
    if "epoch" in text:
        got = parse_fairseq(text)
        if got is not None:
            return got
    from autopsy.readers.ranklogs.adapters import (
        LOSS_WORDS,
        epoch_position,
        parse_generic_pairs,
    )

    low = text.lower()
    if any(w in low for w in LOSS_WORDS) or "cost = " in low:
        ctx = ctx if ctx is not None else LineContext()
        # a step counted within the epoch is not generic's (both shapes say "epoch")
        if "epoch" not in low or epoch_position(text) is None:
            got = parse_generic(text)
            if got is not None:
                return got
        return parse_generic_pairs(text, ctx)
    if ctx is not None and ctx.keras_epoch is not None and "accuracy:" in low:
        return parse_generic_pairs(text, ctx)  # Lasagne's "  validation accuracy:\t\t89 %"
    if "acc" in low:  # an evaluation's accuracy alone: ``Iter 5120: Testing Accuracy = 0.43``
        return parse_generic_pairs(text, ctx if ctx is not None else LineContext())
    return None


def logging_steps(text: str) -> int | None:
    """``logging_steps=N`` printed in a log (an HF ``TrainingArguments`` dump)."""
    m = _LOGGING_STEPS.search(text)
    return int(m.group(1)) if m and int(m.group(1)) > 0 else None


def bar_step_after(raw_after: bytes) -> int | None:
    """The step of the first main tqdm bar redrawn in ``raw_after`` (bytes after a dict)."""
    m = _BAR_AFTER.search(raw_after)
    return int(m.group(1)) if m else None
