"""Count NaN / +Inf / -Inf in tensors by streaming their bytes from the file, numpy only.

Each file is memory-mapped read-only; a tensor is looked at window by window
(``chunk_bytes``, at most 8 MiB), windows tallied by a few threads, each
window's pages dropped from the process after use (``madvise(MADV_DONTNEED)``),
so memory stays bounded without copying the bytes.
Files that cannot be mapped are read into one reusable buffer instead. (A file
cut shorter while it is scanned would fault through the map: its size is checked
again before each tensor.) The
bytes are looked at as unsigned and signed integers of the element's width. A float is non-finite
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

import errno
import mmap
import os
import stat
from collections import deque
from collections.abc import Iterable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
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

    def merge(self, other: _Tally) -> None:
        """Add the counts of the next window (windows merged in file order)."""
        self.nan += other.nan
        self.posinf += other.posinf
        self.neginf += other.neginf
        if self.first_bad is None:
            self.first_bad = other.first_bad
        self.top = max(self.top, other.top)

    def stats(self, dtype: str) -> ValueStats:
        return ValueStats(True, self.nan, self.posinf, self.neginf, self.first_bad,
                          bits_to_float(dtype, self.top) if self.top >= 0 else None)


#: Values per reduction block inside a window (cache-sized).
_BLOCK_BYTES = 4 << 20
#: Largest mapped window: larger ones cost peak RSS and gain no speed (bench/ckpt_read.py).
MAX_WINDOW = 8 << 20


class _Open:
    """One open file: its handle, size and read-only map (None if it cannot be mapped)."""

    def __init__(self, path: str) -> None:
        if not stat.S_ISREG(os.stat(path).st_mode):
            raise OSError(errno.EINVAL, "not a regular file")
        self.fh: IO[bytes] = open(path, "rb", buffering=0)
        self.size = os.fstat(self.fh.fileno()).st_size
        self.map: mmap.mmap | None = None
        if self.size:
            try:
                self.map = mmap.mmap(self.fh.fileno(), 0, access=mmap.ACCESS_READ)
            except (OSError, ValueError):
                self.map = None

    def close(self) -> None:
        if self.map is not None:
            self.map.close()
        self.fh.close()


class _Files:
    """Open files by path, kept open for the scan and closed at its end."""

    def __init__(self) -> None:
        self.handles: dict[str, _Open] = {}

    def get(self, path: str) -> _Open:
        got = self.handles.get(path)
        if got is None:
            got = self.handles[path] = _Open(path)
        return got

    def close(self) -> None:
        for handle in self.handles.values():
            handle.close()
        self.handles.clear()


def _read_exact(fh: IO[bytes], view: memoryview) -> int:
    got = 0
    while got < len(view):
        n = fh.readinto(view[got:])  # type: ignore[attr-defined]
        if not n:
            break
        got += n
    return got


def _windows(offset: int, nbytes: int, width: int, window: int) -> list[tuple[int, int, int]]:
    """``(file offset, bytes, first value index)`` of each window over a tensor's bytes."""
    window = max(window - window % width, width)
    return [(offset + done, min(window, nbytes - done), done // width)
            for done in range(0, nbytes, window)]


def _scan_window(mm: mmap.mmap, layout: _Layout, start: int, n: int, first: int) -> _Tally:
    """Tally one window of a mapped file, then drop its pages from the process."""
    tally = _Tally(layout)
    width = np.dtype(layout.unsigned).itemsize
    block = max(_BLOCK_BYTES // width, 1)
    values = np.frombuffer(mm, layout.unsigned, n // width, start)
    for i in range(0, len(values), block):
        tally.add(values[i : i + block], first + i)
    del values
    page = start - start % mmap.PAGESIZE
    mm.madvise(mmap.MADV_DONTNEED, page, start + n - page)
    return tally


def _scan_read(fh: IO[bytes], offset: int, nbytes: int, layout: _Layout, tally: _Tally,
               buf: bytearray) -> bool:
    width = np.dtype(layout.unsigned).itemsize
    step = len(buf) - len(buf) % width
    view = memoryview(buf)
    fh.seek(offset)
    done = 0
    while done < nbytes:
        n = min(step, nbytes - done)
        if _read_exact(fh, view[:n]) < n:
            return False
        tally.add(np.frombuffer(buf, layout.unsigned, n // width), done // width)
        done += n
    return True


@dataclass(frozen=True)
class _Job:
    """A contiguous tensor of a mapped file, to be tallied window by window."""

    dtype: str
    layout: _Layout
    map: mmap.mmap
    windows: list[tuple[int, int, int]]


def _plan(info: TensorInfo, files: _Files, chunk: int, buf: list[bytearray]) -> ValueStats | _Job:
    """The windows to scan for a tensor, or its stats when it is decided here.

    Unscannable tensors, empty ones, non-contiguous ones and those of files that
    cannot be mapped are decided (and read) here, on the calling thread.
    """
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
        handle = files.get(info.file)
    except OSError as exc:
        return ValueStats(False, reason=f"cannot open {info.file}: {exc.strerror}")
    if not info.is_contiguous:
        return _scan_strided(info, handle.fh, handle.size, layout, tally)
    if info.data_offset + info.nbytes > handle.size:
        return ValueStats(False, reason="the file ends before the tensor's last byte")
    if handle.map is not None and os.fstat(handle.fh.fileno()).st_size < handle.size:
        return ValueStats(False, reason="the file shrank while it was being scanned")
    if handle.map is not None:
        width = np.dtype(layout.unsigned).itemsize
        return _Job(info.dtype, layout, handle.map,
                    _windows(info.data_offset, info.nbytes, width, min(chunk, MAX_WINDOW)))
    if not buf:
        buf.append(bytearray(chunk))
    if not _scan_read(handle.fh, info.data_offset, info.nbytes, layout, tally, buf[0]):
        return ValueStats(False, reason="the file ends before the tensor's last byte")
    return tally.stats(info.dtype)


def _finish(job: _Job, parts: Iterable[_Tally]) -> ValueStats:
    tally = _Tally(job.layout)
    for part in parts:
        tally.merge(part)
    return tally.stats(job.dtype)


def default_workers() -> int:
    """Threads for the value scan: the CPUs this process may use, at most 4."""
    try:
        cpus = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cpus = os.cpu_count() or 1
    return max(1, min(4, cpus))


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
    tensors: Iterable[tuple[str, TensorInfo]],
    *,
    chunk_bytes: int = 64 << 20,
    workers: int | None = None,
) -> Iterator[tuple[str, ValueStats]]:
    """Yield ``(name, ValueStats)`` for each tensor, in order, streaming its bytes from its file.

    Windows of mapped files are tallied by ``workers`` threads (default
    :func:`default_workers`; numpy releases the GIL in its reductions), the
    tensors after the one being yielded planned ahead while fewer than
    ``2 * workers`` windows wait. Memory is bounded by the mapped pages of the
    windows being tallied (one per thread, each ``chunk_bytes``, at most
    :data:`MAX_WINDOW`, dropped when done) or, where a file cannot be mapped,
    one read buffer of ``chunk_bytes``; plus one non-contiguous tensor's span
    (at most :data:`MAX_STRIDED_BYTES`). Never raises for bad input: a tensor
    that cannot be read is returned with ``checked=False`` and a reason.
    """
    files = _Files()
    chunk = max(64, int(chunk_bytes))
    threads = default_workers() if workers is None else max(1, int(workers))
    buf: list[bytearray] = []  # the read buffer, made only if a file cannot be mapped
    pool = ThreadPoolExecutor(threads) if threads > 1 else None
    pending: deque[tuple[str, ValueStats | _Job, list[Future[_Tally]]]] = deque()
    in_flight = 0

    def settle() -> tuple[str, ValueStats]:
        nonlocal in_flight
        name, planned, futures = pending.popleft()
        in_flight -= len(futures)
        if isinstance(planned, ValueStats):
            return name, planned
        try:
            return name, _finish(planned, [f.result() for f in futures])
        except (OSError, ValueError) as exc:
            return name, ValueStats(False, reason=f"read error: {exc}")

    try:
        for name, info in tensors:
            try:
                planned = _plan(info, files, chunk, buf)
                if isinstance(planned, _Job) and pool is None:
                    planned = _finish(planned, (_scan_window(planned.map, planned.layout, *w)
                                                for w in planned.windows))
            except (OSError, ValueError) as exc:
                planned = ValueStats(False, reason=f"read error: {exc}")
            futures: list[Future[_Tally]] = []
            if isinstance(planned, _Job) and pool is not None:
                futures = [pool.submit(_scan_window, planned.map, planned.layout, *w)
                           for w in planned.windows]
                in_flight += len(futures)
            pending.append((name, planned, futures))
            while pending and (in_flight > 2 * threads or not pending[0][2]
                               or all(f.done() for f in pending[0][2])):
                yield settle()
        while pending:
            yield settle()
    finally:
        if pool is not None:
            for _name, _planned, futures in pending:
                for future in futures:
                    future.cancel()
            pool.shutdown(wait=True)
        files.close()
