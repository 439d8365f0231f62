"""A minimal protobuf wire-format reader (varints, length-delimited, fixed32/64).

Enough to walk ``tensorboard`` Event records without the protobuf package. Every
function takes a bytes-like object (``bytes`` or ``memoryview``) and offsets;
malformed input raises :class:`WireError`, never anything else.
"""

from __future__ import annotations

from collections.abc import Iterator

VARINT, FIXED64, LEN, FIXED32 = 0, 1, 2, 5


class WireError(ValueError):
    """The bytes are not valid protobuf wire format."""


def varint(buf: bytes | memoryview, pos: int, end: int) -> tuple[int, int]:
    """Decode an unsigned varint at ``pos``; return ``(value, next_pos)``."""
    result = 0
    shift = 0
    while True:
        if pos >= end:
            raise WireError("varint runs past the end")
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if b < 0x80:
            return result & 0xFFFFFFFFFFFFFFFF, pos
        shift += 7
        if shift >= 70:
            raise WireError("varint longer than 10 bytes")


def signed64(value: int) -> int:
    """Reinterpret an unsigned 64-bit varint value as two's complement int64."""
    return value - (1 << 64) if value >= 1 << 63 else value


def fields(buf: bytes | memoryview, pos: int, end: int) -> Iterator[tuple[int, int, int, int]]:
    """Yield ``(field_number, wire_type, start, stop)`` for each field in ``buf[pos:end]``.

    ``start:stop`` spans the value: the varint bytes, the 8 or 4 fixed bytes, or
    the payload of a length-delimited field (without its length prefix).
    """
    while pos < end:
        key, pos = varint(buf, pos, end)
        number, wire = key >> 3, key & 7
        if number == 0:
            raise WireError("field number 0")
        if wire == VARINT:
            _, stop = varint(buf, pos, end)
            start = pos
        elif wire == FIXED64:
            start, stop = pos, pos + 8
        elif wire == LEN:
            length, start = varint(buf, pos, end)
            stop = start + length
        elif wire == FIXED32:
            start, stop = pos, pos + 4
        else:
            raise WireError(f"unsupported wire type {wire}")
        if stop > end:
            raise WireError("field runs past the end")
        yield number, wire, start, stop
        pos = stop


def packed_varints(buf: bytes | memoryview, start: int, stop: int) -> list[tuple[int, int, int]]:
    """Decode a packed run of varints; return ``(value, start, stop)`` per element."""
    out = []
    pos = start
    while pos < stop:
        value, nxt = varint(buf, pos, stop)
        out.append((value, pos, nxt))
        pos = nxt
    return out
