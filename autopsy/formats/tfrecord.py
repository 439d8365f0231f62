"""TFRecord framing over a read-only mmap, found and checked with numpy.

A TFRecord file is a sequence of frames::

    uint64 length (LE) | uint32 masked CRC32C(length bytes) | data | uint32 masked CRC32C(data)

:class:`TFRecordFile` walks a file window by window and yields, per window, the
records whose length and data CRCs hold, grouped by data length (with the bytes of
records up to :data:`~autopsy.formats.crc32c.ROWS_MAX_LEN` copied out as one
``n x length`` array per group, ready for vectorised decoding).

How frames are found without a Python loop per record: every offset ``p`` where
the high five length bytes are zero (length < 16 MiB) and byte ``p + 12`` is
``0x09`` (the Event ``wall_time`` field tag) is a candidate; candidate length
CRCs are checked together; consecutive candidates whose ends meet form runs that
are taken whole. Wherever the chain breaks (a long record, a record not starting
with ``0x09``, corruption) one frame is read the slow way, and after a bad length
CRC the walk resynchronises at the next offset whose length CRC holds. Nothing is
ever written; pages already read are dropped from the process (``MADV_DONTNEED``)
so memory stays flat on large files.

A record longer than ``max_record`` (:data:`MAX_RECORD` by default) is stepped over
without being read: no data CRC, no copy, its pages never touched. Its offset, length
and first :data:`PEEK` bytes go into :attr:`FramingReport.oversized` so the caller can
say what it was.
"""

from __future__ import annotations

import mmap
import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from numpy.lib.stride_tricks import as_strided

from autopsy.formats.crc32c import (
    _POS,
    ROWS_MAX_LEN,
    crc32c,
    crc32c_long,
    crc32c_rows_varying,
    mask_array,
    masked_crc32c,
)

HEADER = 12
FOOTER = 4
#: Bytes of record starts handled per window.
WINDOW = 4 << 20
#: Bytes scanned per step when resynchronising after a bad length CRC.
RESYNC_BLOCK = 1 << 20
#: Batch size (bytes) for CRCs of long records.
LONG_BATCH = 32 << 20
_ZERO8_CRC = np.uint32(crc32c(bytes(8)))
#: Longest record read. What autopsy keeps from an event file comes in small records: a
#: scalar event is 30 to 200 bytes, an hparams or text summary a few hundred bytes to a
#: few hundred KB (a long config dumped as text). Real records past this are graphs,
#: images and run metadata, which autopsy does not use. 8 MiB leaves an order of magnitude
#: above the largest kept record seen, and caps what one record can cost (decoding holds
#: about three copies of it) at a few tens of MB.
MAX_RECORD = 8 << 20
#: Bytes of an oversized record's start kept, enough to name its field and tag.
PEEK = 4096
#: Oversized records kept one by one in the report (the rest are only counted).
MAX_OVERSIZED_LISTED = 20


@dataclass
class RecordGroup:
    """Good records of one data length inside one window.

    Attributes:
        length: data length of every record in the group.
        index: positions of the records in the window's file order.
        starts: offsets of the records' data in the file.
        rows: ``n x length`` copy of the data, or None for long records.
        varying: columns of ``rows`` that are not the same in every row (None if no rows).
    """

    length: int
    index: np.ndarray
    starts: np.ndarray
    rows: np.ndarray | None
    varying: np.ndarray | None


@dataclass
class RecordWindow:
    """The records that start in one window of the file, in file order."""

    count: int
    groups: list[RecordGroup]


@dataclass
class FramingReport:
    """What was wrong with the framing of a file (filled while iterating)."""

    records: int = 0
    bad_data_crc: int = 0
    bad_length_crc: int = 0
    skipped_bytes: int = 0
    truncated_at: int | None = None
    truncated_bytes: int = 0
    notes: list[str] = field(default_factory=list)
    oversized: list[tuple[int, int, bytes]] = field(default_factory=list)
    oversized_count: int = 0


class TFRecordFile:
    """A TFRecord file opened read-only over mmap; iterate :meth:`windows`.

    Records longer than ``max_record`` are stepped over (see the module docstring).
    Raises ``OSError`` if the file cannot be opened; an empty file has ``size == 0``.
    """

    def __init__(self, path: Path | str, window: int = WINDOW,
                 max_record: int | None = None) -> None:
        self.path = Path(path)
        self.window = int(window)
        self.max_record = MAX_RECORD if max_record is None else int(max_record)
        self.report = FramingReport()
        self._fd = os.open(self.path, os.O_RDONLY)
        self.size = os.fstat(self._fd).st_size
        self._mm: mmap.mmap | None = None
        if self.size:
            self._mm = mmap.mmap(self._fd, 0, access=mmap.ACCESS_READ)
            self.buf = np.frombuffer(self._mm, dtype=np.uint8)
            self._u32 = (
                np.ndarray((self.size - 3,), dtype="<u4", buffer=self._mm, strides=(1,))
                if self.size >= 4
                else np.zeros(0, dtype=np.uint32)
            )
        else:
            self.buf = np.zeros(0, dtype=np.uint8)
            self._u32 = np.zeros(0, dtype=np.uint32)
        self._released = 0

    # -- lifecycle ---------------------------------------------------------------------
    def close(self) -> None:
        """Unmap and close (views still held elsewhere keep the mapping alive)."""
        self.buf = np.zeros(0, dtype=np.uint8)
        self._u32 = np.zeros(0, dtype=np.uint32)
        if self._mm is not None:
            try:
                self._mm.close()
            except BufferError:  # a caller still holds a view; GC will unmap
                pass
            self._mm = None
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1

    def __enter__(self) -> TFRecordFile:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _release(self, upto: int) -> None:
        """Drop mapped pages below ``upto`` from this process (page cache untouched)."""
        if self._mm is None or not hasattr(mmap, "MADV_DONTNEED"):
            return
        end = (upto // mmap.PAGESIZE) * mmap.PAGESIZE
        if end > self._released:
            try:
                self._mm.madvise(mmap.MADV_DONTNEED, self._released, end - self._released)
            except (OSError, ValueError):  # pragma: no cover - advisory only
                return
            self._released = end

    # -- framing -------------------------------------------------------------------------
    def _candidates(self, lo: int, hi: int) -> tuple[np.ndarray, np.ndarray]:
        """Candidate record starts in ``[lo, hi)`` with a valid length CRC, and their lengths."""
        a, n = self.buf, self.size
        hi = min(hi, n - HEADER - 1)
        if hi <= lo:
            return np.zeros(0, np.int64), np.zeros(0, np.int64)
        c = np.flatnonzero(a[lo + HEADER : hi + HEADER] == 9).astype(np.int64)
        c += lo
        if not len(c):
            return c, c
        c = c[(a[c + 3] | a[c + 4] | a[c + 5] | a[c + 6] | a[c + 7]) == 0]
        q = _POS.upto(8)
        b0, b1, b2 = a[c], a[c + 1], a[c + 2]
        crc = _ZERO8_CRC ^ q[7][b0] ^ q[6][b1] ^ q[5][b2]
        ok = mask_array(crc) == self._u32[c + 8]
        c = c[ok]
        lengths = (
            b0[ok].astype(np.int64)
            | (b1[ok].astype(np.int64) << 8)
            | (b2[ok].astype(np.int64) << 16)
        )
        return c, lengths

    def _header(self, pos: int) -> int | None:
        """Length of the frame at ``pos`` if its length CRC holds, else None."""
        raw = self.buf[pos : pos + 8].tobytes()
        stored = int(self._u32[pos + 8])
        if masked_crc32c(raw) != stored:
            return None
        return int.from_bytes(raw, "little")

    def _resync(self, pos: int) -> int:
        """First offset after ``pos`` whose length CRC holds and whose length fits; else size."""
        a, n = self.buf, self.size
        q = _POS.upto(8)
        start = pos + 1
        while start + HEADER <= n:
            stop = min(start + RESYNC_BLOCK, n - HEADER + 1)
            off = np.arange(start, stop, dtype=np.int64)
            # lengths that fit in the file: the high bytes beyond the file size are zero
            high = max(1, (n.bit_length() + 7) // 8)
            keep = np.ones(len(off), dtype=bool)
            for k in range(high, 8):
                keep &= a[off + k] == 0
            off = off[keep]
            if len(off):
                crc = np.full(len(off), _ZERO8_CRC, dtype=np.uint32)
                for k in range(high):
                    crc ^= q[7 - k][a[off + k]]
                good = off[mask_array(crc) == self._u32[off + 8]]
                if len(good):
                    return int(good[0])
            start = stop
        return n

    def _frames(self, pos: int, limit: int) -> tuple[list[np.ndarray], list[np.ndarray], int]:
        """Frames starting in ``[pos, limit)``: (starts chunks, lengths chunks, next pos)."""
        rep, n = self.report, self.size
        c, lens = self._candidates(pos, limit)
        nxt = c + HEADER + lens + FOOTER
        breaks = np.flatnonzero(nxt[:-1] != c[1:]) if len(c) > 1 else np.zeros(0, np.int64)
        out_s: list[np.ndarray] = []
        out_l: list[np.ndarray] = []
        i = int(np.searchsorted(c, pos))
        while pos < limit and pos < n:
            if i < len(c) and c[i] == pos:
                b = int(np.searchsorted(breaks, i))
                j = int(breaks[b]) if b < len(breaks) else len(c) - 1
                if nxt[j] > n:  # last frame of the run is cut off: let the slow path say so
                    j -= 1
                if j >= i:
                    out_s.append(c[i : j + 1])
                    out_l.append(lens[i : j + 1])
                    pos = int(nxt[j])
                    i = int(np.searchsorted(c, pos))
                    continue
            # the slow way: one frame at pos
            if pos + HEADER > n:
                rep.truncated_at, rep.truncated_bytes = pos, n - pos
                return out_s, out_l, n
            length = self._header(pos)
            if length is None:
                rep.bad_length_crc += 1
                new = self._resync(pos)
                rep.skipped_bytes += new - pos
                pos = new
            elif pos + HEADER + length + FOOTER > n:
                rep.truncated_at, rep.truncated_bytes = pos, n - pos
                return out_s, out_l, n
            else:
                out_s.append(np.array([pos], dtype=np.int64))
                out_l.append(np.array([length], dtype=np.int64))
                pos += HEADER + length + FOOTER
            i = int(np.searchsorted(c, pos))
        return out_s, out_l, pos

    # -- data CRCs and grouping ---------------------------------------------------------
    def _drop_oversized(self, starts: np.ndarray,
                        lengths: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Note records longer than ``max_record`` in the report; return the others."""
        big = lengths > self.max_record
        if not big.any():
            return starts, lengths
        rep = self.report
        for start, length in zip(starts[big].tolist(), lengths[big].tolist(), strict=True):
            rep.oversized_count += 1
            if len(rep.oversized) < MAX_OVERSIZED_LISTED:
                head = self.buf[start + HEADER : start + HEADER + min(length, PEEK)].tobytes()
                rep.oversized.append((start, length, head))
        return starts[~big], lengths[~big]

    def _group(self, starts: np.ndarray, lengths: np.ndarray) -> list[RecordGroup]:
        """Check data CRCs; return the good records grouped by length."""
        data = starts + HEADER
        if len(lengths) and int(lengths.max()) < 65536:
            key = lengths.astype(np.uint16)
        else:
            key = lengths
        order = np.argsort(key, kind="stable")
        sorted_len = lengths[order]
        cuts = np.flatnonzero(np.diff(sorted_len)) + 1
        groups: list[RecordGroup] = []
        for part in np.split(order, cuts):
            if not len(part):
                continue
            length = int(lengths[part[0]])
            ds = data[part]
            stored = self._u32[ds + length]
            rows: np.ndarray | None = None
            varying: np.ndarray | None = None
            if length <= ROWS_MAX_LEN:
                view = as_strided(self.buf, shape=(self.size - length + 1, length), strides=(1, 1))
                rows = view[ds]
                crc, varying = crc32c_rows_varying(rows)
            else:
                crc = np.zeros(len(ds), dtype=np.uint32)
                per = max(1, LONG_BATCH // length)
                for k in range(0, len(ds), per):
                    sl = slice(k, k + per)
                    crc[sl] = crc32c_long(self.buf, ds[sl], np.full(len(ds[sl]), length))
            ok = mask_array(crc) == stored
            bad = len(ok) - int(ok.sum())
            if bad:
                self.report.bad_data_crc += bad
                part, ds = part[ok], ds[ok]
                if rows is not None:
                    rows = rows[ok]
            if len(part):
                groups.append(RecordGroup(length, part, ds, rows, varying))
        return groups

    def windows(self) -> Iterator[RecordWindow]:
        """Yield the file's good records window by window (see :class:`RecordWindow`)."""
        if self.size == 0:
            return
        pos = 0
        while pos < self.size:
            limit = pos + self.window
            s_chunks, l_chunks, new_pos = self._frames(pos, limit)
            if s_chunks:
                starts = np.concatenate(s_chunks)
                lengths = np.concatenate(l_chunks)
                self.report.records += len(starts)
                starts, lengths = self._drop_oversized(starts, lengths)
                if len(starts):
                    yield RecordWindow(len(starts), self._group(starts, lengths))
            self._release(new_pos)
            pos = new_pos
        self._release(self.size)


def frame(data: bytes) -> bytes:
    """Return ``data`` framed as one TFRecord (for writers and tests)."""
    head = len(data).to_bytes(8, "little")
    return (
        head
        + masked_crc32c(head).to_bytes(4, "little")
        + data
        + masked_crc32c(data).to_bytes(4, "little")
    )


def first_record(head: bytes) -> bytes | None:
    """Data of the first record in ``head`` (a file's first bytes) if it is whole and valid."""
    if len(head) < HEADER:
        return None
    raw = head[:8]
    if masked_crc32c(raw) != int.from_bytes(head[8:12], "little"):
        return None
    length = int.from_bytes(raw, "little")
    if len(head) < HEADER + length + FOOTER:
        return None
    data = head[HEADER : HEADER + length]
    stored = int.from_bytes(head[HEADER + length : HEADER + length + FOOTER], "little")
    return data if masked_crc32c(data) == stored else None


def looks_like_event_file(head: bytes) -> bool:
    """Whether a file's first bytes are a TFRecord frame holding an Event with a file_version.

    Checks the length CRC and the start of the first record (``wall_time`` then
    ``file_version = "brain.Event:..."``); needs about 40 bytes.
    """
    if len(head) < HEADER + 23:
        return False
    if masked_crc32c(head[:8]) != int.from_bytes(head[8:12], "little"):
        return False
    data = head[HEADER:]
    return data[0] == 0x09 and data[9] == 0x1A and data[11:23] == b"brain.Event:"
