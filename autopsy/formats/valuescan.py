"""Count NaN / +Inf / -Inf in tensors by streaming their bytes from the file, numpy only.

Each chunk of a tensor is read into one reusable buffer and looked at as
unsigned and signed integers of the element's width. A float is non-finite
exactly when its exponent bits are all ones, i.e. when its bits without the sign
are at least the threshold (``0x7F800000`` for float32); and because the bits of
non-negative floats order like the floats, two read-only integer reductions give
both answers at once: ``max`` of the signed view is the largest non-negative
float's bits, ``max`` of the unsigned view carries the largest-magnitude negative
float's bits. Only a chunk holding a non-finite value takes the slower exact pass
(counts, first index, largest finite magnitude). bfloat16, float16 and the float8
formats use the same test on their own bit layouts; ``float8_e4m3fn`` has NaN
only as ``0x7F``/``0xFF`` and no infinity.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import IO

import numpy as np

from autopsy.formats.tensorinfo import TensorInfo

#: Largest non-contiguous tensor span (bytes) read whole to be scanned.
MAX_STRIDED_BYTES = 1 << 30


@dataclass(frozen=True)
class ValueStats:
    """NaN/Inf counts of one tensor.

    Attributes:
        checked: False when the dtype is not floating or the bytes could not be read.
        nan, posinf, neginf: counts of values (a complex element counts per part).
        first_bad: flat element index of the first non-finite value, or None.
        max_abs: largest finite magnitude, or None (no finite value, or not checked).
        reason: why the tensor was not checked ("" when it was).
    """

    checked: bool
    nan: int = 0
    posinf: int = 0
    neginf: int = 0
    first_bad: int | None = None
    max_abs: float | None = None
    reason: str = ""

    @property
    def finite(self) -> bool:
        """Whether the tensor was checked and every value is finite."""
        return self.checked and not (self.nan or self.posinf or self.neginf)


@dataclass(frozen=True)
class _Layout:
    """How to test one float format through its bits."""

    unsigned: type[np.unsignedinteger]
    signed: type[np.signedinteger]
    mask: int          # all bits but the sign
    threshold: int     # bits without sign >= this: not finite
    has_inf: bool      # whether bits == threshold is an infinity (else NaN only)
    parts: int         # values per element (2 for complex)


_F32 = _Layout(np.uint32, np.int32, 0x7FFFFFFF, 0x7F800000, True, 1)
_F64 = _Layout(np.uint64, np.int64, 0x7FFF_FFFF_FFFF_FFFF, 0x7FF0_0000_0000_0000, True, 1)
_F16 = _Layout(np.uint16, np.int16, 0x7FFF, 0x7C00, True, 1)
LAYOUTS: dict[str, _Layout] = {
    "float32": _F32, "float64": _F64, "float16": _F16,
    "bfloat16": _Layout(np.uint16, np.int16, 0x7FFF, 0x7F80, True, 1),
    "float8_e5m2": _Layout(np.uint8, np.int8, 0x7F, 0x7C, True, 1),
    "float8_e4m3fn": _Layout(np.uint8, np.int8, 0x7F, 0x7F, False, 1),
    "complex64": _Layout(np.uint32, np.int32, 0x7FFFFFFF, 0x7F800000, True, 2),
    "complex128": _Layout(np.uint64, np.int64, _F64.mask, _F64.threshold, True, 2),
    "complex32": _Layout(np.uint16, np.int16, 0x7FFF, 0x7C00, True, 2),
}
_BASE = {"complex64": "float32", "complex128": "float64", "complex32": "float16"}


def bits_to_float(dtype: str, bits: int) -> float:
    """The magnitude whose sign-less bit pattern is ``bits`` in ``dtype``."""
    dtype = _BASE.get(dtype, dtype)
    if dtype == "float32":
        return float(np.array([bits], np.uint32).view(np.float32)[0])
    if dtype == "float64":
        return float(np.array([bits], np.uint64).view(np.float64)[0])
    if dtype == "float16":
        return float(np.array([bits], np.uint16).view(np.float16)[0])
    if dtype == "bfloat16":
        return float(np.array([bits << 16], np.uint32).view(np.float32)[0])
    if dtype == "float8_e5m2":
        return float(np.array([bits << 8], np.uint16).view(np.float16)[0])
    if dtype == "float8_e4m3fn":
        exp, man = (bits >> 3) & 0xF, bits & 0x7
        return man / 8 * 2.0**-6 if exp == 0 else (1 + man / 8) * 2.0 ** (exp - 7)
    raise ValueError(f"no float layout for {dtype}")


class _Tally:
    """Running counts over the chunks of one tensor."""

    def __init__(self, layout: _Layout) -> None:
        self.layout = layout
        self.nan = self.posinf = self.neginf = 0
        self.first_bad: int | None = None
        self.top = -1  # largest finite magnitude bits seen

    def add(self, raw: np.ndarray, start: int) -> None:
        """Account for ``raw`` (unsigned view), whose first value is value number ``start``."""
        lay = self.layout
        umax = int(raw.max())
        smax = int(raw.view(lay.signed).max())
        top = max(smax, umax & lay.mask if umax > lay.mask else -1)
        if top < lay.threshold:
            self.top = max(self.top, top)
            return
        self._exact(raw, start)

    def _exact(self, raw: np.ndarray, start: int) -> None:
        lay = self.layout
        mag = raw & lay.unsigned(lay.mask)
        bad = mag >= lay.threshold
        if lay.has_inf:
            inf = mag == lay.threshold
            neg = raw > lay.mask
            self.posinf += int(np.count_nonzero(inf & ~neg))
            self.neginf += int(np.count_nonzero(inf & neg))
            self.nan += int(np.count_nonzero(mag > lay.threshold))
        else:
            self.nan += int(np.count_nonzero(bad))
        if self.first_bad is None:
            self.first_bad = (start + int(np.argmax(bad))) // lay.parts
        good = mag[~bad]
        if good.size:
            self.top = max(self.top, int(good.max()))

    def stats(self, dtype: str) -> ValueStats:
        return ValueStats(True, self.nan, self.posinf, self.neginf, self.first_bad,
                          bits_to_float(dtype, self.top) if self.top >= 0 else None)


class _Files:
    """Open files by path, kept open for the scan and closed at its end."""

    def __init__(self) -> None:
        self.handles: dict[str, tuple[IO[bytes], int]] = {}

    def get(self, path: str) -> tuple[IO[bytes], int]:
        got = self.handles.get(path)
        if got is None:
            fh = open(path, "rb", buffering=0)
            got = (fh, os.fstat(fh.fileno()).st_size)
            self.handles[path] = got
        return got

    def close(self) -> None:
        for fh, _ in self.handles.values():
            fh.close()
        self.handles.clear()


def _read_exact(fh: IO[bytes], view: memoryview) -> int:
    got = 0
    while got < len(view):
        n = fh.readinto(view[got:])  # type: ignore[attr-defined]
        if not n:
            break
        got += n
    return got


def _scan_one(info: TensorInfo, files: _Files, buf: bytearray) -> ValueStats:
    layout = LAYOUTS.get(info.dtype)
    if layout is None:
        reason = "not a floating dtype" if not info.is_floating else f"{info.dtype} not supported"
        return ValueStats(False, reason=reason)
    if info.data_offset is None:
        return ValueStats(False, reason="bytes not locatable")
    tally = _Tally(layout)
    if info.numel == 0:
        return tally.stats(info.dtype)
    try:
        fh, size = files.get(info.file)
    except OSError as exc:
        return ValueStats(False, reason=f"cannot open {info.file}: {exc.strerror}")
    width = np.dtype(layout.unsigned).itemsize
    if not info.is_contiguous:
        return _scan_strided(info, fh, size, layout, tally)
    if info.data_offset + info.nbytes > size:
        return ValueStats(False, reason="the file ends before the tensor's last byte")
    step = len(buf) - len(buf) % width
    view = memoryview(buf)
    fh.seek(info.data_offset)
    done = 0
    while done < info.nbytes:
        n = min(step, info.nbytes - done)
        if _read_exact(fh, view[:n]) < n:
            return ValueStats(False, reason="the file ends before the tensor's last byte")
        tally.add(np.frombuffer(buf, layout.unsigned, n // width), done // width)
        done += n
    return tally.stats(info.dtype)


def _scan_strided(info: TensorInfo, fh: IO[bytes], size: int, layout: _Layout,
                  tally: _Tally) -> ValueStats:
    itemsize = info.itemsize or 1
    span = info.extent * itemsize
    if span > MAX_STRIDED_BYTES or any(s < 0 for s in info.stride or ()):
        return ValueStats(False, reason="non-contiguous tensor too large to scan")
    assert info.data_offset is not None and info.stride is not None
    if info.data_offset + span > size:
        return ValueStats(False, reason="the file ends before the tensor's last byte")
    fh.seek(info.data_offset)
    raw = np.frombuffer(fh.read(span), layout.unsigned)
    per = layout.parts
    shape = (*info.shape, per)
    strides = (*(s * itemsize for s in info.stride), itemsize // per)
    values = np.lib.stride_tricks.as_strided(raw, shape=shape, strides=strides)
    tally.add(np.ascontiguousarray(values).reshape(-1), 0)
    return tally.stats(info.dtype)


def scan_values(
    tensors: Iterable[tuple[str, TensorInfo]], *, chunk_bytes: int = 64 << 20
) -> Iterator[tuple[str, ValueStats]]:
    """Yield ``(name, ValueStats)`` for each tensor, streaming its bytes from its file.

    Memory is bounded by one buffer of ``chunk_bytes`` (plus one non-contiguous
    tensor's span, at most :data:`MAX_STRIDED_BYTES`). Never raises for bad input:
    a tensor that cannot be read is returned with ``checked=False`` and a reason.
    """
    files = _Files()
    buf = bytearray(max(64, int(chunk_bytes)))
    try:
        for name, info in tensors:
            try:
                stats = _scan_one(info, files, buf)
            except OSError as exc:
                stats = ValueStats(False, reason=f"read error: {exc}")
            yield name, stats
    finally:
        files.close()
