"""Every scalar of a TensorBoard event file, as numpy arrays in file order.

:func:`read_event_scalars` frames the file with :class:`~.tfrecord.TFRecordFile`
and decodes each length group of records by *layout templates*: the first
undecoded record of a group is decoded in Python (:func:`~.event_decode.decode_event`),
which gives the byte spans of its wall time, step and values; every other record
of the group that has the same bytes outside those spans (only the columns that
vary in the group need checking) and well-formed step varints has the same
layout, so its numbers are read with numpy at the same offsets. Records that are
not plain scalar events (the file header, text, hparams, histograms, images...)
are decoded one by one in Python; histograms, images, audio and graphs are
skipped.

simple_value scalars and scalar tensors (float16/32/64, bfloat16, ints, bool; in
``tensor_content`` or the typed value fields) are all returned as float64.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from autopsy.formats.event_decode import (
    FIXED_ENCODINGS,
    DecodedEvent,
    Span,
    decode_event,
    describe_oversized,
)
from autopsy.formats.protowire import WireError
from autopsy.formats.tfrecord import FramingReport, RecordGroup, TFRecordFile

#: Layout templates tried per length group before the rest is decoded one by one.
MAX_TEMPLATES = 32
#: Smallest bytes per scalar in an event file (bounds the output size).
_MIN_BYTES_PER_SCALAR = 7
#: Most scalars reserved up front (virtual memory only); past it the arrays grow.
_MAX_RESERVE = 1 << 25


@dataclass
class EventScalars:
    """The scalars of one event file (arrays in file order) and what else it said.

    Attributes:
        step, value, wall_time: one entry per scalar.
        tag_code: index into ``tags`` per scalar.
        tags: the raw tags, in order of first appearance.
        file_version: from the header record (``"brain.Event:2"``), or None.
        texts: ``(tag, text)`` of text summaries.
        hparams: ``(name, value)`` from hparams session_start_info summaries.
        plugins: tag -> plugin name, where summary metadata named one.
        framing: what was wrong with the TFRecord framing.
        events: Event records decoded; bad_events: records that were not Events.
        skipped_values: non-scalar summary values skipped (histograms, images...).
        oversized: ``(offset, length, what)`` of records too long to read
            (:data:`~.tfrecord.MAX_RECORD`) that could have held something autopsy keeps;
            oversized_count counts them all (this list holds the first few).
    """

    step: np.ndarray
    value: np.ndarray
    wall_time: np.ndarray
    tag_code: np.ndarray
    tags: list[str]
    file_version: str | None = None
    texts: list[tuple[str, str]] = field(default_factory=list)
    hparams: list[tuple[str, Any]] = field(default_factory=list)
    plugins: dict[str, str] = field(default_factory=dict)
    framing: FramingReport = field(default_factory=FramingReport)
    events: int = 0
    bad_events: int = 0
    skipped_values: int = 0
    oversized: list[tuple[int, int, str]] = field(default_factory=list)
    oversized_count: int = 0

    def __len__(self) -> int:
        return len(self.step)


def _varint_column(rows: np.ndarray, sel: np.ndarray, span: Span) -> np.ndarray:
    """Decode the varint at ``span`` of each selected row as uint64."""
    out = np.zeros(len(sel), dtype=np.uint64)
    for j, col in enumerate(range(span.start, span.stop)):
        out |= (rows[sel, col] & np.uint8(0x7F)).astype(np.uint64) << np.uint64(7 * j)
    return out


def span_column(rows: np.ndarray, sel: np.ndarray, span: Span) -> np.ndarray:
    """Decode the number at ``span`` of each selected row of ``rows`` as float64."""
    enc = span.enc
    if enc in FIXED_ENCODINGS:
        raw = np.ascontiguousarray(rows[sel, span.start : span.stop])
        col = raw.view(FIXED_ENCODINGS[enc])[:, 0]
        if enc == "bool":
            return (col != 0).astype(np.float64)
        if enc == "bf16":
            return (col.astype(np.uint32) << np.uint32(16)).view(np.float32).astype(np.float64)
        return col.astype(np.float64)
    raw64 = _varint_column(rows, sel, span)
    if enc == "vint":
        return raw64.view(np.int64).astype(np.float64)
    if enc == "vuint":
        return raw64.astype(np.float64)
    if enc == "vbool":
        return (raw64 != 0).astype(np.float64)
    bits = (raw64 & np.uint64(0xFFFF)).astype(np.uint16)
    if enc == "vhalf":
        return bits.view(np.float16).astype(np.float64)
    if enc == "vbf16":
        return (bits.astype(np.uint32) << np.uint32(16)).view(np.float32).astype(np.float64)
    raise ValueError(f"unknown encoding {enc}")


class _Sink:
    """Collects decoded scalars of one window, then writes them out in file order."""

    def __init__(self, out: _Output, count: int) -> None:
        self.out = out
        self.count = count
        self.chunks: list[tuple[np.ndarray, int, np.ndarray, np.ndarray, np.ndarray, int]] = []
        self.py: list[tuple[int, int, int, float, float, int]] = []

    def add(self, rec: np.ndarray, j: int, step: np.ndarray, wall: np.ndarray,
            value: np.ndarray, code: int) -> None:
        self.chunks.append((rec, j, step, wall, value, code))

    def flush(self) -> None:
        chunks = self.chunks
        if self.py:
            cols = list(zip(*self.py, strict=True))
            rec = np.array(cols[0], dtype=np.int64)
            jj = np.array(cols[1], dtype=np.int64)
            step = np.array(cols[2], dtype=np.int64)
            wall = np.array(cols[3], dtype=np.float64)
            value = np.array(cols[4], dtype=np.float64)
            code = np.array(cols[5], dtype=np.int32)
            chunks = [*chunks, (rec, jj, step, wall, value, code)]  # type: ignore[list-item]
        if not chunks:
            return
        counts = np.zeros(self.count, dtype=np.int64)
        for rec, j, *_ in chunks:
            if np.isscalar(j):
                counts[rec] = np.maximum(counts[rec], j + 1)
            else:
                np.maximum.at(counts, rec, j + 1)
        base = np.cumsum(counts) - counts + self.out.n
        total = int(counts.sum())
        self.out.reserve(total)
        o = self.out
        for rec, j, step, wall, value, code in chunks:
            pos = base[rec] + j
            o.step[pos] = step
            o.wall[pos] = wall
            o.value[pos] = value
            o.code[pos] = code
        o.n += total


class _Output:
    """Growable output arrays (over-allocated once; untouched pages cost nothing)."""

    def __init__(self, capacity: int) -> None:
        self.n = 0
        self._alloc(max(16, capacity))

    def _alloc(self, cap: int) -> None:
        old = getattr(self, "step", None)
        new = (np.empty(cap, np.int64), np.empty(cap, np.float64), np.empty(cap, np.float64),
               np.empty(cap, np.int32))
        if old is not None:
            for dst, src in zip(new, (self.step, self.wall, self.value, self.code), strict=True):
                dst[: self.n] = src[: self.n]
        self.step, self.wall, self.value, self.code = new
        self.cap = cap

    def reserve(self, extra: int) -> None:
        if self.n + extra > self.cap:
            self._alloc(max(2 * self.cap, self.n + extra))


class _Decoder:
    """Per-file decoding state: tag codes, texts, hparams, counters."""

    def __init__(self, out: _Output) -> None:
        self.out = out
        self.tags: dict[str, int] = {}
        self.result = EventScalars(
            np.zeros(0, np.int64), np.zeros(0), np.zeros(0), np.zeros(0, np.int32), []
        )

    def code(self, tag: str) -> int:
        c = self.tags.get(tag)
        if c is None:
            c = self.tags[tag] = len(self.tags)
        return c

    def note(self, ev: DecodedEvent) -> None:
        r = self.result
        r.events += 1
        if ev.file_version is not None and r.file_version is None:
            r.file_version = ev.file_version
        r.texts.extend(ev.texts)
        r.hparams.extend(ev.hparams)
        r.plugins.update(ev.plugins)
        r.skipped_values += ev.skipped

    def one(self, buf: bytes | memoryview, rec: int, sink: _Sink) -> None:
        """Decode one record in Python."""
        try:
            ev = decode_event(buf)
        except (WireError, ValueError, IndexError, OverflowError):
            self.result.bad_events += 1
            return
        self.note(ev)
        wall = ev.wall_time
        for j, sc in enumerate(ev.scalars):
            sink.py.append((rec, j, ev.step, wall, sc.value, self.code(sc.tag)))

    def group(self, g: RecordGroup, tf: TFRecordFile, sink: _Sink) -> None:
        """Decode a group of same-length records (templates, then one by one)."""
        if g.rows is None:
            for k, s in enumerate(g.starts.tolist()):
                self.one(memoryview(tf.buf[s : s + g.length]), int(g.index[k]), sink)
            return
        rows = g.rows
        varying = set(g.varying.tolist()) if g.varying is not None else set()
        remaining = np.arange(len(rows))
        templates = 0
        while len(remaining):
            t = int(remaining[0])
            if templates >= MAX_TEMPLATES:
                for r in remaining.tolist():
                    self.one(rows[r].tobytes(), int(g.index[r]), sink)
                return
            try:
                ev = decode_event(rows[t].tobytes())
            except (WireError, ValueError, IndexError, OverflowError):
                self.result.bad_events += 1
                remaining = remaining[1:]
                continue
            if not ev.templatable:
                self.note(ev)
                for j, sc in enumerate(ev.scalars):
                    sink.py.append((int(g.index[t]), j, ev.step, ev.wall_time, sc.value,
                                    self.code(sc.tag)))
                remaining = remaining[1:]
                continue
            templates += 1
            matched, remaining = self._match(rows, remaining, t, ev, varying)
            self._emit(rows, matched, g.index[matched], ev, sink)
            self.result.events += len(matched)

    @staticmethod
    def _match(rows: np.ndarray, remaining: np.ndarray, t: int, ev: DecodedEvent,
               varying: set[int]) -> tuple[np.ndarray, np.ndarray]:
        """Split ``remaining`` into the rows that share template ``t``'s layout and the rest."""
        spans = [s for s in (ev.wall_span, ev.step_span) if s is not None]
        spans += [sc.span for sc in ev.scalars]
        in_span: set[int] = set()
        for s in spans:
            in_span.update(range(s.start, s.stop))
        key = sorted(varying - in_span)
        ok = np.ones(len(remaining), dtype=bool)
        if key:
            sub = rows[np.ix_(remaining, key)] if len(key) > 1 else rows[remaining, key[0]][:, None]
            ok &= (sub == rows[t, key]).all(axis=1)
        for s in spans:
            if s.enc.startswith("v"):
                for col in range(s.start, s.stop - 1):
                    if col in varying:
                        ok &= rows[remaining, col] >= 0x80
                if s.stop - 1 in varying:
                    ok &= rows[remaining, s.stop - 1] < 0x80
        return remaining[ok], remaining[~ok]

    def _emit(self, rows: np.ndarray, sel: np.ndarray, rec: np.ndarray, ev: DecodedEvent,
              sink: _Sink) -> None:
        n = len(sel)
        if ev.wall_span is not None:
            wall = span_column(rows, sel, ev.wall_span)
        else:
            wall = np.full(n, math.nan)
        if ev.step_span is not None:
            step = _varint_column(rows, sel, ev.step_span).view(np.int64)
        else:
            step = np.zeros(n, dtype=np.int64)
        for j, sc in enumerate(ev.scalars):
            sink.add(rec, j, step, wall, span_column(rows, sel, sc.span), self.code(sc.tag))


def read_event_scalars(path: Path | str, window: int | None = None) -> EventScalars:
    """Read every scalar of the event file at ``path`` (see the module docstring).

    Raises ``OSError`` if the file cannot be opened or mapped; bad content never
    raises: it is reported in ``framing``, ``bad_events`` and friends.
    """
    kwargs = {} if window is None else {"window": window}
    with TFRecordFile(path, **kwargs) as tf:
        out = _Output(min(tf.size // _MIN_BYTES_PER_SCALAR + 16, _MAX_RESERVE))
        dec = _Decoder(out)
        for win in tf.windows():
            sink = _Sink(out, win.count)
            for g in win.groups:
                dec.group(g, tf, sink)
            sink.flush()
        res = dec.result
        res.framing = tf.report
    unlisted = tf.report.oversized_count - len(tf.report.oversized)
    for offset, length, head in tf.report.oversized:
        would_use, what = describe_oversized(head)
        if would_use:
            res.oversized.append((offset, length, what))
        else:
            res.skipped_values += 1
    res.oversized_count = len(res.oversized) + unlisted
    n = out.n
    res.step, res.value = out.step[:n], out.value[:n]
    res.wall_time, res.tag_code = out.wall[:n], out.code[:n]
    res.tags = list(dec.tags)
    return res
