"""Tensor metadata of a safetensors file from its header, without reading the tensors.

Layout: an 8-byte little-endian header length ``N``, ``N`` bytes of JSON
(``{name: {"dtype", "shape", "data_offsets": [begin, end]}, "__metadata__": {...}}``),
then the data; a tensor's bytes are at ``8 + N + begin``.
"""

from __future__ import annotations

import json
import os
import struct
from dataclasses import dataclass, field
from typing import Any

from autopsy.formats.ckpt_open import open_checkpoint
from autopsy.formats.ckpterrors import CheckpointFormatError
from autopsy.formats.tensorinfo import ITEMSIZE, MAX_NUMEL, TensorInfo, checked_numel

#: Largest JSON header accepted (bytes); the format's own readers refuse larger ones.
MAX_HEADER = 100_000_000

#: safetensors dtype codes -> torch dtype names.
DTYPES: dict[str, str] = {
    "F64": "float64", "F32": "float32", "F16": "float16", "BF16": "bfloat16",
    "F8_E4M3": "float8_e4m3fn", "F8_E5M2": "float8_e5m2", "F8_E8M0": "float8_e8m0fnu",
    "C64": "complex64", "C128": "complex128",
    "I64": "int64", "I32": "int32", "I16": "int16", "I8": "int8",
    "U64": "uint64", "U32": "uint32", "U16": "uint16", "U8": "uint8", "BOOL": "bool",
}


_PAST_END = "tensor "  # problems about tensors past the end start so; grouped when many
#: More problems of one kind than this (tensors past the end of the file, overlapping
#: tensors, bad entries) are reported in one line: a count and the first ones.
MAX_LISTED = 5


def _group_past_end(problems: list[str], size: int, base: int, end: int) -> list[str]:
    """Many "past the end" lines (a truncated file) become one."""
    past = [p for p in problems if p.startswith(_PAST_END) and "lie past the end" in p]
    if len(past) <= MAX_LISTED:
        return problems
    names = [p[len(_PAST_END):].split(": bytes ", 1)[0] for p in past]
    shown = ", ".join(names[:MAX_LISTED])
    line = (f"{len(past)} tensors lie past the end of the file (truncated: the data holds "
            f"{max(0, size - base):,} of the {end:,} bytes the header describes): {shown} "
            f"and {len(past) - MAX_LISTED} more")
    gone = set(past)
    return [line, *(p for p in problems if p not in gone)]


@dataclass
class SafetensorsMeta:
    """What a safetensors file holds, tensors described but not read.

    Attributes:
        path: the file read.
        tensors: name -> :class:`TensorInfo` (``data_offset`` None when its bytes
            are not all inside the file or its entry is malformed).
        metadata: the ``"__metadata__"`` entry (string values).
        problems: integrity problems, one readable line each.
    """

    path: str
    tensors: dict[str, TensorInfo] = field(default_factory=dict)
    metadata: dict[str, str] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)


def _header(fh: Any, name: str, size: int) -> tuple[dict[str, Any], int]:
    head = fh.read(8)
    if len(head) < 8:
        raise CheckpointFormatError(
            f"{name}: {size} bytes, too short for a safetensors header length"
        )
    (length,) = struct.unpack("<Q", head)
    if length > MAX_HEADER:
        raise CheckpointFormatError(
            f"{name}: safetensors header length {length:,} is over the {MAX_HEADER:,}-byte "
            "limit (not a safetensors file, or damaged)"
        )
    if 8 + length > size:
        raise CheckpointFormatError(
            f"{name}: safetensors header of {length:,} bytes runs past the end of the "
            f"{size:,}-byte file (truncated or not safetensors)"
        )
    raw = fh.read(length)
    try:
        header = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise CheckpointFormatError(f"{name}: safetensors header is not valid JSON: "
                                    f"{str(exc).splitlines()[0]}") from exc
    if not isinstance(header, dict):
        raise CheckpointFormatError(f"{name}: safetensors header is not a JSON object")
    return header, 8 + length


def _entry(key: str, entry: Any, name: str, base: int, size: int,
           problems: list[str]) -> tuple[TensorInfo, tuple[int, int] | None] | None:
    if not isinstance(entry, dict):
        problems.append(f"tensor {key}: header entry is not an object")
        return None
    code, shape, offsets = entry.get("dtype"), entry.get("shape"), entry.get("data_offsets")
    dtype = DTYPES.get(code) if isinstance(code, str) else None
    if dtype is None:
        problems.append(f"tensor {key}: unknown dtype {code!r}")
        return None
    if not isinstance(shape, list) or not all(
        isinstance(n, int) and not isinstance(n, bool) and n >= 0 for n in shape
    ):
        problems.append(f"tensor {key}: shape {shape!r} is not a list of sizes")
        return None
    numel = checked_numel(shape)
    if numel is None:
        problems.append(f"tensor {key}: its shape of {len(shape):,} sizes holds more than "
                        f"{MAX_NUMEL:,} elements (damaged header)")
        return None
    nbytes = numel * ITEMSIZE[dtype]
    if not (isinstance(offsets, list) and len(offsets) == 2 and all(
        isinstance(n, int) and not isinstance(n, bool) and n >= 0 for n in offsets
    )) or offsets[1] < offsets[0]:
        problems.append(f"tensor {key}: data_offsets {offsets!r} are not [begin, end]")
        return TensorInfo(dtype, tuple(shape), name, None, nbytes), None
    begin, end = offsets
    data_offset: int | None = base + begin
    if end - begin != nbytes:
        problems.append(f"tensor {key}: {dtype} {tuple(shape)} needs {nbytes:,} bytes, "
                        f"its data_offsets span {end - begin:,}")
        data_offset = None
    if base + end > size:
        problems.append(f"{_PAST_END}{key}: bytes {begin:,}..{end:,} of the data lie past the "
                        f"end of the file (data holds {max(0, size - base):,} bytes; truncated)")
        data_offset = None
    return TensorInfo(dtype, tuple(shape), name, data_offset, nbytes), (begin, end)


def _capped(problems: list[str], what: str) -> list[str]:
    """``problems`` as they are, or the first :data:`MAX_LISTED` and a count: a header of
    50,000 entries that all overlap is one finding, not 50,000 lines (the report stays the
    size of what a reader can use)."""
    if len(problems) <= MAX_LISTED:
        return problems
    return [f"{len(problems):,} {what}; the first {MAX_LISTED}: "
            + "; ".join(problems[:MAX_LISTED])]


def read_safetensors_meta(path: str | os.PathLike[str]) -> SafetensorsMeta:
    """Describe every tensor of a safetensors file from its header, and check its layout.

    Checks: header length sane, offsets inside the file, byte ranges not
    overlapping, each range as long as dtype and shape imply, the file not
    truncated (nor with bytes left over after the last tensor).

    Raises:
        CheckpointFormatError: the 8-byte length or the JSON header cannot be read at
            all (missing, empty, absurd length, not JSON); the message is one line.
    """
    name = os.fspath(path)
    fh, size = open_checkpoint(name)
    with fh:
        if size == 0:
            raise CheckpointFormatError(f"{name}: empty file (0 bytes)")
        try:
            header, base = _header(fh, name, size)
        except OSError as exc:
            raise CheckpointFormatError(f"{name}: cannot read: {exc}") from exc
    meta = SafetensorsMeta(name)
    raw_meta = header.pop("__metadata__", None)
    if isinstance(raw_meta, dict):
        meta.metadata = {str(k): v if isinstance(v, str) else json.dumps(v)
                         for k, v in raw_meta.items()}
    elif raw_meta is not None:
        meta.problems.append("__metadata__ is not an object")
    ranges: list[tuple[int, int, str]] = []
    entry_problems: list[str] = []
    for key, entry in header.items():
        got = _entry(key, entry, name, base, size, entry_problems)
        if got is None:
            continue
        meta.tensors[key], span = got
        if span is not None:
            ranges.append((span[0], span[1], key))
    ranges.sort()  # O(n log n): one pass over the sorted ranges finds every overlap
    last_end, last_key = 0, ""
    overlaps: list[str] = []
    for begin, end, key in ranges:
        if begin < last_end and end > begin:
            overlaps.append(f"tensors {last_key} and {key} overlap (bytes {begin:,}.."
                            f"{min(end, last_end):,} of the data)")
        if end > last_end:
            last_end, last_key = end, key
    meta.problems += _capped(_group_past_end(entry_problems, size, base, last_end),
                             "tensor entries have problems")
    meta.problems += _capped(overlaps, "pairs of tensors overlap")
    if base + last_end < size:
        meta.problems.append(f"{size - base - last_end:,} bytes after the last tensor "
                             "that no tensor uses")
    return meta
