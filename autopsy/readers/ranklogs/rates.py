"""Speeds and step times written as a figure and its unit, in the text of a log line.

Many trainers print their pace as a number followed by a unit rather than as ``key: value``:
tqdm's ``2.00it/s`` or ``1.52s/it``, Caffe's ``(4.71409 iter/s, 21.213s/100 iters)``, the TF
CIFAR-10 tutorials' ``(1200.0 examples/sec; 0.100 sec/batch)``, TF-Slim's ``(21.366
sec/step)``, OpenNMT-py's ``5000/6000 tok/s``, Marian's ``2688.68 words/s``. Others print the
pace on a line of its own with no step: TF Estimator's ``INFO:tensorflow:global_step/sec:
11.4237`` and ``examples/sec: 68.9783``, DeepSpeed's throughput timer
``epoch=0/micro_step=40/global_step=10, RunningAvgSamplesPerSec=25.0, CurrSamplesPerSec=25.7``.

:func:`add_rates` adds the figures of the first kind to a metric line another parser read
(unless it already holds a step time or a throughput); :func:`parse_rate_line` reads a line
of the second kind, stepped at its own ``global_step=`` or else at the last training step of
the same file and rank (the pace of the interval that just ended; the scanner falls back on
the file's only rank when the pace line has no rank prefix and the step line had one, as
DeepSpeed prints them); one before any step is dropped. The raw tags name the
unit, which ``signals.steptime.throughput_unit`` reads (steps, samples or tokens per second).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from autopsy.model.aliases import canonical_tag
from autopsy.readers.ranklogs.metrics import _NUM as NUM
from autopsy.readers.ranklogs.metrics import MetricLine

if TYPE_CHECKING:  # pragma: no cover
    from autopsy.readers.ranklogs.adapters import LineContext

_NUM = "(" + NUM + ")"

#: (pattern, raw tag) of a figure followed by its unit; the raw tag keeps the unit so that
#: the throughput's unit is known (``model.aliases`` maps each to its canonical tag). Step
#: times are seconds; the first pattern of a tag that matches wins (s/it before sec/batch).
_INLINE: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(_NUM + r"\s?s/it\b"), "step_time"),
    (re.compile(_NUM + r"\s?it/s\b"), "it/s"),
    (re.compile(_NUM + r"\s?iters?/s\b"), "iter/s"),
    (re.compile(_NUM + r"\s?sec/(?:batch|step|iter)\b"), "step_time"),
    (re.compile(_NUM + r"\s?examples/sec\b"), "examples/sec"),
    (re.compile(_NUM + r"\s?(?:tok|tokens)/s(?:ec)?\b"), "tokens/s"),
    (re.compile(_NUM + r"\s?words/s(?:ec)?\b"), "words/s"),
)
#: Canonical tags of a parsed line's keys that already give its pace: the rates written in
#: the text add nothing then.
_PACE_TAGS = frozenset({"step_time", "step_time_ms", "throughput"})

#: Literals of the lines :func:`parse_rate_line` reads (also the scanner's markers).
LITERALS: tuple[str, ...] = ("global_step/sec: ", "examples/sec: ", "CurrSamplesPerSec=")
_TF_RATE = re.compile(r"\b(global_step/sec|examples/sec): " + _NUM + r"\s*$")
_DS_TIMER = re.compile(r"(?:global_step=(\d+), )?RunningAvgSamplesPerSec=" + _NUM
                       + r", CurrSamplesPerSec=" + _NUM)


def inline_rates(text: str) -> list[tuple[str, float]]:
    """The pace figures written as ``<number><unit>`` in ``text`` (the last of each unit:
    a tqdm line holds every redraw of its bar)."""
    if "/s" not in text and "sec/" not in text and "s/it" not in text:
        return []
    out: dict[str, float] = {}
    for pattern, tag in _INLINE:
        if tag in out:
            continue
        found = pattern.findall(text)
        if found and float(found[-1]) > 0:  # Caffe's first "-1.02432e-37 iter/s": no pace
            out[tag] = float(found[-1])
    return list(out.items())


def add_rates(text: str, got: MetricLine) -> None:
    """Add the pace figures of ``text`` to ``got`` unless it already holds its pace."""
    if any(canonical_tag(k) in _PACE_TAGS for k, _ in got.values):
        return
    got.values.extend(inline_rates(text))


def parse_rate_line(text: str, ctx: LineContext) -> MetricLine | None:
    """A pace printed on a line of its own (TF Estimator, DeepSpeed's throughput timer)."""
    m = _DS_TIMER.search(text)
    if m is not None:
        step = int(m.group(1)) if m.group(1) else ctx.train_step
        return MetricLine("rate", step, [("CurrSamplesPerSec", float(m.group(3)))],
                          stateless=m.group(1) is not None)
    m = _TF_RATE.search(text)
    if m is None:
        return None
    tag = "steps_per_second" if m.group(1) == "global_step/sec" else "examples/sec"
    return MetricLine("rate", ctx.train_step, [(tag, float(m.group(2)))], stateless=False)
