"""Scan one log file: markers by literal search, then the detailed parsers.

:func:`scan_file` returns plain lists (picklable, so files can be scanned in worker
processes): event rows, scalar rows and problems.
"""

from __future__ import annotations

import gzip
import json
import math
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
from autopsy.readers.ranklogs.adapters import LineContext, flush_keras
from autopsy.readers.ranklogs.budget import max_points, thin_columns
from autopsy.readers.ranklogs.fastpath import Found, block_hits, marker_offsets
from autopsy.readers.ranklogs.layout import PathInfo, inline_rank, path_info, split_prefix
from autopsy.readers.ranklogs.lines import (
    clean,
    iter_blocks,
    looks_like_text,
    open_binary,
    read_head,
)
from autopsy.readers.ranklogs.markers import BLOCK_MARKERS, EVENT_RE, METRIC_RE, hit_lines
from autopsy.readers.ranklogs.metrics import (
    MetricLine,
    bar_step_after,
    logging_steps,
    parse_metrics,
)
from autopsy.readers.ranklogs.timestamps import parse_time

#: Bytes after an HF dict line searched for the tqdm bar that gives its step.
BAR_LOOKAHEAD = 4096
#: Longest message kept on an event row.
MAX_MESSAGE = 500
#: Events of one kind kept per rank and file from the start; then only the last few.
FIRST_EVENTS = 32
#: Events of one kind kept per rank and file from the end, past the first ones.
LAST_EVENTS = 8
_MSG_STEP = re.compile(r"\b(?:step|iteration|iter)[ :=#]+(\d+)", re.IGNORECASE)
_ERROR_JSON_MAX = 16 << 20

EventRow = tuple[int | None, float, int | None, str, str, str, int, dict[str, Any]]
#: Rank stored for "no rank" in the compact scalar columns.
NO_RANK = -1


_COLUMN_TYPES = {"step": "q", "tag": "i", "value": "d", "wall_time": "d", "rank": "q",
                 "segment": "q"}


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
        if len(self.step) > self.cap:
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
        if len(self.step) > self.cap:
            self._thin()

    def extend(self, other: ScalarColumns, step_factor: int = 1) -> None:
        """Append every point of ``other`` (its steps multiplied by ``step_factor``)."""
        if not len(other):
            return
        import numpy as np

        cols = other.arrays()
        remap = np.array([self._code(t) for t in other.tags], dtype=np.int32)
        cols["tag"] = remap[cols["tag"]]
        cols["step"] = cols["step"] * step_factor
        mine = self.arrays()
        self._replace({k: np.concatenate((mine[k], cols[k])) for k in mine})
        self.raw += other.raw
        if len(self.step) > self.cap:
            self._thin()
        self.settle()

    def _code(self, tag: str) -> int:
        code = self._codes.get(tag)
        if code is None:
            code = self._codes[tag] = len(self.tags)
            self.tags.append(tag)
        return code

    def arrays(self, start: int = 0) -> dict[str, Any]:
        """The columns from point ``start`` on as numpy arrays (copies)."""
        import numpy as np

        return {name: np.frombuffer(getattr(self, name), dtype=code)[start:].copy()
                for name, code in _COLUMN_TYPES.items()}

    def _replace(self, cols: dict[str, Any]) -> None:
        for name, code in _COLUMN_TYPES.items():
            col = array(code)
            col.frombytes(cols[name].astype(col.typecode, copy=False).tobytes())
            setattr(self, name, col)

    def settle(self) -> None:
        """Thin the points added since the last thinning to the current level (call at
        the end of a file, so its last stretch is not denser than the rest)."""
        if not self.level or self._stored >= len(self.step):
            return
        import numpy as np

        head = self.arrays()
        tail = thin_columns({k: v[self._stored:] for k, v in head.items()}, self.level)
        self._replace({k: np.concatenate((v[:self._stored], tail[k])) for k, v in head.items()})
        self._stored = len(self.step)

    def _thin(self) -> None:
        """Bring the points added since the last thinning to the current level, then
        thin everything one more level while more than 3/4 of ``cap`` are held."""

        self.settle()
        head = self.arrays()
        while len(head["value"]) > self.cap * 3 // 4:
            thinner = thin_columns(head)
            self.level += 1
            if len(thinner["value"]) == len(head["value"]):
                break
            head = thinner
        self._replace(head)
        self._stored = len(self.step)
        if self._stored > self.cap * 3 // 4:  # cannot thin (hundreds of thousands of
            self.cap = 2 * self._stored       # series): grow rather than thin on every add

    def __len__(self) -> int:
        return len(self.step)

    def rows(self) -> list[tuple[int, str, float, float, int | None, int]]:
        """The points as tuples (for tests and debugging)."""
        return [(self.step[i], self.tags[self.tag[i]], self.value[i], self.wall_time[i],
                 None if self.rank[i] == NO_RANK else self.rank[i], self.segment[i])
                for i in range(len(self))]


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
    logging_steps: int | None = None
    hf_ordinal: dict[int | None, int] = field(default_factory=dict)
    pending_hf: ScalarColumns = field(default_factory=ScalarColumns)
    pending_lines: int = 0
    event_counts: dict[tuple[int | None, str], int] = field(default_factory=dict)
    event_tails: dict[tuple[int | None, str], deque[EventRow]] = field(default_factory=dict)
    bar_steps: int = 0
    restarts: int = 0
    nan_seen: set[tuple[int | None, int]] = field(default_factory=set)
    top_step: dict[int | None, int] = field(default_factory=dict)
    contexts: dict[int | None, LineContext] = field(default_factory=dict)
    last_points: dict[int | None, tuple[int, tuple[tuple[str, float], ...]]] = field(
        default_factory=dict)
    #: (exception, message) of each rank's last traceback: its exception line, met again
    #: when the scan reaches it, is not a second (headerless) exception
    last_exception: dict[int | None, tuple[str, str]] = field(default_factory=dict)

    def segment_for(self, rank: int | None, step: int, train: bool) -> int:
        """The segment of a point: the path's attempt plus restarts seen in this file.

        A training step lower than the rank's last training step means the run
        started again (a resume from a checkpoint) inside the same log.
        """
        if train:
            last = self.top_step.get(rank)
            if last is not None and step < last:
                self.restarts += 1
            self.top_step[rank] = step
        return self.info.attempt + self.restarts


def scan_file(path: Path, rel: str) -> FileResult:
    """Scan one log (or torchelastic ``error.json``); never raises on bad content."""
    out = FileResult(source=rel)
    info = path_info(rel)
    if path.name.endswith(".json"):
        _read_error_json(path, rel, info, out)
        return out
    head = read_head(path)
    if head and not looks_like_text(head):
        out.problems.append(Problem(rel, "does not look like text; not read", kind="not_text"))
        return out
    found = marker_offsets(path)
    if found is not None:
        fast = _scan_text(path, rel, info, found)
        if fast is not None:
            return fast
    done = _scan_text(path, rel, info, None)
    return done if done is not None else out


def _scan_text(path: Path, rel: str, info: PathInfo, found: Found | None) -> FileResult | None:
    """Scan a text log; with ``found`` (the fast path's hits), None if they fail a block.

    When the tool gave line numbers the blocks' lines are not counted, so a block
    the hits do not fit (an over-long line, a file changed meanwhile) cannot be
    searched here: the caller starts again without them.
    """
    out = FileResult(source=rel)
    state = _State(rel, info, out)
    truncated = 0
    size = _progress_size(path)
    try:
        with open_binary(path) as stream:
            counted = found is None or found.lines is None
            for block in iter_blocks(stream, BLOCK_MARKERS, count_lines=counted):
                truncated += block.truncated_lines
                hits = None
                if found is not None:
                    hits = block_hits(block.data, block.offset, found)
                    if hits is None:
                        return None
                _scan_block(block.data, block.first_line, state, hits)
                if size:  # the bytes read so far (a block after a cut long line has no offset)
                    report(f"reading {rel}", min(stream.tell(), size), size)
    except (OSError, EOFError, zlib.error, gzip.BadGzipFile) as exc:
        out.problems.append(Problem(rel, f"read stopped early: {type(exc).__name__}: {exc}",
                                    used="the lines before it", kind="truncated"))
    if truncated:
        out.problems.append(Problem(rel, "lines longer than 64 KiB: only their last 64 KiB kept",
                                    used="the tail of each", kind="long_line", count=truncated))
    _flush_contexts(state)
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
                hits: tuple[list[int], list[int] | None] | None = None) -> None:
    """Process every marker line of one block.

    ``hits``: the starts of those lines (and maybe their line numbers) when the
    fast path found them; else they are searched here.
    """
    line = first_line
    cur = 0
    skip_until = -1
    event_search = EVENT_RE.search
    metric_search = METRIC_RE.search
    starts, numbers = (hit_lines(data), None) if hits is None else hits
    for i, start in enumerate(starts):
        if start < skip_until:
            continue
        if numbers is None:
            line += data.count(b"\n", cur, start)
            cur = start
        else:
            line = numbers[i]
        end = data.find(b"\n", start)
        if end < 0:
            end = len(data)
        raw = data[start:end]
        if event_search(raw):
            skip_until = max(skip_until, _events_of_line(data, raw, end, line, st))
        if metric_search(raw):  # an event-only line is not cleaned and split twice
            _metrics_of_line(data, raw, end, line, st)


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
        found = ev.line_events(rest)
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


def _metrics_of_line(data: bytes, raw: bytes, end: int, line: int, st: _State) -> None:
    text = clean(raw)
    if "logging_steps" in text and st.logging_steps is None:
        st.logging_steps = logging_steps(text)
    pre = split_prefix(text)
    rank = _rank_of(pre.rank, pre.rest, st)
    ctx = st.contexts.get(rank)
    if ctx is None:
        ctx = st.contexts[rank] = LineContext()
    ctx.line = line
    got = parse_metrics(pre.rest, ctx)
    if got is None or not got.values:
        return
    wall, _ = parse_time(pre.rest)
    _add_metric_line(st, got, rank, wall, line, pre.rest, data, end)


def _add_metric_line(st: _State, got: MetricLine, rank: int | None, wall: float, line: int,
                     text: str, data: bytes = b"", end: int = 0) -> None:
    """Add the points of one parsed metric line."""
    if got.kind in ("hf", "hf_eval"):
        step = bar_step_after(data[end:end + BAR_LOOKAHEAD])
        if step is None:
            n = st.hf_ordinal.get(rank, 0) + (1 if got.kind == "hf" else 0)
            st.hf_ordinal[rank] = n
            st.pending_hf.add_line(n, got.values, wall, rank, st.info.attempt)
            st.pending_lines += 1
            _nan_loss(st, got.values, rank, st.info.attempt, None, wall, line, text)
            return
        st.bar_steps += 1
    else:
        step = got.step
    if step is None:
        return
    key = (step, tuple(got.values))
    if st.last_points.get(rank) == key and not any(v != v for _, v in got.values):
        return  # the same line again (two log handlers): one point, not two
    st.last_points[rank] = key
    st.last_step[rank] = step
    seg = st.segment_for(rank, step, not got.kind.endswith("_eval"))
    st.out.scalars.add_line(step, got.values, wall, rank, seg)
    _nan_loss(st, got.values, rank, seg, step, wall, line, text)


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
    bad = [(t, v) for t, v in values if "loss" in t and not math.isfinite(v)]
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
