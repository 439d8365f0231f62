"""Robust streaming of a text log: blocks of whole lines, bounded memory, any bytes.

A log is read in blocks of :data:`BLOCK_BYTES` that end on a newline. A line longer
than :data:`MAX_LINE_BYTES` (a 100 MB progress-bar line, say) is never held whole:
only its last :data:`MAX_LINE_BYTES` bytes are kept (the end of such a line is where
an error glued after a progress bar sits), and the reader moves on. ``.gz`` files
are decompressed as a stream. :func:`clean` turns one physical line into text:
carriage-return segments (tqdm redraws) are reduced to the meaningful one, ANSI
colour codes are stripped, and bytes that are not UTF-8 are replaced.
"""

from __future__ import annotations

import gzip
import re
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

#: Bytes read per block (a block is cut back to its last newline).
BLOCK_BYTES = 4 << 20
#: At most this many bytes of one physical line are kept (its tail).
MAX_LINE_BYTES = 64 << 10
#: A block-starting marker this close to a block's end moves to the next block,
#: so a multi-line record (a traceback) is seen whole.
CARRY_WINDOW = 256 << 10

_ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b[@-Z\\-_]")

#: A log pasted with a line number before every line (copied from an editor, a file viewer
#: or ``cat -n``) is recognised from this many of its first lines, numbered consecutively.
NUMBERED_MIN_LINES = 3
#: How much of the file's start :func:`numbered_lines` looks at.
NUMBERED_HEAD_BYTES = 4096
_NUMBERED = re.compile(rb"^[ \t]*(\d{1,9})(?:[ \t](.*))?$")
_NUMBER_PREFIX = re.compile(rb"(?m)^[ \t]*\d{1,9}(?:[ \t]|$)")
_WORD = re.compile(rb"[A-Za-z]{2,}")


@dataclass
class Block:
    """Whole lines of a file: ``data`` starts at 1-based line ``first_line``."""

    data: bytes
    first_line: int
    truncated_lines: int = 0
    #: File offset of ``data[0]`` when ``data`` is an unaltered slice of the file
    #: (no over-long line cut in or before it without resync), else -1.
    offset: int = -1


def open_binary(path: Path) -> BinaryIO:
    """Open ``path`` for reading bytes, decompressing ``.gz`` files as a stream."""
    if path.name.endswith(".gz"):
        return gzip.open(path, "rb")  # type: ignore[return-value]
    return open(path, "rb")


#: The first bytes :func:`looks_like_text` judges a file on.
TEXT_SNIFF_BYTES = 512


def read_head(path: Path, n: int = TEXT_SNIFF_BYTES) -> bytes:
    """Return the first ``n`` bytes of ``path`` (decompressed for ``.gz``), or ``b""``."""
    try:
        with open(path, "rb") as fh:
            raw = fh.read(n if not path.name.endswith(".gz") else 64 << 10)
    except OSError:
        return b""
    if path.name.endswith(".gz"):
        try:
            return zlib.decompressobj(16 + zlib.MAX_WBITS).decompress(raw, n)
        except zlib.error:
            return b""
    return raw


def looks_like_text(head: bytes) -> bool:
    """Whether the first bytes of a file look like text.

    Tolerant of a few NULs, control bytes and invalid UTF-8 (a partial write, a
    Latin-1 path); binary data has many of them (random bytes: about half are not
    valid UTF-8).
    """
    if not head:
        return True
    n = len(head)
    controls = sum(1 for b in head if b < 32 and b not in (9, 10, 13, 27, 8, 12))
    if controls > n // 10:
        return False
    bad = head.decode("utf-8", errors="replace").count("\ufffd")
    return bad <= max(4, n // 10)


def numbered_lines(head: bytes) -> bool:
    """Whether a file's first lines each start with their own line number (``1173 Traceback
    (most recent call last):``, then ``1174   File ...``): a paste that carries its editor's
    line numbers. At least :data:`NUMBERED_MIN_LINES` whole lines, every one numbered one
    more than the line before, and words after the numbers on at least half of them (a
    table of a bare step and a value, ``1 0.52``, is data, not a numbered paste)."""
    lines = head.split(b"\n")
    if len(head) >= NUMBERED_HEAD_BYTES:
        lines = lines[:-1]  # the last one may be cut
    lines = [line.rstrip(b"\r") for line in lines]
    while lines and not lines[-1].strip():
        lines.pop()
    if len(lines) < NUMBERED_MIN_LINES:
        return False
    previous, worded = None, 0
    for line in lines:
        m = _NUMBERED.match(line)
        if m is None:
            return False
        number = int(m.group(1))
        if previous is not None and number != previous + 1:
            return False
        previous = number
        worded += bool(m.group(2) and _WORD.search(m.group(2)))
    return 2 * worded >= len(lines)


def strip_numbers(data: bytes) -> bytes:
    """``data`` with the line number (and the one blank after it) taken off every line that
    starts with one (see :func:`numbered_lines`)."""
    return _NUMBER_PREFIX.sub(b"", data)


def iter_blocks(stream: BinaryIO, carry_markers: tuple[bytes, ...] = (),
                block_bytes: int | None = None, count_lines: bool = True) -> Iterator[Block]:
    """Yield blocks of whole lines from ``stream`` (see the module docstring).

    ``block_bytes`` defaults to :data:`BLOCK_BYTES` (read at call time). With
    ``count_lines`` false every block's ``first_line`` is 0 (a caller that knows
    its line numbers otherwise saves a pass over the data).

    Raises only what reading the stream raises (``OSError``, ``EOFError`` and
    ``zlib.error`` for a torn ``.gz``); the caller records those as problems.
    """
    if block_bytes is None:
        block_bytes = BLOCK_BYTES
    line = 1 if count_lines else 0
    pending = b""
    huge = False  # inside an over-long line whose head was dropped
    truncated = 0
    pos = 0  # file offset of the next byte read
    pend_off = 0  # file offset of pending[0], -1 when pending is not one slice
    while True:
        chunk, error = _read_upto(stream, block_bytes)
        if error is not None:  # a torn .gz: its lines so far, then the error
            buf = pending + chunk
            if buf:
                yield Block(buf, line, truncated + (1 if huge else 0), pend_off if pending else pos)
            raise error
        eof = not chunk
        buf_off = pend_off if pending else pos
        buf = pending + chunk if pending else chunk
        pos += len(chunk)
        pending = b""
        if eof:
            if buf:
                yield Block(buf, line, truncated + (1 if huge else 0), buf_off)
            return
        cut = buf.rfind(b"\n")
        if cut < 0:
            if len(buf) > MAX_LINE_BYTES:
                huge = True
                buf = buf[-MAX_LINE_BYTES:]
                buf_off = pos - MAX_LINE_BYTES
            pending = buf
            pend_off = buf_off
            continue
        body, pending = buf[: cut + 1], buf[cut + 1:]
        pend_off = -1 if buf_off < 0 else buf_off + cut + 1
        if len(pending) > MAX_LINE_BYTES:
            pending = pending[-MAX_LINE_BYTES:]
            pend_off = pos - MAX_LINE_BYTES
            huge_next = True
        else:
            huge_next = False
        if carry_markers and len(body) > CARRY_WINDOW:
            start = len(body) - CARRY_WINDOW
            best = -1
            for marker in carry_markers:
                at = body.rfind(marker, start)
                best = max(best, at)
            if best > 0:
                ls = body.rfind(b"\n", 0, best) + 1
                if ls > 0:
                    contiguous = buf_off >= 0 and pend_off == buf_off + len(body)
                    pending = body[ls:] + pending
                    pend_off = buf_off + ls if contiguous else -1
                    body = body[:ls]
        first_truncated = truncated + (1 if huge else 0)
        yield Block(body, line, first_truncated, buf_off if not first_truncated else -1)
        if count_lines:
            line += body.count(b"\n")
        huge = huge_next
        truncated = 0


def _read_upto(stream: BinaryIO, n: int) -> tuple[bytes, BaseException | None]:
    """Up to ``n`` bytes of ``stream``, and the error that stopped it early, if any.

    ``read(n)`` of a torn ``.gz`` raises and drops what it had decompressed (up to a
    whole block); ``read1`` pieces keep it.
    """
    read1 = getattr(stream, "read1", None)
    if read1 is None:
        return stream.read(n), None
    parts: list[bytes] = []
    got = 0
    while got < n:
        try:
            piece = read1(n - got)
        except (OSError, EOFError, zlib.error) as exc:
            return b"".join(parts), exc
        if not piece:
            break
        parts.append(piece)
        got += len(piece)
    return (parts[0] if len(parts) == 1 else b"".join(parts)), None


def split_cr(raw: bytes) -> bytes:
    """Reduce carriage-return segments of one physical line to the meaningful one.

    The last non-blank segment wins, unless it is a bare progress bar and an
    earlier segment holds text (an error printed, then the bar redrawn).
    """
    if b"\r" not in raw:
        return raw
    parts = [p for p in raw.split(b"\r") if p.strip()]
    if not parts:
        return b""
    for part in reversed(parts):
        if not _is_bar(part):
            return part
    return parts[-1]


_BAR = re.compile(rb"\d+%\|.*\|\s*\d+/\d+|^\s*\d+/\d+ \[")


def _is_bar(part: bytes) -> bool:
    """Whether one CR segment is a tqdm progress bar."""
    return bool(_BAR.search(part)) and b"Error" not in part and b"{'" not in part


def clean(raw: bytes) -> str:
    """Turn one physical line (no newline) into text: CR, ANSI, CRLF, bad bytes."""
    text = split_cr(raw.rstrip(b"\r\n")).decode("utf-8", errors="replace")
    if "\x1b" in text:
        text = _ANSI.sub("", text)
    return text


def line_at(block: bytes, pos: int) -> tuple[int, int]:
    """Return ``(start, end)`` of the line holding offset ``pos`` (end excludes ``\\n``)."""
    start = block.rfind(b"\n", 0, pos) + 1
    end = block.find(b"\n", pos)
    if end < 0:
        end = len(block)
    return start, end
