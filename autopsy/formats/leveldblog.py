"""The record framing of W&B's ``.wandb`` files: LevelDB's log format behind a 7-byte header.

A ``.wandb`` file starts with ``:W&B``, the magic ``0xBEE1`` and a version byte (0), then
32 KiB blocks of records. Each record is ``checksum: u32, length: u16, type: u8, data``
(little-endian); the checksum is ``zlib.crc32(data)`` seeded with the CRC of the type byte.
A payload that does not fit the rest of a block is split into FIRST, MIDDLE... LAST
fragments; fewer than 7 bytes left in a block are zero padding. This is the framing of
LevelDB's ``doc/log_format.md``, as W&B's writers (the Python ``datastore`` and the Go
core) use it.

:func:`records` yields each whole payload with its offset and reads the file in blocks,
so memory follows the largest record, never the file. What is wrong is counted in a
:class:`LogDamage`, never raised: a checksum that does not match costs the rest of its
block (LevelDB's own recovery), a payload over :data:`MAX_RECORD_BYTES` is stepped over, and
a file cut inside a record (a killed run, a copy still being written) ends the read with
everything before it kept.
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import BinaryIO

IDENT = b":W&B"
MAGIC = 0xBEE1
HEADER = struct.Struct("<4sHB")
RECORD = struct.Struct("<IHB")
BLOCK = 32768
FULL, FIRST, MIDDLE, LAST = 1, 2, 3, 4
#: The largest payload assembled (32 MiB): W&B's history, summary, config and console
#: records are bytes to kilobytes; the only big ones are media and table payloads autopsy
#: does not use. A larger one is stepped over fragment by fragment, never held.
MAX_RECORD_BYTES = 32 << 20

_SEED = {t: zlib.crc32(bytes((t,))) for t in (FULL, FIRST, MIDDLE, LAST)}


class NotALevelDBLog(ValueError):
    """The file does not start with the W&B log header."""


@dataclass
class LogDamage:
    """What a read of one file had to step over."""

    bad_checksums: int = 0
    bad_fragments: int = 0
    oversized: list[tuple[int, int]] = field(default_factory=list)  # (offset, bytes)
    truncated_at: int | None = None  # the offset of the record the file ends inside
    version: int = 0


def read_header(fh: BinaryIO) -> int:
    """Check the 7-byte header; return its version. Raises :class:`NotALevelDBLog`."""
    head = fh.read(HEADER.size)
    if len(head) < HEADER.size:
        raise NotALevelDBLog("shorter than the 7-byte W&B header")
    ident, magic, version = HEADER.unpack(head)
    if ident != IDENT or magic != MAGIC:
        raise NotALevelDBLog("no ':W&B' header")
    return version


def records(fh: BinaryIO, damage: LogDamage) -> Iterator[tuple[int, bytes]]:
    """Yield ``(offset, payload)`` of each whole record of a file positioned at its start."""
    damage.version = read_header(fh)
    base = HEADER.size  # the file offset of block[0]
    block = fh.read(BLOCK - base)
    last = len(block) < BLOCK - base  # the file ends inside this block
    parts: list[bytes] = []
    start = -1  # the offset of the FIRST fragment being assembled
    size = 0
    skipping = False  # the record being assembled is over MAX_RECORD_BYTES
    i = 0

    def drop() -> None:
        nonlocal parts, start, size, skipping
        parts, start, size, skipping = [], -1, 0, False

    while True:
        if len(block) - i < RECORD.size:  # the block's trailer (zeros), or the file's end
            if last:
                if block[i:].strip(b"\x00") or start >= 0:
                    damage.truncated_at = start if start >= 0 else base + i
                return
            base += len(block)
            block = fh.read(BLOCK)
            last = len(block) < BLOCK
            i = 0
            continue
        crc, length, kind = RECORD.unpack_from(block, i)
        at = base + i
        if crc == 0 and length == 0 and kind == 0:  # zero fill: the rest of the block
            i = len(block)
            continue
        end = i + RECORD.size + length
        if end > len(block):
            if last:  # the file ends inside this record
                damage.truncated_at = start if start >= 0 else at
                return
            damage.bad_checksums += 1  # a length past its block: a damaged header
            drop()
            i = len(block)
            continue
        data = block[i + RECORD.size:end]
        seed = _SEED.get(kind)
        if seed is None or zlib.crc32(data, seed) != crc:
            damage.bad_checksums += 1  # the rest of the block is not trusted (LevelDB's way)
            drop()
            i = len(block)
            continue
        i = end
        if kind == FULL:
            if start >= 0:
                damage.bad_fragments += 1  # a FIRST never finished
                drop()
            if length > MAX_RECORD_BYTES:
                damage.oversized.append((at, length))
            else:
                yield at, bytes(data)
        elif kind == FIRST:
            if start >= 0:
                damage.bad_fragments += 1
            parts, start, size, skipping = [bytes(data)], at, length, length > MAX_RECORD_BYTES
        elif start < 0:  # a MIDDLE or LAST without its FIRST
            damage.bad_fragments += 1
        else:
            size += length
            if not skipping and size > MAX_RECORD_BYTES:
                skipping, parts = True, []
            if not skipping:
                parts.append(bytes(data))
            if kind == LAST:
                if skipping:
                    damage.oversized.append((start, size))
                else:
                    yield start, b"".join(parts)
                drop()
