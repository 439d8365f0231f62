"""Scan one log file: markers by literal search, then the detailed parsers.

:func:`scan_file` returns plain lists (picklable, so files can be scanned in worker
processes): event rows, scalar rows and problems.
"""

from __future__ import annotations

import gzip
import json
import math
import os
import re
import zlib
from array import array
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from autopsy.model.events import EventKind
from autopsy.model.problem import Problem
from autopsy.readers.progress import report
from autopsy.readers.ranklogs import events as ev
from autopsy.readers.ranklogs import markers as markers_mod
from autopsy.readers.ranklogs import stacks
from autopsy.readers.ranklogs.adapters import LEAD_COUNT, LineContext, flush_keras
from autopsy.readers.ranklogs.budget import max_points, thin_columns
from autopsy.readers.ranklogs.fastpath import Found, block_hits, marker_offsets
from autopsy.readers.ranklogs.layout import PathInfo, inline_rank, path_info, split_prefix
from autopsy.readers.ranklogs.lines import (
    NUMBERED_HEAD_BYTES,
    TEXT_SNIFF_BYTES,
    clean,
    iter_blocks,
    looks_like_text,
    numbered_lines,
    open_binary,
    read_head,
    strip_numbers,
)
from autopsy.readers.ranklogs.markers import (
    BLOCK_MARKERS,
    EVENT_MARKERS,
    EVENT_RE,
    METRIC_MARKERS,
    METRIC_RE,
    hit_lines,
)
from autopsy.readers.ranklogs.metrics import (
    MetricLine,
    bar_step_after,
    logging_steps,
    parse_metrics,
)
from autopsy.readers.ranklogs.shapes import Matched, Shapes, learn, match_block
from autopsy.readers.ranklogs.structured import (
    STRUCTURE_MAX_BYTES,
    read_stepless,
    read_structured,
)
from autopsy.readers.ranklogs.timestamps import parse_time

#: ``AUTOPSY_RANKLOGS_SHAPES=0`` reads every metric line with the adapters, never by a
#: learned line shape (:mod:`.shapes`); the results are the same, only slower.
SHAPES_ENV = "AUTOPSY_RANKLOGS_SHAPES"
#: Gaps between shape lines up to this long are searched for metric markers by one
#: expression (one call per marker line); longer ones by ``bytes.find`` per marker.
SMALL_GAP = 4096
#: Bytes after an HF dict line searched for the tqdm bar that gives its step.
BAR_LOOKAHEAD = 4096
#: Longest message kept on an event row.
MAX_MESSAGE = 500
#: Events of one kind kept per rank and file from the start; then only the last few.
FIRST_EVENTS = 32
#: Events of one kind kept per rank and file from the end, past the first ones.
LAST_EVENTS = 8
#: Overflow-skip lines this close (in lines) to the previous one of their rank, and holding
#: other details, are the same skip (DeepSpeed writes a skip on three consecutive lines).
OVERFLOW_MERGE_LINES = 3
_MSG_STEP = re.compile(r"\b(?:step|iteration|iter)[ :=#]+(\d+)", re.IGNORECASE)
_ERROR_JSON_MAX = 16 << 20

EventRow = tuple[int | None, float, int | None, str, str, str, int, dict[str, Any]]
#: A block with a metric line per this many bytes or more is metric-dense: the next block's
#: lines of known shapes are read all at once (:mod:`.shapes`). Below it, one regex pass over
#: the block costs more than parsing its few metric lines (64 sparse rank logs: 5.3 s with
#: shapes everywhere was 9.5 s).
DENSE_LINE_BYTES = 1024
#: Steps beyond this (2**62) are not steps; the line is skipped and counted.
MAX_STEP = 1 << 62
#: Rank stored for "no rank" in the compact scalar columns.
NO_RANK = -1


_COLUMN_TYPES = {"step": "q", "tag": "i", "value": "d", "wall_time": "d", "rank": "q",
                 "segment": "q"}
_NUMPY_TYPES = {"step": "<i8", "tag": f"<i{array('i').itemsize}", "value": "<f8",
                "wall_time": "<f8", "rank": "<i8", "segment": "<i8"}


@dataclass
class ScalarColumns:
    """Scalar points of one file as compact columns (8 bytes a value, not a tuple).

    Holds at most ``cap`` points: past it, the points are thinned one level (see
    :mod:`.budget`) and points arriving later are thinned to the same level, so a
    file of any size takes bounded memory. ``raw`` counts every point added.
    """

    step: array = field(default_factory=lambda: array("q"))
    tag: array = field(default_factory=lambda: array("i"))
    value: array = field(default_factory=lambda: array("d"))
    wall_time: array = field(default_factory=lambda: array("d"))
    rank: array = field(default_factory=lambda: array("q"))
    segment: array = field(default_factory=lambda: array("q"))
    tags: list[str] = field(default_factory=list)
    cap: int = field(default_factory=max_points)
    raw: int = 0
    level: int = 0
    _stored: int = 0
    _codes: dict[str, int] = field(default_factory=dict)
    #: Points before the one-by-one columns above, as numpy columns, in order; the first
    #: ``_stored`` points (thinned to ``level``) end on a chunk boundary.
    _chunks: list[dict[str, Any]] = field(default_factory=list)
    _held: int = 0

    def add(self, step: int, tag: str, value: float, wall: float, rank: int | None,
            segment: int) -> None:
        """Append one point."""
        code = self._codes.get(tag)
        if code is None:
            code = self._codes[tag] = len(self.tags)
            self.tags.append(tag)
        self.step.append(step)
        self.tag.append(code)
        self.value.append(value)
        self.wall_time.append(wall)
        self.rank.append(NO_RANK if rank is None else rank)
        self.segment.append(segment)
        self.raw += 1
        if len(self) > self.cap:
            self._thin()

    def add_line(self, step: int, pairs: list[tuple[str, float]], wall: float,
                 rank: int | None, segment: int) -> None:
        """Append the points of one line (same step, wall time, rank and segment)."""
        codes = self._codes
        tag_col = self.tag
        value_col = self.value
        for tag, value in pairs:
            code = codes.get(tag)
            if code is None:
                code = codes[tag] = len(self.tags)
                self.tags.append(tag)
            tag_col.append(code)
            value_col.append(value)
        n = len(pairs)
        self.step.extend([step] * n)
        self.wall_time.extend([wall] * n)
        self.rank.extend([NO_RANK if rank is None else rank] * n)
        self.segment.extend([segment] * n)
        self.raw += n
        if len(self) > self.cap:
            self._thin()

    def extend(self, other: ScalarColumns, step_factor: int = 1) -> None:
        """Append every point of ``other`` (its steps multiplied by ``step_factor``)."""
        if not len(other):
            return
        import numpy as np

        cols = dict(other.arrays())
        remap = np.array([self._code(t) for t in other.tags], dtype=_NUMPY_TYPES["tag"])
        cols["tag"] = remap[cols["tag"]]
        cols["step"] = cols["step"] * step_factor
        self._flush_tail()
        self._push(cols)
        self.raw += other.raw
        if len(self) > self.cap:
            self._thin()
        self.settle()

    def add_columns(self, step: Any, tag: Any, value: Any, wall: Any, rank: Any,
                    segment: Any) -> None:
        """Append points given as numpy columns (``tag``: codes from :meth:`code`)."""
        import numpy as np

        self._flush_tail()
        self._push({name: np.ascontiguousarray(col, dtype=_NUMPY_TYPES[name])
                    for name, col in (("step", step), ("tag", tag), ("value", value),
                                      ("wall_time", wall), ("rank", rank),
                                      ("segment", segment))})
        self.raw += len(step)
        if len(self) > self.cap:
            self._thin()

    def code(self, tag: str) -> int:
        """The code of ``tag`` in this file's tag list (added if new)."""
        return self._code(tag)

    def _code(self, tag: str) -> int:
        code = self._codes.get(tag)
        if code is None:
            code = self._codes[tag] = len(self.tags)
            self.tags.append(tag)
        return code

    def arrays(self, start: int = 0) -> dict[str, Any]:
        """The columns from point ``start`` on as numpy arrays (a new dict; treat the
        arrays as read-only, they may be this object's own)."""
        self._flush_tail()
        whole = self._gather(self._chunks)
        self._chunks = [whole]
        return {name: col[start:] for name, col in whole.items()}

    def _push(self, cols: dict[str, Any]) -> None:
        if len(cols["value"]):
            self._chunks.append(cols)
            self._held += len(cols["value"])

    def _flush_tail(self) -> None:
        """Move the points appended one by one into a numpy chunk (keeping their order)."""
        if not len(self.step):
            return
        import numpy as np

        self._push({name: np.frombuffer(getattr(self, name), dtype=_NUMPY_TYPES[name]).copy()
                    for name in _COLUMN_TYPES})
        for name, code in _COLUMN_TYPES.items():
            setattr(self, name, array(code))

    @staticmethod
    def _gather(chunks: list[dict[str, Any]]) -> dict[str, Any]:
        import numpy as np

        if len(chunks) == 1:
            return chunks[0]
        if not chunks:
            return {name: np.empty(0, dtype=_NUMPY_TYPES[name]) for name in _COLUMN_TYPES}
        return {name: np.concatenate([c[name] for c in chunks]) for name in _COLUMN_TYPES}

    def settle(self) -> None:
        """Thin the points added since the last thinning to the current level (call at
        the end of a file, so its last stretch is not denser than the rest)."""
        if not self.level or self._stored >= len(self):
            return
        self._flush_tail()
        settled: list[dict[str, Any]] = []
        held = 0
        for i, chunk in enumerate(self._chunks):  # chunk boundaries fall on _stored
            if held >= self._stored:
                fresh = self._chunks[i:]
                break
            settled.append(chunk)
            held += len(chunk["value"])
        else:
            fresh = []
        tail = thin_columns(self._gather(fresh), self.level)
        self._chunks = settled
        self._held = held
        self._push(tail)
        self._stored = len(self)

    def _thin(self) -> None:
        """Bring the points added since the last thinning to the current level, then
        thin everything one more level while more than 3/4 of ``cap`` are held."""
        self.settle()
        if len(self) > self.cap * 3 // 4:
            self._flush_tail()
            head = self._gather(self._chunks)
            while len(head["value"]) > self.cap * 3 // 4:
                thinner = thin_columns(head)
                self.level += 1
                if len(thinner["value"]) == len(head["value"]):
                    break
                head = thinner
            self._chunks = []
            self._held = 0
            self._push(head)
        self._flush_tail()
        self._stored = len(self)
        if self._stored > self.cap * 3 // 4:  # cannot thin (hundreds of thousands of
            self.cap = 2 * self._stored       # series): grow rather than thin on every add

    def __len__(self) -> int:
        return self._held + len(self.step)

    def rows(self) -> list[tuple[int, str, float, float, int | None, int]]:
        """The points as tuples (for tests and debugging)."""
        cols = {name: col.tolist() for name, col in self.arrays().items()}
        return [(cols["step"][i], self.tags[cols["tag"][i]], cols["value"][i],
                 cols["wall_time"][i], None if cols["rank"][i] == NO_RANK else cols["rank"][i],
                 cols["segment"][i]) for i in range(len(self))]


@dataclass
class FileResult:
    """What one file gave."""

    source: str = ""
    events: list[EventRow] = field(default_factory=list)
    scalars: ScalarColumns = field(default_factory=ScalarColumns)
    problems: list[Problem] = field(default_factory=list)


@dataclass
class _State:
    """Per-file scanning state."""

    rel: str
    info: PathInfo
    out: FileResult
    last_step: dict[int | None, int] = field(default_factory=dict)
    #: the line and details of each rank's last overflow-skip event (see ``_add``)
    last_overflow: dict[int | None, tuple[int, dict[str, Any]]] = field(default_factory=dict)
    #: the step of the last training metric line of any rank (a pace line's fallback)
    last_train_step: int | None = None
    logging_steps: int | None = None
    hf_ordinal: dict[int | None, int] = field(default_factory=dict)
    pending_hf: ScalarColumns = field(default_factory=ScalarColumns)
    pending_lines: int = 0
    event_counts: dict[tuple[int | None, str], int] = field(default_factory=dict)
    event_tails: dict[tuple[int | None, str], deque[EventRow]] = field(default_factory=dict)
    bar_steps: int = 0
    restarts: int = 0
    nan_seen: set[tuple[int | None, int]] = field(default_factory=set)
    #: the last training step of each rank's step counter (one per line format: a
    #: DeepSpeed ``step=N`` line and the loop's own ``step: N`` count apart), and the
    #: restarts seen when it was logged
    top_step: dict[tuple[int | None, str], int] = field(default_factory=dict)
    top_seg: dict[tuple[int | None, str], int] = field(default_factory=dict)
    contexts: dict[int | None, LineContext] = field(default_factory=dict)
    shapes: Shapes = field(default_factory=Shapes)
    bad_steps: int = 0
    dense: bool = False  # the last block held a metric line per DENSE_LINE_BYTES or more
    shaping: bool = False  # this block may use shapes (so its lines are learned from)
    learning: bool = field(default_factory=lambda: os.environ.get(SHAPES_ENV, "1") != "0")
    last_points: dict[int | None, tuple[int, tuple[tuple[str, float], ...]]] = field(
        default_factory=dict)
    #: (exception, message) of each rank's last traceback: its exception line, met again
    #: when the scan reaches it, is not a second (headerless) exception
    last_exception: dict[int | None, tuple[str, str]] = field(default_factory=dict)

    def segment_for(self, rank: int | None, step: int, train: bool, counter: str = "") -> int:
        """The segment of a point: the path's attempt plus restarts seen in this file.

        A training step lower than the last one of the same step counter (``counter``: the
        line's format) on the same rank means the run started again (a resume from a
        checkpoint) inside the same log. Two counters of one log (DeepSpeed's optimizer
        ``step=10`` and the loop's own ``step: 9``) are compared each with itself, and a
        relaunch that sends both back is one restart (as :func:`_restarts` judges the lines
        read by shape).
        """
        if train:
            key = (rank, counter)
            last = self.top_step.get(key)
            if last is not None and step < last and self.top_seg.get(key) == self.restarts:
                self.restarts += 1
            self.top_step[key] = step
            self.top_seg[key] = self.restarts
        return self.info.attempt + self.restarts


def scan_file(path: Path, rel: str, cap: int | None = None) -> FileResult:
    """Scan one log (or torchelastic ``error.json``); never raises on bad content.

    ``cap``: the points this file may hold before they are thinned (default: the whole
    budget; a reader of many files gives each its share)."""
    out = FileResult(source=rel)
    info = path_info(rel)
    if path.name.endswith(".json"):
        _read_error_json(path, rel, info, out)
        return out
    head = read_head(path, NUMBERED_HEAD_BYTES)
    if head and not looks_like_text(head[:TEXT_SNIFF_BYTES]):
        out.problems.append(Problem(rel, "does not look like text; not read", kind="not_text"))
        return out
    numbered = numbered_lines(head)
    # a numbered paste is read with its numbers taken off, block by block: the fast path's
    # offsets are the file's, so it is not used
    found = None if numbered else marker_offsets(path)
    if found is not None:
        fast = _scan_text(path, rel, info, found, cap)
        if fast is not None:
            return fast
    done = _scan_text(path, rel, info, None, cap, numbered=numbered)
    out = done if done is not None else out
    if not len(out.scalars):
        _read_structured(path, rel, info, out)
    return out


def _read_structured(path: Path, rel: str, info: PathInfo, out: FileResult) -> None:
    """Read a log whose lines gave no metric for blocks, tables and bare columns
    (:mod:`.structured`), through the same point path as the line parsers."""
    try:
        if path.name.endswith(".gz") or path.stat().st_size > STRUCTURE_MAX_BYTES:
            return
    except OSError:
        return
    st = _State(rel, info, out)
    rank = info.rank

    def emit(got: MetricLine, line: int, wall: float) -> None:
        _add_metric_line(st, got, rank, wall, line, "")

    try:
        points, bare = read_structured(path, emit)
    except (OSError, EOFError) as exc:
        out.problems.append(Problem(rel, f"read stopped early: {type(exc).__name__}: {exc}",
                                    used="the lines before it", kind="truncated"))
        points, bare = len(out.scalars), 0
    if bare:
        out.problems.append(Problem(
            rel, f"{bare:,} lines of a bare step and numbers, with no name: read as the "
                 "training loss", used="the numbers after the step as loss values",
            kind="assumed_name",
            count=bare))
    if not points:
        try:
            points = stepless = read_stepless(path, emit)
        except (OSError, EOFError) as exc:
            points, stepless = len(out.scalars), 0
            if not any(p.kind == "truncated" for p in out.problems):
                out.problems.append(Problem(
                    rel, f"read stopped early: {type(exc).__name__}: {exc}",
                    used="the lines before it", kind="truncated"))
        if stepless:
            out.problems.append(Problem(
                rel, f"{stepless:,} lines of named values with no step: each numbered by its "
                     "count among the lines of its kind", used="the count as the step",
                kind="assumed_step", count=stepless))
    if points:
        out.scalars.settle()
        _close_events(st)


def _scan_text(path: Path, rel: str, info: PathInfo, found: Found | None,
               cap: int | None = None, numbered: bool = False) -> FileResult | None:
    """Scan a text log; with ``found`` (the fast path's hits), None if they fail a block
    (an over-long line, a file changed meanwhile): the caller starts again without them.
    Lines are counted here, block by block (the shape-read lines have no tool line).
    ``numbered``: every line starts with its line number (:func:`.lines.numbered_lines`),
    taken off before the lines are read."""
    out = FileResult(source=rel)
    if cap is not None:
        out.scalars = ScalarColumns(cap=cap)
    state = _State(rel, info, out)
    truncated = 0
    size = _progress_size(path)
    try:
        with open_binary(path) as stream:
            # the tool's line numbers spare counting lines, where it gave them for every
            # marker line (not in a metric-dense file, where it searches events alone)
            counted = found is None or found.lines is None or found.events_only
            for block in iter_blocks(stream, BLOCK_MARKERS, count_lines=counted):
                truncated += block.truncated_lines
                data = strip_numbers(block.data) if numbered else block.data
                hits = None
                if found is not None:
                    hits = block_hits(block.data, block.offset, found)
                    if hits is None:
                        return None
                _scan_block(data, block.first_line, state, hits,
                            events_only=found is not None and found.events_only,
                            counted=counted)
                if size:  # the bytes read so far (a block after a cut long line has no offset)
                    report(f"reading {rel}", min(stream.tell(), size), size)
    except (OSError, EOFError, zlib.error, gzip.BadGzipFile) as exc:
        out.problems.append(Problem(rel, f"read stopped early: {type(exc).__name__}: {exc}",
                                    used="the lines before it", kind="truncated"))
    if truncated:
        out.problems.append(Problem(rel, "lines longer than 64 KiB: only their last 64 KiB kept",
                                    used="the tail of each", kind="long_line", count=truncated))
    _flush_contexts(state)
    if state.bad_steps:
        out.problems.append(Problem(rel, f"{state.bad_steps:,} lines with a step or another "
                                         "number too large for one", used="the other lines",
                                    kind="bad_value", count=state.bad_steps))
    _resolve_hf(state)
    out.scalars.settle()
    _close_events(state)
    return out


#: A file this large reports its own progress, block by block (when read in this process).
PROGRESS_BYTES = 64 << 20


def _progress_size(path: Path) -> int:
    """The size to report progress against: a large plain file's, else 0 (no reports)."""
    if path.name.endswith(".gz"):
        return 0
    try:
        size = path.stat().st_size
    except OSError:
        return 0
    return size if size >= PROGRESS_BYTES else 0


def _follow(data: bytes, pos: int) -> Iterator[tuple[str, int]]:
    """Yield ``(text, end offset)`` of each line of ``data`` from offset ``pos``."""
    n = len(data)
    while pos < n:
        end = data.find(b"\n", pos)
        if end < 0:
            end = n
        yield clean(data[pos:end]), end
        pos = end + 1


def _scan_block(data: bytes, first_line: int, st: _State,
                hits: tuple[list[int], list[int] | None] | None = None,
                events_only: bool = False, counted: bool = True) -> None:
    """Process every marker line of one block.

    ``hits``: the starts of those lines (and maybe their line numbers) when the
    fast path found them; else they are searched here. Lines of a learned shape
    (:mod:`.shapes`) are read all at once, in order with the others; a shape confirmed
    in the middle of the block takes the rest of the block's lines at once.
    """
    # shapes need the block's own line numbers (the tool's cover only its marker lines)
    shapes = st.shaping = counted and st.learning
    fast = _fast_from(st, data, 0) if st.dense and shapes else None
    numbers = None
    if hits is None:
        starts = hit_lines(data) if fast is None else _hits_around(data, fast)
    elif events_only:  # the tool found the event lines; the metric lines are found here
        metric = (hit_lines(data, METRIC_MARKERS) if fast is None
                  else _hits_around(data, fast, events=False))
        starts = sorted(set(hits[0]).union(metric))
    elif fast is None:
        starts, numbers = hits
    else:
        starts = _uncovered(hits[0], fast)
    line = first_line
    cur = 0
    skip_until = -1
    event_search = EVENT_RE.search
    metric_search = METRIC_RE.search
    confirmed = len(st.shapes.confirmed)
    metric_lines = 0 if fast is None else len(fast.starts)
    i = 0
    while i < len(starts):
        start = starts[i]
        i += 1
        if start < skip_until:
            continue
        if fast is not None:
            fast.flush_before(start, data, first_line, st)
        if numbers is None:
            line += data.count(b"\n", cur, start)
            cur = start
        else:
            line = numbers[i - 1]
        end = data.find(b"\n", start)
        if end < 0:
            end = len(data)
        raw = data[start:end]
        if event_search(raw):
            skip_until = max(skip_until, _events_of_line(data, raw, end, line, st))
        if metric_search(raw):  # an event-only line is not cleaned and split twice
            _metrics_of_line(data, raw, end, line, st)
            metric_lines += 1
            if len(st.shapes.confirmed) != confirmed:  # a shape was just trusted
                confirmed = len(st.shapes.confirmed)
                if shapes and metric_lines * DENSE_LINE_BYTES >= end + 1:  # a dense block
                    fast = _fast_from(st, data, end + 1)
                    metric_lines += 0 if fast is None else len(fast.starts)
                    starts = starts[:i] + _uncovered(starts[i:], fast)
    if fast is not None:
        fast.flush_before(len(data) + 1, data, first_line, st)
    # shapes search a whole block: worth it where metric lines are dense, not in a log
    # holding one metric line in a hundred (its lines are parsed one by one)
    st.dense = metric_lines * DENSE_LINE_BYTES >= len(data)


def _fast_from(st: _State, data: bytes, pos: int) -> _Fast | None:
    """The lines of the file's trusted shapes in ``data`` from ``pos`` on, if any."""
    if not st.shapes.confirmed or pos >= len(data):
        return None
    matched = match_block(st.shapes, data, pos)
    return _Fast.of(matched) if matched else None


def _uncovered(starts: list[int], fast: _Fast | None) -> list[int]:
    """``starts`` without the lines a shape reads."""
    if fast is None:
        return starts
    covered = set(fast.starts.tolist())
    return [x for x in starts if x not in covered]


def _hits_around(data: bytes, fast: _Fast, events: bool = True) -> list[int]:
    """Marker lines of a block whose shape lines are known: event markers anywhere (a
    shape never holds one; not searched with ``events`` false), metric markers only
    between the shape lines."""
    starts = set(hit_lines(data, EVENT_MARKERS)) if events else set()
    search = METRIC_RE.search
    compiled = markers_mod._COMPILED is not None  # one pass per gap in C: always the best
    for a, b in _gaps(fast, len(data)):
        if b - a > SMALL_GAP or compiled:
            starts.update(a + x for x in hit_lines(data[a:b], METRIC_MARKERS))
            continue
        # a short gap (a line or two between shape lines): one search of all the markers
        # per line holding one, not one find per marker
        m = search(data, a, b)
        while m is not None:
            start = data.rfind(b"\n", a, m.start()) + 1
            starts.add(max(start, a))
            end = data.find(b"\n", m.end(), b)
            if end < 0:
                break
            m = search(data, end, b)
    return sorted(starts)


def _gaps(fast: _Fast, size: int) -> list[tuple[int, int]]:
    """The byte ranges of a block between its shape lines (only the newline between two
    consecutive shape lines is not a gap)."""
    import numpy as np

    lo = np.concatenate(([0], fast.ends))
    hi = np.concatenate((fast.starts, [size]))
    wide = np.flatnonzero(hi - lo > 1)
    return list(zip(lo[wide].tolist(), hi[wide].tolist(), strict=True))


@dataclass
class _Fast:
    """The shape lines of one block in file order, consumed in batches."""

    starts: Any
    ends: Any
    part: Any  # which Matched each line comes from
    row: Any  # its row in that Matched
    matched: list[Matched]
    done: int = 0

    @classmethod
    def of(cls, matched: list[Matched]) -> _Fast:
        import numpy as np

        starts = np.concatenate([m.starts for m in matched])
        order = np.argsort(starts, kind="stable")
        part = np.concatenate([np.full(len(m.starts), i) for i, m in enumerate(matched)])
        row = np.concatenate([np.arange(len(m.starts)) for m in matched])
        ends = np.concatenate([m.ends for m in matched])
        return cls(starts[order], ends[order], part[order], row[order], matched)

    def flush_before(self, pos: int, data: bytes, first_line: int, st: _State) -> None:
        """Add the shape lines that start before ``pos`` and were not added yet."""
        import numpy as np

        upto = int(np.searchsorted(self.starts, pos, side="left"))
        if upto > self.done:
            _add_fast(self, self.done, upto, data, first_line, st)
            self.done = upto


def _add_fast(fast: _Fast, lo: int, hi: int, data: bytes, first_line: int, st: _State) -> None:
    """Add shape lines ``lo:hi`` (file order) as the usual parse would, line by line: the
    same segments (a training step going back is a restart), the same repeated-line rule,
    the same NaN events; the points in line order."""
    import numpy as np

    part, row = fast.part[lo:hi], fast.row[lo:hi]
    n = hi - lo
    steps = np.empty(n, dtype=np.int64)
    ranks = np.empty(n, dtype=np.int64)
    train = np.empty(n, dtype=bool)
    walls = np.empty(n)
    for i, m in enumerate(fast.matched):
        sel = part == i
        if not sel.any():
            continue
        r = row[sel]
        steps[sel] = m.steps[r]
        walls[sel] = m.walls[r]
        train[sel] = m.shape.train
        if m.ranks is not None:
            ranks[sel] = m.ranks[r]
        else:
            ranks[sel] = NO_RANK if st.info.rank is None else st.info.rank
    if st.info.rank is not None:
        ranks[:] = st.info.rank
    # one point for a line logged twice in a row (as the usual parse: same rank, same
    # step and values as the rank's previous line, no NaN in it)
    keep = np.ones(n, dtype=bool)
    prev = np.full(n, -1)
    groups = _by_rank(ranks)
    for rk, sel in groups:
        prev[sel[1:]] = sel[:-1]
        j = int(sel[0])  # the rank's first line here: against its last line before
        before = st.last_points.get(None if rk == NO_RANK else rk)
        m = fast.matched[int(part[j])]
        vals = m.values[row[j]]
        if (before is not None and before[0] == steps[j] and not np.isnan(vals).any()
                and before[1] == tuple(zip(m.shape.tags, vals.tolist(), strict=True))):
            keep[j] = False
    for i, m in enumerate(fast.matched):
        idx = np.flatnonzero((part == i) & (prev >= 0))
        if not len(idx):
            continue
        pj = prev[idx]
        same = (part[pj] == i) & (steps[pj] == steps[idx])
        if not same.any():
            continue
        idx, pj = idx[same], pj[same]
        a, b = m.values[row[idx]], m.values[row[pj]]
        keep[idx[(a == b).all(axis=1) & ~np.isnan(a).any(axis=1)]] = False
    # segments: a training step lower than the last one of its counter is a restart
    restart = np.zeros(n, dtype=bool)
    last_of: dict[tuple[int | None, str], int] = {}
    names = sorted({counter_of(m.shape.kind) for m in fast.matched})
    counters = np.array([names.index(counter_of(m.shape.kind)) for m in fast.matched],
                        dtype=np.int64)
    for rk, mine in groups:
        key = None if rk == NO_RANK else rk
        kept = mine[keep[mine]]
        if not len(kept):
            continue
        sel = kept[train[kept]]
        if len(sel):
            s = steps[sel]
            accepted, last_rows = _restarts(st, key, s, counters[part[sel]], names)
            restart[sel[accepted]] = True
            for k, at in last_rows.items():
                last_of[k] = int(sel[at])
            ctx = st.contexts.get(key)  # what its evaluation lines are stepped at
            if ctx is None:
                ctx = st.contexts[key] = LineContext()
            ctx.train_step = int(s[-1])
        last = int(kept[-1])
        st.last_step[key] = int(steps[last])
        m = fast.matched[int(part[last])]
        st.last_points[key] = (int(steps[last]), tuple(zip(
            m.shape.tags, m.values[int(row[last])].tolist(), strict=True)))
    counted = np.cumsum(restart)
    segs = st.info.attempt + st.restarts + counted
    for k, at in last_of.items():  # the restarts seen when each counter last logged
        st.top_seg[k] = st.restarts + int(counted[at])
    st.restarts += int(restart.sum())
    # the points, line by line in file order
    cols = st.out.scalars
    for i, m in enumerate(fast.matched):
        sel = (part == i) & keep
        if not sel.any():
            continue
        idx = np.flatnonzero(sel)
        vals = m.values[row[idx]]
        _nan_events(st, m, vals, steps[idx], ranks[idx], segs[idx], walls[idx],
                    fast.starts[lo + idx], data, first_line)
    order = np.flatnonzero(keep)
    widths = np.array([len(fast.matched[p].shape.tags) for p in range(len(fast.matched))])
    k = widths[part[order]]
    total = int(k.sum())
    if not total:
        return
    values = _rows_in_order(fast, part[order], row[order])
    codes_by_part = [np.array([cols.code(t) for t in m.shape.tags], dtype=np.int32)
                     for m in fast.matched]
    tags = _codes_in_order(codes_by_part, part[order])
    cols.add_columns(np.repeat(steps[order], k), tags, values, np.repeat(walls[order], k),
                     np.repeat(ranks[order], k), np.repeat(segs[order], k))


def counter_of(kind: str) -> str:
    """The step counter a metric line's kind counts with: its format, evaluation lines and
    epoch summaries of one format with its training lines (``mxnet_epoch`` is ``mxnet``)."""
    return kind.split("_", 1)[0]


def _restarts(st: _State, key: int | None, s: Any, codes: Any, names: list[str]
              ) -> tuple[Any, dict[tuple[int | None, str], int]]:
    """Positions in ``s`` (one rank's training steps in a block, in file order; ``codes``
    their step counters, indices into ``names``) where the run started again: a step lower
    than the last of its own counter, unless a restart was already seen since that
    counter's previous row (a relaunch sends every counter back; it is one restart).
    Updates ``st.top_step``; returns the positions and each counter's last position (the
    caller sets ``st.top_seg`` once the block's restarts are counted)."""
    import bisect

    import numpy as np

    present = np.unique(codes).tolist()
    if len(present) == 1:  # one counter (nearly every log): every step going back restarts,
        k = (key, names[present[0]])  # vectorised; the block's first row only when no
        top = st.top_step.get(k)      # other counter restarted since it last logged
        back = np.flatnonzero(s < np.concatenate(
            ([np.iinfo(np.int64).min if top is None else top], s[:-1])))
        if back.size and back[0] == 0 and st.top_seg.get(k, st.restarts) != st.restarts:
            back = back[1:]
        st.top_step[k] = int(s[-1])
        return back.astype(np.int64), {k: len(s) - 1}
    cands: list[tuple[int, int]] = []  # (position, position of its counter's previous row)
    last_at: dict[tuple[int | None, str], int] = {}
    for c in present:
        idx = np.flatnonzero(codes == c)
        k = (key, names[c])
        top = st.top_step.get(k)
        sc = s[idx]
        prev = np.concatenate(([np.iinfo(np.int64).min if top is None else top], sc[:-1]))
        for j in np.flatnonzero(sc < prev).tolist():
            cands.append((int(idx[j]), int(idx[j - 1]) if j > 0 else -1))
        st.top_step[k] = int(sc[-1])
        last_at[k] = int(idx[-1])
    cands.sort()
    accepted: list[int] = []
    for pos, before in cands:
        if before < 0:  # its counter last logged in an earlier block
            ok = (st.top_seg.get((key, names[int(codes[pos])]), st.restarts) == st.restarts
                  and not accepted)
        else:  # no restart accepted between its counter's previous row and this one
            ok = bisect.bisect_right(accepted, before) == len(accepted)
        if ok:
            accepted.append(pos)
    return np.array(accepted, dtype=np.int64), last_at


def _by_rank(ranks: Any) -> list[tuple[int, Any]]:
    """Each rank with the positions of its lines, in order (one sort, not a pass over all
    lines per rank: a log of thousands of ranks stays linear-logarithmic)."""
    import numpy as np

    order = np.argsort(ranks, kind="stable")
    values, first = np.unique(ranks[order], return_index=True)
    bounds = [*first.tolist(), len(order)]
    return [(int(v), order[bounds[i]:bounds[i + 1]]) for i, v in enumerate(values.tolist())]


def _rows_in_order(fast: _Fast, parts: Any, rows: Any) -> Any:
    """The values of the given lines, flattened line by line."""
    import numpy as np

    out = []
    # consecutive lines of one shape are taken in one slice
    boundaries = np.flatnonzero(np.diff(parts)) + 1
    for a, b in zip(np.r_[0, boundaries], np.r_[boundaries, len(parts)], strict=True):
        m = fast.matched[int(parts[a])]
        out.append(m.values[rows[a:b]].ravel())
    return np.concatenate(out)


def _codes_in_order(codes_by_part: list[Any], parts: Any) -> Any:
    """The tag codes of the given lines, flattened line by line."""
    import numpy as np

    out = []
    boundaries = np.flatnonzero(np.diff(parts)) + 1
    for a, b in zip(np.r_[0, boundaries], np.r_[boundaries, len(parts)], strict=True):
        out.append(np.tile(codes_by_part[int(parts[a])], b - a))
    return np.concatenate(out)


def _nan_events(st: _State, m: Matched, vals: Any, steps: Any, ranks: Any, segs: Any,
                walls: Any, starts: Any, data: bytes, first_line: int) -> None:
    """The ``nan_loss`` event of each rank and segment's first non-finite loss."""
    import numpy as np

    loss_cols = [j for j, t in enumerate(m.shape.tags) if "loss" in t]
    if not loss_cols:
        return
    bad = ~np.isfinite(vals[:, loss_cols]).all(axis=1)
    for j in np.flatnonzero(bad).tolist():
        rk = int(ranks[j])
        key = None if rk == NO_RANK else rk
        if (key, int(segs[j])) in st.nan_seen:
            continue
        start = int(starts[j])
        end = data.find(b"\n", start)
        text = clean(data[start:end if end >= 0 else len(data)])
        line = first_line + data.count(b"\n", 0, start)
        values = list(zip(m.shape.tags, vals[j].tolist(), strict=True))
        _nan_loss(st, values, key, int(segs[j]), int(steps[j]), float(walls[j]), line,
                  split_prefix(text).rest)


def _segments(raw: bytes) -> list[bytes]:
    """CR segments of a physical line that hold an event marker (or the line)."""
    if b"\r" not in raw:
        return [raw]
    segs = [s for s in raw.split(b"\r") if EVENT_RE.search(s)]
    return segs or [raw]


def _rank_of(prefix_rank: int | None, text: str, st: _State) -> int | None:
    if st.info.rank is not None:
        return st.info.rank
    if prefix_rank is not None:
        return prefix_rank
    return inline_rank(text)


def _events_of_line(data: bytes, raw: bytes, end: int, line: int, st: _State) -> int:
    """Add the events of one line; return the offset up to which lines were consumed."""
    consumed_to = -1
    for seg in _segments(raw):
        text = clean(seg)
        pre = split_prefix(text)
        rest = pre.rest
        rank = _rank_of(pre.rank, rest, st)
        wall, tod = parse_time(rest)
        base: dict[str, Any] = {"attempt": st.info.attempt}
        if tod is not None:
            base["time_of_day"] = tod
        if pre.host:
            base["host"] = pre.host
        if _wrapped(rest):
            rest = _join_wrapped(rest, data, end + 1)
        try:
            found = ev.line_events(rest)
        except ValueError:  # a number of thousands of digits (int() refuses it): that line
            st.bad_steps += 1  # costs its events, not the file
            found = []
        if "Traceback (most recent call last)" in rest:
            lines = _same_rank_lines(data, end + 1, pre.rank)
            details, _ = ev.parse_traceback(lines)
            msg = f"{details['exception']}: {details['exc_message']}".strip(": ")
            _add(st, rank, wall, EventKind.TRACEBACK, msg or rest, line,
                 {**base, **details}, rest)
            st.last_exception[rank] = (details["exception"], details["exc_message"][:200])
        else:
            bare = None if found else ev.bare_exception(rest)  # an OOM line is an oom
            if bare is not None and st.last_exception.pop(rank, None) != (
                    bare["exception"], bare["exc_message"][:200]):
                _add(st, rank, wall, EventKind.TRACEBACK, rest.strip(), line,
                     {**base, **bare}, rest)
        if "(most recent call first)" in rest or (
                rest.startswith("Thread ") and (" (idle)" in rest or " (active" in rest)):
            parse = stacks.parse_faulthandler if "(most recent" in rest else stacks.parse_pyspy
            got = parse(rest, _same_rank_lines(data, end + 1, pre.rank))
            if got is not None:
                _add(st, rank, wall, EventKind.STACK_DUMP, stacks.describe(got), line,
                     {**base, **got}, rest)
        if "ChildFailedError:" in rest:
            entries, n = ev.parse_child_failed(t for t, _ in _follow(data, end + 1))
            consumed_to = _offset_after(data, end + 1, n)
            for entry in entries:
                r = entry.get("rank")
                msg = f"rank {r} failed: exitcode {entry.get('exitcode')}"
                if entry.get("signal"):
                    msg += f" ({entry['signal']})"
                _add(st, r, wall, EventKind.CHILD_FAILED, msg, line, {**base, **entry}, rest)
        if "caused the desync are" in rest and not any(
                k == EventKind.DESYNC_REPORT for k, _ in found):
            cont = ev.desync_continuation(t for t, _ in _follow(data, end + 1))
            if cont is not None:
                found.append((EventKind.DESYNC_REPORT, cont))
        if rank is None and rest[:1] in (" ", "\t"):
            rank = _header_rank(data, data.rfind(b"\n", 0, end) + 1)
        for kind, details in found:
            r = rank
            if r is None and "local_rank" in details:  # torchelastic: single-node rank
                r = details["local_rank"]
            if r is None and "task" in details:  # srun: task id = rank
                r = details["task"]
            _add(st, r, wall, kind, rest.strip(), line, {**base, **details}, rest)
    return consumed_to


#: (marker, the text that ends the message) for messages a terminal may have wrapped.
_WRAP_ENDS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("Tried to allocate", ("in total by PyTorch", "but unallocated", "cached)")),
    ("Watchdog caught collective operation timeout", ("milliseconds",)),
    ("CollectiveFingerPrint(", ("differ", "))")),
)
_NEW_RECORD = re.compile(r"^(?:\[|\s|\d+:|Traceback|File |[IWEF]\d{3,4} |\d{4}-\d\d-\d\d)")
#: At most this many following lines are joined to a wrapped message.
MAX_WRAP_LINES = 4


def _wrapped(text: str) -> bool:
    """Whether a known message on this line looks cut by terminal wrapping."""
    for marker, ends in _WRAP_ENDS:
        if marker in text and not any(e in text for e in ends):
            return True
    return False


def _join_wrapped(text: str, data: bytes, pos: int) -> str:
    """Join the continuation lines of a hard-wrapped message (no separator added)."""
    for n, (nxt, _) in enumerate(_follow(data, pos)):
        if n >= MAX_WRAP_LINES or not nxt or _NEW_RECORD.match(nxt):
            break
        text += nxt
        if not _wrapped(text):
            break
    return text


def _header_rank(data: bytes, start: int) -> int | None:
    """The prefix rank of the line an indented continuation line belongs to."""
    pos = start
    for _ in range(40):
        if pos <= 0:
            return None
        prev = data.rfind(b"\n", 0, pos - 1) + 1
        text = clean(data[prev:pos - 1])
        if text[:1] not in (" ", "\t"):
            pre = split_prefix(text)
            return pre.rank if pre.rank is not None else inline_rank(pre.rest)
        pos = prev
    return None


def _offset_after(data: bytes, pos: int, n_lines: int) -> int:
    for _ in range(n_lines):
        nxt = data.find(b"\n", pos)
        if nxt < 0:
            return len(data)
        pos = nxt + 1
    return pos


def _same_rank_lines(data: bytes, pos: int, rank: int | None) -> Iterator[str]:
    """Lines after ``pos`` with their prefix removed, other ranks' lines skipped."""
    for text, _ in _follow(data, pos):
        pre = split_prefix(text)
        if rank is not None and pre.rank is not None and pre.rank != rank:
            continue
        yield pre.rest


def _add(st: _State, rank: int | None, wall: float, kind: EventKind, message: str, line: int,
         details: dict[str, Any], text: str) -> None:
    step = details.get("step") if isinstance(details.get("step"), int) else None
    if step is None:
        step = st.last_step.get(rank)
    if step is None:
        m = _MSG_STEP.search(text)
        if m:
            step = int(m.group(1))
    # a number too large for a step or a rank (a 23-digit "iteration=") is none: the event
    # keeps it in its details, the columns stay 64-bit
    if step is not None and not -MAX_STEP <= step <= MAX_STEP:
        step = None
    if rank is not None and not -MAX_STEP <= rank <= MAX_STEP:
        rank = None
    if kind is EventKind.OVERFLOW_SKIP:
        # DeepSpeed's FP16 optimizers report one skip on consecutive lines (``Grad overflow
        # on iteration: 4``, then ``... overflow! Skipping step. Attempted loss scale: ...``):
        # one event, its details merged, so that skips are counted once
        # (the first line may name no rank where the last says ``[Rank 0]``: log_dist)
        candidates = [c for c in (st.last_overflow.get(rank),
                                  st.last_overflow.get(None) if rank is not None else None)
                      if c is not None]
        last = max(candidates, key=lambda c: c[0]) if candidates else None
        if last is not None and 0 < line - last[0] <= OVERFLOW_MERGE_LINES \
                and "iteration" in last[1] and "attempted_scale" not in last[1] \
                and "attempted_scale" in details and "iteration" not in details:
            last[1].update(details)
            st.last_overflow[rank] = (line, last[1])
            return
        st.last_overflow[rank] = (line, details)
    _keep(st, (rank, wall, step, kind.value, message[:MAX_MESSAGE], st.rel, line, details))


def _keep(st: _State, row: EventRow) -> None:
    """Keep an event row, unless its rank already has :data:`FIRST_EVENTS` of its kind.

    Past that, only the last :data:`LAST_EVENTS` of the kind are kept (the rest
    are counted), so a log that repeats a warning on every line takes bounded
    memory while the first and the last occurrences stay as evidence.
    """
    key = (row[0], row[3])
    n = st.event_counts.get(key, 0) + 1
    st.event_counts[key] = n
    if n <= FIRST_EVENTS:
        st.out.events.append(row)
        return
    tail = st.event_tails.get(key)
    if tail is None:
        tail = st.event_tails[key] = deque(maxlen=LAST_EVENTS)
    tail.append(row)


def _close_events(st: _State) -> None:
    """Add the kept last rows of the capped kinds, in line order, and count the rest."""
    if not st.event_tails:
        return
    dropped: dict[str, int] = {}
    for key, tail in st.event_tails.items():
        kind = key[1]
        st.out.events.extend(tail)
        extra = st.event_counts[key] - FIRST_EVENTS - len(tail)
        if extra > 0:
            dropped[kind] = dropped.get(kind, 0) + extra
    st.out.events.sort(key=lambda row: row[6])
    if dropped:
        what = ", ".join(f"{n:,} {k}" for k, n in sorted(dropped.items(), key=lambda x: -x[1]))
        st.out.problems.append(Problem(
            st.rel, f"events repeated past {FIRST_EVENTS} per rank and kind: {what} not kept",
            used=f"the first {FIRST_EVENTS} and the last {LAST_EVENTS} of each",
            kind="events_capped", count=sum(dropped.values())))


def _context(st: _State, rank: int | None, line: int) -> LineContext:
    """The adapters' memory for ``rank`` in this file (made on first use), at ``line``."""
    ctx = st.contexts.get(rank)
    if ctx is None:
        ctx = st.contexts[rank] = LineContext()
    ctx.line = line
    return ctx


def _metrics_of_line(data: bytes, raw: bytes, end: int, line: int, st: _State) -> None:
    text = clean(raw)
    if "logging_steps" in text and st.logging_steps is None:
        st.logging_steps = logging_steps(text)
    pre = split_prefix(text)
    rank = _rank_of(pre.rank, pre.rest, st)
    ctx = _context(st, rank, line)
    try:
        got = parse_metrics(pre.rest, ctx)
        if got is None and pre.rank is not None and LEAD_COUNT.match(text):
            # "48: [D loss: 7.97, acc: 0.50]": not srun's rank label when the rest has no
            # step of its own; the number counts the iterations (a training loop's print)
            rank = st.info.rank
            got = parse_metrics(text, _context(st, rank, line))
    except ValueError:  # a step of thousands of digits (int() refuses it): the line only
        st.bad_steps += 1
        return
    if got is None or not got.values:
        return
    wall, _ = parse_time(pre.rest)
    if _add_metric_line(st, got, rank, wall, line, pre.rest, data, end) and st.shaping:
        learn(st.shapes, raw, got, rank, st.info.rank, wall)


def _add_metric_line(st: _State, got: MetricLine, rank: int | None, wall: float, line: int,
                     text: str, data: bytes = b"", end: int = 0) -> bool:
    """Add the points of one parsed metric line; whether they were added."""
    if got.kind in ("hf", "hf_eval"):
        step = bar_step_after(data[end:end + BAR_LOOKAHEAD])
        if step is None:
            n = st.hf_ordinal.get(rank, 0) + (1 if got.kind == "hf" else 0)
            st.hf_ordinal[rank] = n
            st.pending_hf.add_line(n, got.values, wall, rank, st.info.attempt)
            st.pending_lines += 1
            _nan_loss(st, got.values, rank, st.info.attempt, None, wall, line, text)
            return False
        st.bar_steps += 1
    else:
        step = got.step
    if step is None and got.kind == "rate":  # a pace line with no rank prefix after a
        step = st.last_train_step  # step line with one ("[Rank 0] step=20", "0/20, ...")
    if step is None:
        return False
    if not -MAX_STEP <= step <= MAX_STEP:  # a 23-digit "step" is no step (array('q') overflows)
        st.bad_steps += 1
        return False
    key = (step, tuple(got.values))
    if st.last_points.get(rank) == key and not any(v != v for _, v in got.values):
        return False  # the same line again (two log handlers): one point, not two
    st.last_points[rank] = key
    st.last_step[rank] = step
    if not got.kind.endswith("_eval") and got.kind != "rate":
        ctx = st.contexts.get(rank)  # what the evaluation and pace lines after it are at
        if ctx is not None:
            ctx.train_step = step
        st.last_train_step = step
    seg = st.segment_for(rank, step, not got.kind.endswith("_eval"), counter_of(got.kind))
    st.out.scalars.add_line(step, got.values, wall, rank, seg)
    _nan_loss(st, got.values, rank, seg, step, wall, line, text)
    return True


def _flush_contexts(st: _State) -> None:
    """Add what the adapters still hold at the end of the file (Keras's last epoch)."""
    for rank, ctx in st.contexts.items():
        got = flush_keras(ctx)
        if got is not None:
            _add_metric_line(st, got, rank, math.nan, 0, "")


def _nan_loss(st: _State, values: list[tuple[str, float]], rank: int | None, seg: int,
              step: int | None, wall: float, line: int, text: str) -> None:
    """A ``nan_loss`` event for the first non-finite loss of a rank in a segment."""
    if (rank, seg) in st.nan_seen:
        return
    bad = [(t, v) for t, v in values if "loss" in t.lower() and not math.isfinite(v)]
    if not bad:
        return
    st.nan_seen.add((rank, seg))
    tag, value = bad[0]
    _keep(st, (rank, wall, step, EventKind.NAN_LOSS.value, text.strip()[:MAX_MESSAGE], st.rel,
               line, {"attempt": st.info.attempt, "segment": seg, "tag": tag,
                      "value": str(value)}))


def _resolve_hf(st: _State) -> None:
    """Give HF dict lines without a bar a step: ordinal × logging_steps, or the ordinal."""
    if not st.pending_lines:
        return
    st.out.scalars.extend(st.pending_hf, step_factor=st.logging_steps or 1)
    how = (f"numbered by order × logging_steps={st.logging_steps}" if st.logging_steps
           else "numbered 1, 2, 3... in order (logging_steps unknown)")
    st.out.problems.append(Problem(
        st.rel, f"{st.pending_lines} HF Trainer log lines carry no step; {how}",
        used="their values, with guessed steps", kind="step_guessed",
        count=st.pending_lines))


def _read_error_json(path: Path, rel: str, info: PathInfo, out: FileResult) -> None:
    """A torchelastic ``error.json``: one ``error_file`` event."""
    try:
        if path.stat().st_size > _ERROR_JSON_MAX:
            out.problems.append(Problem(rel, "error.json larger than 16 MiB; not read",
                                        kind="too_large"))
            return
        doc = json.loads(path.read_bytes().decode("utf-8", errors="replace"))
    except (OSError, ValueError, RecursionError) as exc:
        out.problems.append(Problem(rel, f"not a readable error.json: {exc}",
                                    kind="invalid_json"))
        return
    msg = doc.get("message") if isinstance(doc, dict) else None
    if isinstance(msg, str):
        msg = {"message": msg}
    if not isinstance(msg, dict):
        out.problems.append(Problem(rel, "error.json without a message object",
                                    kind="invalid_json"))
        return
    text = str(msg.get("message", ""))
    extra = msg.get("extraInfo") if isinstance(msg.get("extraInfo"), dict) else {}
    details: dict[str, Any] = {"attempt": info.attempt}
    last = [ln for ln in text.strip().splitlines() if ln.strip()]
    head = last[-1] if last else ""
    m = re.match(r"^([A-Za-z_][\w.]*)(?::\s?(.*))?$", head)
    if m:
        details["exception"], details["exc_message"] = m.group(1), (m.group(2) or "")[:2000]
    stack = extra.get("py_callstack")
    if isinstance(stack, str):
        tb, _ = ev.parse_traceback(stack.splitlines()[1:])
        details["frames"] = tb["frames"]
        if "user_frame" in tb:
            details["user_frame"] = tb["user_frame"]
    wall = math.nan
    ts = extra.get("timestamp")
    try:
        wall = float(ts) if ts is not None else math.nan
    except (TypeError, ValueError):
        pass
    for key in ("errorCode", "error_code"):
        if key in doc:
            details["error_code"] = doc[key]
    oom = ev.oom_details(text)
    out.events.append((info.rank, wall, None, EventKind.ERROR_FILE.value,
                       (head or text)[:MAX_MESSAGE], rel, 1, details))
    if oom is not None:
        out.events.append((info.rank, wall, None, EventKind.OOM.value, head[:MAX_MESSAGE], rel,
                           1, {**details, **oom}))
