"""Line shapes: metric lines that repeat one shape are read a block at a time.

A metric-dense log prints the same line millions of times with other numbers in it
(``step 10 loss 2.3 lr 1e-4``, Megatron's ``iteration N/M | ...``, mmengine's
``Epoch(train) [e][i/n] ...``). Parsing each with the adapters costs tens of
microseconds. Instead, the first lines of a shape are parsed as usual and, from them, a
:class:`Shape` is learned: the line as a regular expression whose number tokens are
capture groups, and which group gives the step, each value, the rank and the wall time.
A shape is trusted only after :data:`CONFIRM_LINES` lines of it parsed the usual way gave
exactly what it predicts; from then on, each 4 MiB block is searched by the shape's
expression in one pass (``re.finditer`` over the block) and its numbers are converted by
numpy, column by column.

Only lines whose parse needs nothing from the lines before them are learned (not HF
Trainer dicts, Keras epochs, tqdm bars without a step, Caffe test outputs, mmengine
evaluation lines), only ASCII lines without a carriage return or an event marker, and
only lines whose values are all finite (a ``nan`` in a later line of the shape is read
as NaN all the same). What a shape gives is identical to the usual parse (tested in
``tests/test_ranklogs_shapes.py``).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from autopsy.readers.ranklogs.markers import EVENT_RE

if TYPE_CHECKING:  # pragma: no cover
    import numpy as np

    from autopsy.readers.ranklogs.metrics import MetricLine

#: Kinds whose parse of a line depends on that line alone.
STATELESS_KINDS = frozenset({"megatron", "deepspeed", "fairseq", "fairseq_eval", "generic",
                             "generic_eval", "detectron2", "torchtitan", "nanotron",
                             "deepspeed_pipe", "tf", "json", "mmengine", "paddle"})
#: A step or rank at least this large is not read by a shape (the usual parse skips it).
MAX_STEP = float(2**62)
#: Lines of a shape parsed the usual way, all agreeing with it, before it is trusted.
CONFIRM_LINES = 3
#: Longer lines are never learned (a shape's expression stays small).
MAX_LINE = 2048
#: Shapes learned per file at most (a log of ever-new shapes stops learning).
MAX_SHAPES = 64
#: Shapes tried per file before learning gives up (too many that never confirm).
MAX_TRIES = 512
#: A line with more numbers is never learned (a shape's first line costs the square of
#: its numbers, to find which ones give the step).
MAX_TOKENS = 64
#: A shape still ambiguous after this many lines is given up (its lines are parsed one by
#: one, as without shapes): an mmengine epoch of up to this many iterations is enough to
#: tell ``(e - 1) × n + i`` from ``i``.
MAX_SEEN = 4096

_TOKEN = re.compile(rb"(?<![\d.])(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?(?![\d.])")
#: a number where a shape's line has one: the digits of the learned lines, or the
#: non-finite words the usual parse reads (``metrics._NUM``: nan, NaN, [-+]inf, [-+]Inf;
#: a word it does not read, such as ``NAN`` or ``Infinity``, must not be read by a shape)
_NUMBER = rb"((?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?|nan|NaN|[-+]?(?:inf|Inf))"
_NUMBER_NC = b"(?:" + _NUMBER[1:]
_STAMP = rb"(\d{4}-\d\d-\d\d[ T_]\d\d:\d\d:\d\d(?:[.,]\d{1,6})?)"
_DIGITS = b"0123456789"
_ISO = re.compile(r"(\d{4})-(\d\d)-(\d\d)[ T_](\d\d):(\d\d):(\d\d)(?:[.,](\d{1,6}))?")


@dataclass
class Shape:
    """One learned line shape (see the module docstring)."""

    kind: str
    tags: tuple[str, ...]
    value_cols: list[set[int]]
    step: set[tuple[int, ...]]
    rank: set[int] | None
    wall: tuple[int, ...] | None
    seen: int = 1
    dead: bool = False
    #: the line's expression, made when the shape is trusted (:meth:`_compile`)
    regex: re.Pattern[bytes] = field(default_factory=lambda: re.compile(b"(?!)"))
    raw: bytes = b""
    spans: list[tuple[int, int]] = field(default_factory=list)
    columns: list[int] = field(default_factory=list)
    #: token column -> capture group of :attr:`regex` (1 is the whole line)
    group_of: dict[int, int] = field(default_factory=dict)
    #: the group holding the whole ISO time stamp, when it is read as one fixed-width text
    stamp_group: int | None = None
    #: the same line as operations of the compiled matcher (:func:`_ops`), or None where
    #: the shape needs what only the expression gives (the parts of a time stamp)
    ops: tuple[tuple[int, Any], ...] | None = None
    #: token column -> column of the compiled matcher's values
    slot_of: dict[int, int] = field(default_factory=dict)

    def resolve(self) -> bool:
        """Trust the shape if enough lines agreed and each role has one column.

        Values whose candidate columns are the same set (two counters both 0 on every
        line so far) take those columns in order, as the adapters read pairs in the order
        of the line; a rank takes the first of its candidates (the launcher prefix comes
        first); the step must have one candidate.
        """
        if self.dead or self.seen < CONFIRM_LINES or len(self.step) != 1:
            return False
        groups: dict[frozenset[int], list[int]] = {}
        for i, cand in enumerate(self.value_cols):
            groups.setdefault(frozenset(cand), []).append(i)
        columns = [0] * len(self.value_cols)
        for cand, members in groups.items():
            if len(cand) != len(members):
                return False
            for i, col in zip(members, sorted(cand), strict=True):
                columns[i] = col
        self.columns = columns
        self._compile()
        return True

    def _compile(self) -> None:
        """The final expression: only the numbers a role reads are captured, and the time
        stamp (if no role reads a part of it) as one text converted without parsing."""
        (step,) = self.step
        step_cols = step[:1] if len(step) == 1 else step[:3]
        needed = {*step_cols, *self.columns, *([min(self.rank)] if self.rank else [])}
        stamp = self.wall is not None and not needed & set(self.wall)
        if self.wall is not None and not stamp:
            needed |= set(self.wall)
        parts: list[bytes] = [b"(?m)^("]
        group = 1
        last = 0
        for j, (a, b) in enumerate(self.spans):
            if stamp and self.wall is not None and j in self.wall:
                if j == self.wall[0]:
                    parts.append(_literal(self.raw[last:a]))
                    group += 1
                    self.stamp_group = group
                    parts.append(_STAMP)
                last = b
                continue
            parts.append(_literal(self.raw[last:a]))
            if j in needed:
                group += 1
                self.group_of[j] = group
                parts.append(_NUMBER)
            else:
                parts.append(_NUMBER_NC)
            last = b
        parts.append(_literal(self.raw[last:], before_number=False))
        parts.append(b")$")
        self.regex = re.compile(b"".join(parts))
        if self.wall is None or stamp:
            self.ops, self.slot_of = _ops(self.raw, self.spans, self.group_of,
                                          self.wall if stamp else None)

    @property
    def train(self) -> bool:
        """Whether its lines are training steps (restarts are judged on them)."""
        return not self.kind.endswith("_eval")


@dataclass
class Shapes:
    """The shapes of one file."""

    learning: dict[bytes, Shape] = field(default_factory=dict)
    confirmed: list[Shape] = field(default_factory=list)
    known: set[bytes] = field(default_factory=set)  # the keys of the confirmed shapes
    tries: int = 0


_SPACES = re.compile(rb" +")
_PADDING = re.compile(rb" +(?=\d)")
_ESCAPED_SPACES = re.compile(rb"(?:\\ )+")
_ESCAPED_TRAILING = re.compile(rb"(?:\\ )+$")


def _literal(text: bytes, before_number: bool = True) -> bytes:
    """The text between two numbers as a pattern: itself, a run of spaces any run of one or
    more, and spaces right before a number any run at all (numbers are padded to a width:
    ``iteration      10/`` and ``iteration     100/``, ``[  9/735]`` and ``[100/735]``)."""
    pattern = re.escape(text)
    if before_number:
        pattern = _ESCAPED_TRAILING.sub(rb" *", pattern)
    return _ESCAPED_SPACES.sub(rb" +", pattern)


_OP_LIT, _OP_SPACES, _OP_NUM, _OP_STAMP = 0, 1, 2, 3
_RUNS = re.compile(rb"( +)|([^ ]+)")


def _literal_ops(text: bytes, before_number: bool = True) -> list[tuple[int, Any]]:
    """:func:`_literal` as operations of the compiled matcher: the text itself, a run of
    spaces at least one space (at least none at the end, before a number)."""
    ops: list[tuple[int, Any]] = []
    for m in _RUNS.finditer(text):
        if m.group(1) is not None:
            ops.append((_OP_SPACES, 0 if before_number and m.end() == len(text) else 1))
        else:
            ops.append((_OP_LIT, m.group(2)))
    return ops


def _ops(raw: bytes, spans: list[tuple[int, int]], group_of: dict[int, int],
         stamp: tuple[int, ...] | None) -> tuple[tuple[tuple[int, Any], ...], dict[int, int]]:
    """The shape's expression as operations of ``_shapematch.match`` (same order, same
    pieces), and the value column of each captured number."""
    ops: list[tuple[int, Any]] = []
    slot_of = {j: i for i, j in enumerate(sorted(group_of))}
    last = 0
    for j, (a, b) in enumerate(spans):
        if stamp is not None and j in stamp:
            if j == stamp[0]:
                ops += _literal_ops(raw[last:a])
                ops.append((_OP_STAMP, 0))
            last = b
            continue
        ops += _literal_ops(raw[last:a])
        ops.append((_OP_NUM, slot_of.get(j, -1)))
        last = b
    ops += _literal_ops(raw[last:], before_number=False)
    return tuple(ops), slot_of


def _matcher() -> Any:
    """The compiled matcher, or None (:func:`.compiled.compiled`)."""
    from autopsy.readers.ranklogs.compiled import compiled

    return compiled()


def _float(tok: bytes) -> float:
    return float(tok)


def _step_of(cand: tuple[int, ...], nums: list[float]) -> float:
    """The step a candidate gives on a line's numbers."""
    if len(cand) == 1:
        return nums[cand[0]]
    je, ji, jn, off = cand
    return (nums[je] + off) * nums[jn] + nums[ji]


def _step_candidates(nums: list[float], step: int) -> set[tuple[int, ...]]:
    """Columns that give ``step``: one column, else ``(e + off) × n + i`` of three."""
    out: set[tuple[int, ...]] = {(j,) for j, v in enumerate(nums) if v == step
                                 and v.is_integer()}
    # an epoch, then "i/n" (two adjacent columns): mmengine's [e][i/n], PyTorch's Epoch: [e][i/n]
    for ji in range(1, len(nums) - 1):
        jn = ji + 1
        i, n = nums[ji], nums[jn]
        if not (i.is_integer() and n.is_integer() and 0 <= i <= n and n > 0):
            continue
        for je in range(ji):
            e = nums[je]
            if not e.is_integer():
                continue
            for off in (-1, 0):
                if e + off >= 0 and (e + off) * n + i == step:
                    out.add((je, ji, jn, off))
    return out


def _wall_columns(text: str, spans: list[tuple[int, int]], wall: float) -> tuple[int, ...] | None:
    """The columns of an ISO stamp (year, month, day, hour, minute, second[, fraction])."""
    if not math.isfinite(wall):
        return None
    m = _ISO.search(text[:80])
    if m is None:
        return None
    cols = tuple(j for j, (a, b) in enumerate(spans) if a >= m.start() and b <= m.end())
    return cols if len(cols) in (6, 7) else None


def learn(shapes: Shapes, raw: bytes, got: MetricLine, rank: int | None, path_rank: int | None,
          wall: float) -> None:
    """Learn from one line parsed the usual way (``got``), or check it against its shape."""
    if (got.kind not in STATELESS_KINDS or not got.stateless
            or got.step is None or len(raw) > MAX_LINE or not raw.isascii()
            or b"\r" in raw or b"\x1b" in raw or len(shapes.confirmed) >= MAX_SHAPES
            or shapes.tries >= MAX_TRIES):
        return
    if any(not math.isfinite(v) for _, v in got.values):
        return
    # padding widths vary (%8d, [%3d/735]): spaces before a number do not count, other runs
    # of spaces count as one
    key = _SPACES.sub(b" ", _PADDING.sub(b"", raw).translate(None, _DIGITS))
    if key in shapes.known:
        return  # a line of a trusted shape read the usual way (a sparse block)
    if EVENT_RE.search(raw):
        return
    toks = list(_TOKEN.finditer(raw))
    nums = [_float(t.group()) for t in toks]
    tags = tuple(t for t, _ in got.values)
    text = raw.decode("ascii")
    wall_cols = _wall_columns(text, [t.span() for t in toks], wall)
    with_rank = path_rank is None and rank is not None
    shape = shapes.learning.get(key)
    if shape is None:  # every candidate column of every role (once per shape)
        if len(toks) > MAX_TOKENS:
            return
        shapes.tries += 1
        cols = [{j for j, x in enumerate(nums) if x == v} for _, v in got.values]
        ranks = {j for j, x in enumerate(nums) if x == rank} if with_rank else None
        shapes.learning[key] = Shape(got.kind, tags, cols, _step_candidates(nums, got.step),
                                     ranks, wall_cols, raw=raw,
                                     spans=[t.span() for t in toks])
        return
    if shape.dead:
        return
    shape.seen += 1
    if (shape.seen > MAX_SEEN or len(nums) != len(shape.spans) or shape.kind != got.kind
            or shape.tags != tags or (shape.rank is None) == with_rank
            or shape.wall != wall_cols):
        shape.dead = True
        return
    # then only the candidates left are checked against this line
    shape.value_cols = [{j for j in c if nums[j] == v}
                        for c, (_, v) in zip(shape.value_cols, got.values, strict=True)]
    shape.step = {c for c in shape.step if _step_of(c, nums) == got.step}
    if shape.rank is not None:
        shape.rank = {j for j in shape.rank if nums[j] == rank}
    if not shape.step or any(not c for c in shape.value_cols) or shape.rank == set():
        shape.dead = True
        return
    if shape.resolve():
        shapes.confirmed.append(shape)
        shapes.known.add(key)
        del shapes.learning[key]


@dataclass
class Matched:
    """The lines of one shape found in one block, as columns."""

    shape: Shape
    starts: np.ndarray
    ends: np.ndarray
    steps: np.ndarray
    values: np.ndarray  # (lines, tags)
    ranks: np.ndarray | None
    walls: np.ndarray


def _days(y: np.ndarray, m: np.ndarray, d: np.ndarray) -> np.ndarray:
    """Days since 1970-01-01 of a civil date (H. Hinnant's algorithm), vectorised."""
    import numpy as np

    y = y - (m <= 2)
    era = np.floor_divide(y, 400)
    yoe = y - era * 400
    doy = (153 * (m + np.where(m > 2, -3, 9)) + 2) // 5 + d - 1
    doe = yoe * 365 + yoe // 4 - yoe // 100 + doy
    return era * 146097 + doe - 719468


def _digits(column: Any) -> np.ndarray:
    """A column of fixed-width digit strings as integers (no per-value parse), else the
    usual conversion."""
    import numpy as np

    width = column.dtype.itemsize
    if width and width <= 4:
        raw = np.frombuffer(column.tobytes(), dtype=np.uint8).reshape(len(column), width)
        if ((raw >= 48) & (raw <= 57)).all():
            return (raw.astype(np.int64) - 48) @ (10 ** np.arange(width - 1, -1, -1))
    return column.astype(np.int64)


def _stamp_walls(stamps: Any) -> np.ndarray:
    """Wall times of ISO stamps (``YYYY-MM-DD hh:mm:ss[.,]fff``) read as a byte matrix:
    digits at fixed places, no per-value parse."""
    import numpy as np

    n = len(stamps)
    width = stamps.dtype.itemsize
    raw = np.frombuffer(stamps.tobytes(), dtype=np.uint8).reshape(n, width).astype(np.int64)
    d = raw - 48

    def num(a: int, b: int) -> np.ndarray:
        return d[:, a:b] @ (10 ** np.arange(b - a - 1, -1, -1))

    y, mo, day, h, mi, s = num(0, 4), num(5, 7), num(8, 10), num(11, 13), num(14, 16), \
        num(17, 19)
    wall = _days(y, mo, day).astype(np.float64) * 86400 + h * 3600 + mi * 60 + s
    if width > 20:  # a fraction: its digits are left-aligned (a shorter row is NUL-padded,
        frac = raw[:, 20:]  # and its missing digits count as zeros: 0.96 is 0.960)
        digits = (frac >= 48) & (frac <= 57)
        value = np.where(digits, frac - 48, 0) @ (10 ** np.arange(width - 21, -1, -1))
        wall = wall + value / 10.0 ** (width - 20)
    ok = (mo >= 1) & (mo <= 12) & (day >= 1) & (day <= 31) & (h <= 23) & (mi <= 59) & (s <= 59)
    return np.where(ok, wall, np.nan)


def _walls(col: Any, idx: tuple[int, ...] | None, n: int) -> np.ndarray:
    import numpy as np

    if idx is None:
        return np.full(n, np.nan)
    y, mo, d, h, mi = (_digits(col(j)) for j in idx[:5])
    sec = col(idx[5])
    s = _digits(sec).astype(np.float64) if sec.dtype.itemsize <= 2 else sec.astype(np.float64)
    wall = _days(y, mo, d).astype(np.float64) * 86400 + h * 3600 + mi * 60 + s
    if len(idx) == 7:
        frac = col(idx[6])
        wall = wall + frac.astype(np.float64) / 10.0 ** np.char.str_len(frac)
    ok = (mo >= 1) & (mo <= 12) & (d >= 1) & (d <= 31) & (h <= 23) & (mi <= 59) & (s < 60)
    return np.where(ok, wall, np.nan)


def match_block(shapes: Shapes, data: bytes, pos: int = 0) -> list[Matched]:
    """Every line of ``data`` from offset ``pos`` (a line start) that a confirmed shape
    matches, per shape, as columns.

    The compiled matcher (``_shapematch``, where it was built) reads the block line by line
    and converts each needed number as it goes; else one ``split`` of the block by the
    shape's expression gives, in C, the text between matched lines, each matched line and
    its numbers; the lines' offsets come from the lengths, and each needed number column is
    converted by numpy at once. A line the compiled matcher declines (one the expression
    would match only by backtracking) is left to the usual parse, which gives the same.
    """
    out: list[Matched] = []
    fast = _matcher()
    for shape in shapes.confirmed:
        got = (_match_compiled(fast, shape, data, pos) if fast is not None and shape.ops
               is not None else _match_regex(shape, data, pos))
        if got is not None:
            out.append(got)
    return out


def _match_compiled(fast: Any, shape: Shape, data: bytes, pos: int) -> Matched | None:
    """The lines of one shape by the compiled matcher."""
    import numpy as np

    width = len(shape.slot_of)
    starts_b, ends_b, cols_b, walls_b = fast.match(data, pos, shape.ops, width)
    n = len(starts_b) // 8
    if n <= 0:
        return None
    starts = np.frombuffer(starts_b, dtype=np.int64)
    ends = np.frombuffer(ends_b, dtype=np.int64)
    cols = np.frombuffer(cols_b, dtype=np.float64).reshape(n, width)

    def num(j: int) -> Any:
        return cols[:, shape.slot_of[j]]

    walls = np.frombuffer(walls_b, dtype=np.float64) if shape.stamp_group is not None else None
    return _columns(shape, n, starts, ends, num, walls, None)


def _match_regex(shape: Shape, data: bytes, pos: int) -> Matched | None:
    """The lines of one shape by one ``split`` of the block by its expression."""
    import numpy as np

    text = data if pos == 0 else data[pos:]
    pieces = shape.regex.split(text)
    k = shape.regex.groups  # the line, then its numbers
    n = (len(pieces) - 1) // (k + 1)
    if n <= 0:
        return None
    gap_len = np.fromiter(map(len, pieces[0:-1:k + 1]), dtype=np.int64, count=n)
    line_len = np.fromiter(map(len, pieces[1::k + 1]), dtype=np.int64, count=n)
    ends = pos + np.cumsum(gap_len + line_len)
    starts = ends - line_len

    def col(j: int) -> Any:
        return np.array(pieces[shape.group_of[j]::k + 1][:n])

    def num(j: int) -> Any:
        # float() reads the bytes of a number as the expression wrote it (``nan``,
        # ``inf``, ``1e-4``) twice as fast as a bytes array's astype
        return np.fromiter(map(float, pieces[shape.group_of[j]::k + 1][:n]),
                           dtype=np.float64, count=n)

    walls = None
    if shape.stamp_group is not None:
        walls = _stamp_walls(np.array(pieces[shape.stamp_group::k + 1][:n]))
    return _columns(shape, n, starts, ends, num, walls, col)


def _columns(shape: Shape, n: int, starts: Any, ends: Any, num: Any, walls: Any,
             col: Any) -> Matched | None:
    """A shape's matched lines as columns: step, values, rank and wall time."""
    import numpy as np

    (step_cols,) = shape.step
    if len(step_cols) == 1:
        step_f = num(step_cols[0])
    else:
        je, ji, jn, off = step_cols
        step_f = (num(je) + off) * num(jn) + num(ji)
    values = np.empty((n, len(shape.columns)))
    for i, c in enumerate(shape.columns):
        values[:, i] = num(c)
    rank_f = None if shape.rank is None else num(min(shape.rank))
    if walls is None:
        walls = _walls(col, shape.wall, n)
    # a step or rank written nan/inf (or too large) is no line of the shape: the usual
    # parse takes it (it does not read it as a step either)
    ok = np.isfinite(step_f) & (np.abs(step_f) < MAX_STEP)
    if rank_f is not None:
        ok &= np.isfinite(rank_f) & (np.abs(rank_f) < MAX_STEP)
    if not ok.all():
        starts, ends, step_f, values, walls = (starts[ok], ends[ok], step_f[ok], values[ok],
                                               walls[ok])
        rank_f = None if rank_f is None else rank_f[ok]
        if not len(starts):
            return None
    ranks = None if rank_f is None else rank_f.astype(np.int64)
    return Matched(shape, starts, ends, step_f.astype(np.int64), values, ranks, walls)
