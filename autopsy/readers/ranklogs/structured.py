"""The last readings of a text log whose lines gave no metric: blocks, tables, bare columns.

The line parsers read a metric from one line that holds a step and a named value. Some
training loops print neither on one line; they are read here, only when the line
parsers took no metric from the file (so a log they read is never read twice), on files up
to :data:`STRUCTURE_MAX_BYTES`. Each layout below was met in public logs:

* **blocks**: a step line (``Epoch: 01 | Epoch Time: 0m 57s``, ``Epoch    :  5``, ``Step
  300``), then lines of named values with no step of their own (``\\tTrain Loss: 0.693 |
  Train Acc: 50.12%``, ``LOSS     :  24.569025``) up to the next step line: one point per
  block, at the step line's number;
* **tables**: a header line of names (``epoch  train_loss  val_loss``,
  ``*******train_loss,train_acc,valid_loss,valid_ac**********``) and rows of as many numbers
  under it; the step is the row's own ``epoch``/``step`` column, else the number of the last
  step line above the row, else the row's ordinal;
* **bare columns**: lines of an integer (a colon after it allowed) and one to
  :data:`BARE_MAX_VALUES` numbers (``76930 2.6496577``, a GAN loop's ``10: nan nan``), read
  as step and loss (``loss_1``, ``loss_2``... for several) only where at least
  :data:`BARE_MIN_ROWS` such lines have increasing steps and values that are not all
  integers; a problem says the names were assumed.

* **stepless lines**, last, when none of the above gave a point: lines of named values
  with no step anywhere (``loss: 0.5213 acc: 0.81``, ``Train Loss: 644.2``), one of them a
  loss or an accuracy; each kind of line (the same names in the same order) is numbered by
  its own count, 1, 2, 3..., from :data:`STEPLESS_MIN_LINES` such lines on, and a problem
  says the steps were assumed.

A dated timestamp at the head of a line (``2018-04-14T05:56:02.271397 Step: 0; Accuracy:
0.065;``) is the point's wall time and is not part of the layout.

Every value goes through the scanner's own point path (so a NaN loss is a ``nan_loss``
event as anywhere else). Memory is constant in the file's length: one block, one header
and one pending bare run at a time.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from autopsy.readers.ranklogs.lines import clean, iter_blocks, open_binary
from autopsy.readers.ranklogs.metrics import _NUM, MetricLine
from autopsy.readers.ranklogs.timestamps import parse_time

#: Files larger than this are not searched again for these layouts (64 MiB: a log that
#: large with no metric line the parsers know is not a training log of this kind, and a
#: second pass over it would cost seconds for nothing).
STRUCTURE_MAX_BYTES = 64 << 20
#: Bare ``step value`` lines needed before they are read as a loss curve (8: fewer such
#: lines are as likely a table of counts as a training log).
BARE_MIN_ROWS = 8
#: The most numbers after the step of a bare line (4: a loop printing its losses unnamed
#: prints two or three; a wider row of numbers is a table whose header is missing).
BARE_MAX_VALUES = 4
#: Bare lines of whole numbers held while waiting for a decimal one (10,000: a loss curve
#: shows decimals within its first lines; a longer run of integers is a table of counts, and
#: holding it would cost memory in proportion to the file).
BARE_MAX_PENDING = 10_000
#: Distinct names kept in one block (256: a step of a real log names a few dozen values at
#: most; past that the lines are not a metric block, and the block would grow with the file).
BLOCK_MAX_NAMES = 256

#: Lines of one kind (the same names) with no step needed before they are read as a
#: curve numbered by their count (3: the fewest from which a curve says more than its
#: values; one or two named numbers in a log are as likely a summary as a training loop).
STEPLESS_MIN_LINES = 3
#: Kinds of stepless lines counted apart (16: a loop prints a training, an evaluation and
#: maybe a test line; past that the names vary line by line and they are no loop's prints).
STEPLESS_MAX_KINDS = 16
#: Words of a stepless line's names of which one must be there: the line reports training.
_STEPLESS_WORDS = ("loss", "cost", "entropy", "nll", "acc")

#: Words of a name that make it a metric worth keeping (the line adapters' own list, short).
_METRIC_WORDS = ("loss", "acc", "lr", "learning", "ppl", "perplexity", "f1", "bleu", "auc",
                 "iou", "map", "error", "err", "cost", "time", "norm", "entropy", "nll",
                 "recall", "precision", "dice", "mae", "mse", "rmse", "psnr", "ssim")
#: Names of a step column or a step line, lower case.
_STEP_NAMES = ("epoch", "step", "iter", "iteration", "global_step", "ep")
_STEP_LINE = re.compile(r"(?i)^\W{0,12}(epoch|step|iter(?:ation)?|global[ _]step)\s*"
                        r"(?:[:=#]\s*)?(?:\[\s*)?(\d+)(?!\d|\.\d|\s*[:=]\s*\d)")
#: A named value of a block line: one to three words, a colon or an equals sign, a number
#: (a percent sign after it is dropped: the value stays as printed).
_PAIR = re.compile(r"(?<![\w.])([A-Za-z][\w.]*(?: [A-Za-z][\w.]*){0,2})\s*[:=]\s*(" + _NUM
                   + r")\s*%?(?=[\s,;|)\]]|$)")
_NUMBER = re.compile(r"^" + _NUM + r"$")
_INT = re.compile(r"^\d+$")
_SPLIT = re.compile(r"[\s,;|]+")
_NAME = re.compile(r"^[A-Za-z][\w./@-]*$")
_DECOR = "*=#-[]()<> \t"
_STAMP = re.compile(r"^\W{0,2}\d{2,4}[-/]\d\d[-/]\d\d[T _]\d\d:\d\d:\d\d(?:[.,]\d+)?\W{0,3}")
_EVAL_WORDS = ("val", "valid", "validation", "test", "eval", "dev")


@dataclass
class _Reader:
    """What one pass remembers: the open block, the header, the pending bare lines."""

    emit: Callable[[MetricLine, int, float], None]
    step: int | None = None
    block: list[tuple[str, float]] = field(default_factory=list)
    block_line: int = 0
    block_wall: float = math.nan
    wall: float = math.nan
    header: list[str] | None = None
    rows: int = 0
    bare: list[tuple[int, list[float], int, float]] = field(default_factory=list)
    bare_float: bool = False
    bare_streaming: bool = False
    bare_kept: int = 0
    emitted: int = 0

    def flush_block(self) -> None:
        if self.block and self.step is not None:
            self._emit(MetricLine("generic", self.step, self.block, stateless=False),
                       self.block_line, self.block_wall)
        self.block = []

    def _emit(self, got: MetricLine, line: int, wall: float) -> None:
        self.emitted += 1
        self.emit(got, line, wall)

    def flush_bare(self) -> None:
        run, self.bare = self.bare, []
        floats, self.bare_float = self.bare_float, False
        streaming, self.bare_streaming = self.bare_streaming, False
        if streaming or len(run) < BARE_MIN_ROWS or not floats:
            return  # (a streamed run's rows were emitted as they came)
        self._emit_bare(run)

    def _emit_bare(self, run: list[tuple[int, list[float], int, float]]) -> None:
        for step, values, line, wall in run:
            names = ["loss"] if len(values) == 1 else [f"loss_{i + 1}" for i in range(
                len(values))]
            self._emit(MetricLine("generic", step, list(zip(names, values, strict=True)),
                                  stateless=False), line, wall)
        self.bare_kept += len(run)

    def line(self, text: str, number: int) -> None:
        stripped = text.strip()
        if not stripped:
            return
        self.wall = math.nan
        stamp = _STAMP.match(stripped)
        if stamp is not None:
            self.wall = parse_time(stripped)[0]
            stripped = stripped[stamp.end():].strip()
        if self.header is not None and self._row(stripped, number):
            return
        if self._bare(stripped, number):  # a run of them survives lines of other text
            return                         # between (``Saving the model``)
        m = _STEP_LINE.match(stripped)
        if m is not None:
            self.flush_block()
            self.step = int(m.group(2))
            self.block_line = number
            self.block_wall = self.wall
            self.rows = 0
            self._pairs(stripped[m.end():])
            return
        header = _header(stripped)
        if header is not None:
            self.flush_block()
            self.flush_bare()
            self.header, self.rows = header, 0
            return
        if self.step is not None:
            self._pairs(stripped)

    def _pairs(self, text: str) -> None:
        have = {k for k, _ in self.block}
        for key, value in _PAIR.findall(text):
            name = _name(key)
            low = name.lower()
            if low in _STEP_NAMES or name in have or not _metric(low):
                continue
            if len(have) >= BLOCK_MAX_NAMES:
                return
            have.add(name)
            self.block.append((name, _float(value)))

    def _row(self, text: str, number: int) -> bool:
        assert self.header is not None
        cells = [c for c in _SPLIT.split(text.strip(_DECOR)) if c]
        if len(cells) != len(self.header) or not all(_NUMBER.match(c) for c in cells):
            return False
        self.rows += 1
        pairs: list[tuple[str, float]] = []
        step = None
        for name, cell in zip(self.header, cells, strict=True):
            low = name.lower()
            if low in _STEP_NAMES:
                if step is None and _INT.match(cell):
                    step = int(cell)
            elif _metric(low):
                pairs.append((name, _float(cell)))
        if step is None:
            step = self.step if self.step is not None else self.rows
        if pairs:
            self._emit(MetricLine("generic", step, pairs, stateless=False), number, self.wall)
        return True

    def _bare(self, text: str, number: int) -> bool:
        cells = text.split()
        if not 2 <= len(cells) <= BARE_MAX_VALUES + 1:
            return False
        lead = cells[0][:-1] if cells[0].endswith(":") else cells[0]
        if not _INT.match(lead) or not all(_NUMBER.match(c) for c in cells[1:]):
            return False
        step = int(lead)
        if self.bare and (step <= self.bare[-1][0] or len(cells) - 1 != len(self.bare[-1][1])):
            self.flush_bare()
        self.bare.append((step, [_float(c) for c in cells[1:]], number, self.wall))
        if not all(_INT.match(c) for c in cells[1:]):
            self.bare_float = True
        if self.bare_streaming:  # a run known to be a curve: each row is emitted as it comes
            self._emit_bare(self.bare[-1:])
            self.bare = self.bare[-1:]  # kept to compare the next row's step and width with
        elif self.bare_float and len(self.bare) >= BARE_MIN_ROWS:
            self._emit_bare(self.bare)
            self.bare_streaming = True
            self.bare = self.bare[-1:]
        elif len(self.bare) > BARE_MAX_PENDING:
            self.bare = self.bare[-1:]  # integers only: a table of counts, not a curve
        return True


def _float(text: str) -> float:
    try:
        return float(text)
    except ValueError:
        return math.nan


def _name(key: str) -> str:
    """``Train Loss`` -> ``Train_Loss``, ``Val. Acc`` -> ``Val_Acc``; evaluation names keep
    their phase as a ``val_`` prefix the alias table knows."""
    name = "_".join(part.strip(".") for part in key.split())
    low = name.lower()
    for word in _EVAL_WORDS:
        if low.startswith(word + "_") and word != "val":
            return "val_" + name[len(word) + 1:]
    return name


def _metric(low: str) -> bool:
    return any(w in low for w in _METRIC_WORDS)


def _header(text: str) -> list[str] | None:
    """The column names of a header line, or None: two or more names, one of them a
    metric, separated by commas, tabs, pipes or spaces (decoration at the ends ignored)."""
    cells = [c for c in _SPLIT.split(text.strip(_DECOR)) if c]
    if len(cells) < 2 or not all(_NAME.match(c) for c in cells):
        return None
    if not any(_metric(c.lower()) for c in cells):
        return None
    return cells


def _lines(path: Path) -> Iterator[tuple[str, int]]:
    with open_binary(path) as stream:
        for block in iter_blocks(stream):
            number = block.first_line
            for raw in block.data.split(b"\n"):
                yield clean(raw), number
                number += 1


def read_structured(path: Path, emit: Callable[[MetricLine, int, float], None]
                    ) -> tuple[int, int]:
    """Read ``path`` for blocks, tables and bare columns, giving each point to ``emit``
    (the metric line, its line number and wall time, NaN where the line has no dated
    timestamp); returns (points emitted, bare lines kept).

    Raises what reading the file raises (the caller records it as a problem)."""
    reader = _Reader(emit)
    for text, number in _lines(path):
        reader.line(text, number)
    reader.flush_bare()
    reader.flush_block()
    return reader.emitted, reader.bare_kept


def read_stepless(path: Path, emit: Callable[[MetricLine, int, float], None]) -> int:
    """Read ``path`` for stepless lines (see the module docstring), giving each point to
    ``emit``; returns the lines read. Memory is constant: a count and at most
    :data:`STEPLESS_MIN_LINES` - 1 held lines per kind, for :data:`STEPLESS_MAX_KINDS` kinds,
    each line's names capped at :data:`BLOCK_MAX_NAMES`.

    Raises what reading the file raises (the caller records it as a problem)."""
    counts: dict[tuple[str, ...], int] = {}
    held: dict[tuple[str, ...], list[tuple[list[tuple[str, float]], int, float]]] = {}
    read = 0
    for text, number in _lines(path):
        stripped = text.strip()
        if not stripped or _STEP_LINE.match(stripped):
            continue
        wall = math.nan
        stamp = _STAMP.match(stripped)
        if stamp is not None:
            wall = parse_time(stripped)[0]
            stripped = stripped[stamp.end():].strip()
        pairs: list[tuple[str, float]] = []
        names: set[str] = set()
        for m in _PAIR.finditer(stripped):
            name = _name(m.group(1))
            low = name.lower()
            if low in _STEP_NAMES:
                pairs = []
                break  # a step after all (``Epoch: 3``): not a stepless line
            if _metric(low) and name not in names:
                if len(names) >= BLOCK_MAX_NAMES:
                    break  # as many names as a block may hold: the rest of the line is not read
                names.add(name)
                pairs.append((name, _float(m.group(2))))
        if not pairs or not any(w in k.lower() for k, _ in pairs for w in _STEPLESS_WORDS):
            continue
        kind = tuple(k for k, _ in pairs)
        if kind not in counts:
            if len(counts) >= STEPLESS_MAX_KINDS:
                continue
            counts[kind] = 0
            held[kind] = []
        counts[kind] += 1
        if counts[kind] < STEPLESS_MIN_LINES:
            held[kind].append((pairs, number, wall))
            continue
        for i, (old, line, at) in enumerate(held.pop(kind, []), start=1):
            emit(MetricLine("generic", i, old, stateless=False), line, at)
            read += 1
        emit(MetricLine("generic", counts[kind], pairs, stateless=False), number, wall)
        read += 1
    return read
