"""Decode one TensorBoard ``Event`` record, keeping the byte spans of its numbers.

Only what autopsy needs is decoded (the tensorboard ``.proto`` field numbers)::

    Event        wall_time=1 (double) step=2 (int64) file_version=3 (string) summary=5
    Summary      value=1 (repeated Value)
    Value        tag=1 simple_value=2 (float) image=4 histo=5 audio=6 tensor=8 metadata=9
    Metadata     plugin_data=1 {plugin_name=1, content=2}
    TensorProto  dtype=1 tensor_shape=2 tensor_content=4 float_val=5 double_val=6
                 int_val=7 string_val=8 int64_val=10 bool_val=11 half_val=13
                 uint32_val=16 uint64_val=17

Besides the values, :func:`decode_event` returns *where* each number sits in the
record (:class:`Span`). Records of the same length whose other bytes are
identical parse identically, so :mod:`autopsy.formats.event_scalars` decodes one
record per layout here and all the others with numpy at those offsets.
"""

from __future__ import annotations

import math
import struct
from dataclasses import dataclass, field
from typing import Any

from autopsy.formats.protowire import FIXED32, FIXED64, LEN, VARINT, WireError, fields, signed64
from autopsy.formats.protowire import varint as read_varint

#: numpy dtype of each fixed-width encoding.
FIXED_ENCODINGS: dict[str, str] = {
    "f32": "<f4", "f64": "<f8", "f16": "<f2", "bf16": "<u2", "bool": "u1",
    "i8": "i1", "u8": "u1", "i16": "<i2", "u16": "<u2", "i32": "<i4", "u32": "<u4",
    "i64": "<i8", "u64": "<u8",
}
#: varint encodings: signed int64, unsigned, float16 bits, bfloat16 bits, bool.
VARINT_ENCODINGS = ("vint", "vuint", "vhalf", "vbf16", "vbool")
_STRUCT = {"f32": "<f", "f64": "<d", "f16": "<e", "i8": "<b", "u8": "<B", "i16": "<h",
           "u16": "<H", "i32": "<i", "u32": "<I", "i64": "<q", "u64": "<Q", "bool": "<B"}

# TensorFlow DataType -> (tensor_content encoding, typed-values field, its encoding)
_DTYPES: dict[int, tuple[str, int, str]] = {
    1: ("f32", 5, "f32"), 2: ("f64", 6, "f64"), 3: ("i32", 7, "vint"), 4: ("u8", 7, "vint"),
    5: ("i16", 7, "vint"), 6: ("i8", 7, "vint"), 9: ("i64", 10, "vint"),
    10: ("bool", 11, "vbool"), 14: ("bf16", 13, "vbf16"), 17: ("u16", 7, "vint"),
    19: ("f16", 13, "vhalf"), 22: ("u32", 16, "vuint"), 23: ("u64", 17, "vuint"),
}
DT_STRING = 7
_WIDTH = {"f32": 4, "f64": 8, "f16": 2, "bf16": 2, "bool": 1, "i8": 1, "u8": 1, "i16": 2,
          "u16": 2, "i32": 4, "u32": 4, "i64": 8, "u64": 8}

Buf = bytes | memoryview


@dataclass(frozen=True)
class Span:
    """Where a number sits in a record: ``data[start:stop]`` with encoding ``enc``."""

    start: int
    stop: int
    enc: str


@dataclass(frozen=True)
class ScalarValue:
    """One scalar of an event: its tag, value (float) and span."""

    tag: str
    value: float
    span: Span


@dataclass
class DecodedEvent:
    """What one Event record holds, as far as autopsy cares.

    ``templatable`` says the record is only time, step and scalars, so that every
    record with the same bytes outside the spans decodes the same way.
    """

    wall_time: float = math.nan
    wall_span: Span | None = None
    step: int = 0
    step_span: Span | None = None
    file_version: str | None = None
    scalars: list[ScalarValue] = field(default_factory=list)
    texts: list[tuple[str, str]] = field(default_factory=list)
    hparams: list[tuple[str, Any]] = field(default_factory=list)
    plugins: dict[str, str] = field(default_factory=dict)
    skipped: int = 0
    templatable: bool = True


def span_value(buf: Buf, span: Span) -> float:
    """Decode the number at ``span`` of ``buf`` as a Python float."""
    enc = span.enc
    if enc in _STRUCT:
        v = struct.unpack_from(_STRUCT[enc], buf, span.start)[0]
        return float(v != 0) if enc == "bool" else float(v)
    if enc == "bf16":
        bits = struct.unpack_from("<H", buf, span.start)[0]
        return float(struct.unpack("<f", struct.pack("<I", bits << 16))[0])
    raw, _ = read_varint(buf, span.start, span.stop)
    if enc == "vint":
        return float(signed64(raw))
    if enc == "vuint":
        return float(raw)
    if enc == "vbool":
        return float(raw != 0)
    if enc == "vhalf":
        return float(struct.unpack("<e", struct.pack("<H", raw & 0xFFFF))[0])
    if enc == "vbf16":
        return float(struct.unpack("<f", struct.pack("<I", (raw & 0xFFFF) << 16))[0])
    raise WireError(f"unknown encoding {enc}")


def _plugin(buf: Buf, start: int, stop: int) -> tuple[str, int, int]:
    """Return (plugin_name, content_start, content_stop) of a SummaryMetadata."""
    name, c0, c1 = "", 0, 0
    for num, wire, s, e in fields(buf, start, stop):
        if num == 1 and wire == LEN:
            for n2, w2, s2, e2 in fields(buf, s, e):
                if n2 == 1 and w2 == LEN:
                    name = bytes(buf[s2:e2]).decode("utf-8", "replace")
                elif n2 == 2 and w2 == LEN:
                    c0, c1 = s2, e2
    return name, c0, c1


def _shape_elements(buf: Buf, start: int, stop: int) -> int:
    """Number of elements of a TensorShapeProto (-1 if unknown)."""
    count = 1
    for num, wire, s, e in fields(buf, start, stop):
        if num == 2 and wire == LEN:
            size = 0
            for n2, w2, s2, e2 in fields(buf, s, e):
                if n2 == 1 and w2 == VARINT:
                    size = signed64(read_varint(buf, s2, e2)[0])
            if size < 0:
                return -1
            count *= size
        elif num == 3 and wire == VARINT and read_varint(buf, s, e)[0]:
            return -1
    return count


def _tensor(buf: Buf, start: int, stop: int) -> tuple[int, Span | None, list[bytes]]:
    """Decode a TensorProto: (dtype, span of its single numeric value or None, strings)."""
    dtype, elements = 0, 1
    content: tuple[int, int] | None = None
    typed: dict[int, list[Span]] = {}
    strings: list[bytes] = []
    for num, wire, s, e in fields(buf, start, stop):
        if num == 1 and wire == VARINT:
            dtype = read_varint(buf, s, e)[0]
        elif num == 2 and wire == LEN:
            elements = _shape_elements(buf, s, e)
        elif num == 4 and wire == LEN:
            content = (s, e)
        elif num == 8 and wire == LEN:
            strings.append(bytes(buf[s:e]))
        elif num in (5, 6, 7, 10, 11, 13, 16, 17):
            spans = typed.setdefault(num, [])
            if wire == LEN:  # packed
                width = 4 if num == 5 else 8 if num == 6 else 0
                if width:
                    spans.extend(Span(p, p + width, "") for p in range(s, e, width))
                else:
                    pos = s
                    while pos < e:
                        _, nxt = read_varint(buf, pos, e)
                        spans.append(Span(pos, nxt, ""))
                        pos = nxt
            elif wire in (VARINT, FIXED32, FIXED64):
                spans.append(Span(s, e, ""))
    info = _DTYPES.get(dtype)
    if info is None or elements != 1:
        return dtype, None, strings
    enc_raw, vfield, venc = info
    if content is not None and content[1] - content[0] == _WIDTH[enc_raw]:
        return dtype, Span(content[0], content[1], enc_raw), strings
    spans = typed.get(vfield, [])
    if len(spans) == 1:
        sp = spans[0]
        expect = {"f32": 4, "f64": 8}.get(venc)
        if expect is not None and sp.stop - sp.start != expect:
            return dtype, None, strings
        return dtype, Span(sp.start, sp.stop, venc), strings
    return dtype, None, strings


def _pb_value(buf: Buf, start: int, stop: int) -> Any:
    """Decode a ``google.protobuf.Value`` (null, number, string, bool; else None)."""
    out: Any = None
    for num, wire, s, e in fields(buf, start, stop):
        if num == 2 and wire == FIXED64:
            out = struct.unpack_from("<d", buf, s)[0]
        elif num == 3 and wire == LEN:
            out = bytes(buf[s:e]).decode("utf-8", "replace")
        elif num == 4 and wire == VARINT:
            out = bool(read_varint(buf, s, e)[0])
        elif num == 1:
            out = None
    return out


def _hparams(buf: Buf, start: int, stop: int) -> list[tuple[str, Any]]:
    """The hparams map of an HParamsPluginData's session_start_info, if any."""
    out: list[tuple[str, Any]] = []
    for num, wire, s, e in fields(buf, start, stop):
        if num != 3 or wire != LEN:
            continue
        for n2, w2, s2, e2 in fields(buf, s, e):
            if n2 != 1 or w2 != LEN:
                continue
            key, value = "", None
            for n3, w3, s3, e3 in fields(buf, s2, e2):
                if n3 == 1 and w3 == LEN:
                    key = bytes(buf[s3:e3]).decode("utf-8", "replace")
                elif n3 == 2 and w3 == LEN:
                    value = _pb_value(buf, s3, e3)
            out.append((key, value))
    return out


def _value(buf: Buf, start: int, stop: int, ev: DecodedEvent) -> None:
    """Decode one Summary.Value into ``ev``."""
    tag = ""
    simple: Span | None = None
    tensor: tuple[int, int] | None = None
    meta: tuple[int, int] | None = None
    heavy = False
    for num, wire, s, e in fields(buf, start, stop):
        if num == 1 and wire == LEN:
            tag = bytes(buf[s:e]).decode("utf-8", "replace")
        elif num == 2 and wire == FIXED32:
            simple = Span(s, e, "f32")
        elif num == 8 and wire == LEN:
            tensor = (s, e)
        elif num == 9 and wire == LEN:
            meta = (s, e)
        elif num in (3, 4, 5, 6):
            heavy = True
    plugin, c0, c1 = _plugin(buf, *meta) if meta else ("", 0, 0)
    if plugin:
        ev.plugins[tag] = plugin
    if plugin == "hparams":
        ev.hparams.extend(_hparams(buf, c0, c1))
        ev.templatable = False
        return
    if tensor is not None:
        dtype, span, strings = _tensor(buf, *tensor)
        if plugin == "text" or (dtype == DT_STRING and plugin in ("", "text")):
            if len(strings) == 1:
                ev.texts.append((tag, strings[0].decode("utf-8", "replace")))
            ev.templatable = False
            return
        if span is not None and plugin in ("", "scalars") and not heavy:
            ev.scalars.append(ScalarValue(tag, span_value(buf, span), span))
            return
    elif simple is not None and not heavy:
        ev.scalars.append(ScalarValue(tag, span_value(buf, simple), simple))
        return
    ev.skipped += 1
    ev.templatable = False


def decode_event(buf: Buf, start: int = 0, stop: int | None = None) -> DecodedEvent:
    """Decode the Event in ``buf[start:stop]``; spans are relative to ``start``.

    Raises :class:`~autopsy.formats.protowire.WireError` for bytes that are not an Event.
    """
    if stop is None:
        stop = len(buf)
    if start:
        buf = memoryview(buf)[start:stop]
        stop -= start
    ev = DecodedEvent()
    seen: set[int] = set()
    for num, wire, s, e in fields(buf, 0, stop):
        if num in seen:
            ev.templatable = False
        seen.add(num)
        if num == 1 and wire == FIXED64:
            ev.wall_time = struct.unpack_from("<d", buf, s)[0]
            ev.wall_span = Span(s, e, "f64")
        elif num == 2 and wire == VARINT:
            ev.step = signed64(read_varint(buf, s, e)[0])
            ev.step_span = Span(s, e, "vint")
        elif num == 3 and wire == LEN:
            ev.file_version = bytes(buf[s:e]).decode("utf-8", "replace")
            ev.templatable = False
        elif num == 5 and wire == LEN:
            for n2, w2, s2, e2 in fields(buf, s, e):
                if n2 == 1 and w2 == LEN:
                    _value(buf, s2, e2, ev)
                else:
                    ev.templatable = False
        elif num in (1, 2, 3, 5):
            raise WireError(f"Event field {num} has wire type {wire}")
        else:
            ev.templatable = False
    return ev


#: Event fields autopsy never reads, by number, as they are named in a problem.
_UNUSED_EVENT_FIELDS = {4: "a graph", 6: "a log message", 7: "a session log",
                        8: "run metadata", 9: "a meta graph", 10: "source metadata"}
#: Summary.Value fields of kinds autopsy skips (old-style histogram, image, histogram, audio).
_UNUSED_VALUE_FIELDS = {3: "a histogram", 4: "an image", 5: "a histogram", 6: "audio"}
#: Longest tag quoted in a description.
_TAG_SHOWN = 60


def _first_len_field(head: bytes, pos: int, end: int,
                     skip: tuple[int, ...] = ()) -> tuple[int, int, int] | None:
    """The first length-delimited field of ``head[pos:end]`` whose number is not in
    ``skip``: ``(number, value start, declared length)``; its value may run past
    ``end`` (the peek is cut). None if there is none."""
    while pos < end:
        key, pos = read_varint(head, pos, end)
        number, wire = key >> 3, key & 7
        if wire == VARINT:
            _, pos = read_varint(head, pos, end)
        elif wire == FIXED64:
            pos += 8
        elif wire == FIXED32:
            pos += 4
        elif wire == LEN:
            length, start = read_varint(head, pos, end)
            if number not in skip:
                return number, start, length
            pos = start + length
        else:
            raise WireError(f"unsupported wire type {wire}")
    return None


def describe_oversized(head: bytes) -> tuple[bool, str]:
    """What an Event record too long to read holds, from its first bytes (``head``, cut
    at the record's end or earlier).

    Returns ``(would_use, description)``: ``would_use`` is False for what autopsy never
    keeps (graphs, run metadata, images, histograms, audio) and True for anything else
    (a scalar, text or hparams summary, or a record it cannot identify), which the caller
    reports as a problem.
    """
    end = len(head)
    try:
        found = _first_len_field(head, 0, end, skip=(3,))
        if found is None:
            return True, "an Event record"
        number, start, length = found
        if number in _UNUSED_EVENT_FIELDS:
            return False, _UNUSED_EVENT_FIELDS[number]
        if number != 5:
            return True, f"an Event record whose field {number} is {length:,} bytes"
        value = _first_len_field(head, start, min(end, start + length))
        if value is None or value[0] != 1:
            return True, "a summary"
        tag = ""
        pos, stop = value[1], min(end, value[1] + value[2])
        while pos < stop:
            key, pos = read_varint(head, pos, stop)
            number, wire = key >> 3, key & 7
            if wire != LEN:
                break
            length, s = read_varint(head, pos, stop)
            if number == 1:
                if s + length > end:
                    return True, f"a summary value whose tag is {length:,} bytes"
                tag = bytes(head[s : s + length]).decode("utf-8", "replace")
                if len(tag) > _TAG_SHOWN:
                    tag = tag[:_TAG_SHOWN] + "..."
            elif number in _UNUSED_VALUE_FIELDS:
                return False, f"{_UNUSED_VALUE_FIELDS[number]} summary {tag!r}"
            elif number != 9:  # metadata: the value's kind comes after it
                break
            pos = s + length
        return True, f"a summary value {tag!r}"
    except WireError:
        return True, "a record autopsy cannot identify"
