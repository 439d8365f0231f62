"""CRC32C (Castagnoli), scalar and vectorised with numpy.

TFRecord frames carry a *masked* CRC32C of their length and of their data. This
module computes it three ways:

* :func:`crc32c` for one short buffer, in pure Python (a table loop);
* :func:`crc32c_rows` for many records of the same length at once: the CRC is
  affine in the data, so ``crc(row) = crc(row0) ^ lin(row ^ row0)`` and only the
  byte columns that differ between rows cost anything (in a file of scalars, the
  tag and field bytes are the same in every record; only the time, step and value
  bytes change);
* :func:`crc32c_long` for a batch of long records: each record is cut into
  fixed-size chunks whose registers are computed together, then shifted into
  place with precomputed "advance by 2**j chunks of zeros" operators.

Everything here is reflected CRC32C with init and final xor ``0xFFFFFFFF``.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

POLY = 0x82F63B78
_MASK_DELTA = 0xA282EAD8


def _make_table() -> list[int]:
    table = []
    for n in range(256):
        c = n
        for _ in range(8):
            c = (c >> 1) ^ POLY if c & 1 else c >> 1
        table.append(c)
    return table


_TABLE_LIST: list[int] = _make_table()
#: the byte-wise CRC32C table, as numpy.
TABLE: np.ndarray = np.array(_TABLE_LIST, dtype=np.uint32)


def crc32c(data: bytes | bytearray | memoryview, crc: int = 0) -> int:
    """Return the CRC32C of ``data`` (continuing from ``crc``), pure Python."""
    table = _TABLE_LIST
    reg = crc ^ 0xFFFFFFFF
    for b in bytes(data):
        reg = table[(reg ^ b) & 0xFF] ^ (reg >> 8)
    return reg ^ 0xFFFFFFFF


def mask(crc: int) -> int:
    """Mask a CRC the way TFRecord stores it."""
    return ((((crc >> 15) | (crc << 17)) & 0xFFFFFFFF) + _MASK_DELTA) & 0xFFFFFFFF


def masked_crc32c(data: bytes | bytearray | memoryview) -> int:
    """Return the masked CRC32C of ``data`` (what TFRecord stores)."""
    return mask(crc32c(data))


def mask_array(crc: np.ndarray) -> np.ndarray:
    """Vectorised :func:`mask` over a uint32 array."""
    crc = crc.astype(np.uint32, copy=False)
    return ((crc >> np.uint32(15)) | (crc << np.uint32(17))) + np.uint32(_MASK_DELTA)


def _zero_step(v: np.ndarray) -> np.ndarray:
    """Advance CRC registers ``v`` (init 0 semantics) over one zero byte."""
    return TABLE[v & np.uint32(0xFF)] ^ (v >> np.uint32(8))


class _PositionTables:
    """``Q[j][b]``: the linear CRC contribution of byte ``b`` followed by ``j`` zero bytes."""

    def __init__(self) -> None:
        self.q = TABLE.reshape(1, 256).copy()

    def upto(self, n: int) -> np.ndarray:
        if len(self.q) < n:
            rows = [self.q]
            last = self.q[-1]
            for _ in range(n - len(self.q)):
                last = _zero_step(last)
                rows.append(last.reshape(1, 256))
            self.q = np.concatenate(rows)
        return self.q


_POS = _PositionTables()

#: Longest record handled by :func:`crc32c_rows` (its position tables grow with it).
ROWS_MAX_LEN = 2048


def crc32c_rows(rows: np.ndarray) -> np.ndarray:
    """Return the CRC32C of each row of a 2-D uint8 array (records of equal length).

    Cost grows with the number of byte columns that are not the same in every row.
    """
    return crc32c_rows_varying(rows)[0]


def crc32c_rows_varying(rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Like :func:`crc32c_rows`; also return the indices of the columns that vary."""
    n, length = rows.shape
    if n == 0:
        return np.zeros(0, dtype=np.uint32), np.zeros(0, dtype=np.int64)
    if length > ROWS_MAX_LEN:
        raise ValueError(f"rows of {length} bytes: use crc32c_long")
    ref = crc32c(rows[0].tobytes())
    out = np.full(n, ref, dtype=np.uint32)
    if n == 1 or length == 0:
        return out, np.zeros(0, dtype=np.int64)
    diff = rows ^ rows[0]
    varying = np.flatnonzero(diff.any(axis=0))
    q = _POS.upto(length)
    for k in varying.tolist():
        out ^= q[length - 1 - k][diff[:, k]]
    return out, varying


@lru_cache(maxsize=8)
def _shift_ops(chunk: int, levels: int) -> tuple[np.ndarray, ...]:
    """Operators "advance a register over ``chunk * 2**j`` zero bytes", as 4x256 tables."""
    byte = np.arange(256, dtype=np.uint32)[None, :]
    v = byte << (8 * np.arange(4, dtype=np.uint32))[:, None]
    for _ in range(chunk):
        v = _zero_step(v)
    ops = [v]
    for _ in range(1, levels):
        ops.append(_apply(ops[-1], ops[-1]))
    return tuple(ops)


def _apply(op: np.ndarray, reg: np.ndarray) -> np.ndarray:
    """Apply a linear register operator given as 4x256 tables."""
    return (
        op[0][reg & np.uint32(0xFF)]
        ^ op[1][(reg >> np.uint32(8)) & np.uint32(0xFF)]
        ^ op[2][(reg >> np.uint32(16)) & np.uint32(0xFF)]
        ^ op[3][reg >> np.uint32(24)]
    )


#: Chunk size of :func:`crc32c_long` (bytes processed side by side per record).
LONG_CHUNK = 256


def crc32c_long(buf: np.ndarray, starts: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """Return the CRC32C of ``buf[s:s+n]`` for each start ``s`` and length ``n``.

    Suited to long records; all records are processed together. Keep the batch to
    a few tens of MB: it is copied into a zero-padded chunk matrix.
    """
    starts = np.asarray(starts, dtype=np.int64)
    lengths = np.asarray(lengths, dtype=np.int64)
    out = np.zeros(len(starts), dtype=np.uint32)
    short = lengths < 4
    for i in np.flatnonzero(short).tolist():
        s, n = int(starts[i]), int(lengths[i])
        out[i] = crc32c(buf[s : s + n].tobytes())
    idx = np.flatnonzero(~short)
    if not len(idx):
        return out
    c = LONG_CHUNK
    lens = lengths[idx]
    nrows = (lens + c - 1) // c
    row0 = np.concatenate(([0], np.cumsum(nrows)[:-1]))
    total = int(nrows.sum())
    mat = np.zeros(total * c, dtype=np.uint8)
    pads = nrows * c - lens
    for j, i in enumerate(idx.tolist()):
        s, n = int(starts[i]), int(lens[j])
        at = int(row0[j]) * c + int(pads[j])
        mat[at : at + n] = buf[s : s + n]
        # fold the 0xFFFFFFFF initial register into the first four bytes
        mat[at : at + 4] ^= np.uint8(0xFF)
    mat = mat.reshape(total, c)
    reg = np.zeros(total, dtype=np.uint32)
    for k in range(c):
        reg = TABLE[(reg ^ mat[:, k]) & np.uint32(0xFF)] ^ (reg >> np.uint32(8))
    # row r of record j must be advanced over (rows_j - 1 - local_r) chunks of zeros
    rec_of_row = np.repeat(np.arange(len(idx)), nrows)
    local = np.arange(total) - row0[rec_of_row]
    shift = nrows[rec_of_row] - 1 - local
    levels = max(1, int(shift.max()).bit_length())
    ops = _shift_ops(c, levels)
    for j in range(levels):
        sel = np.flatnonzero((shift >> j) & 1)
        if len(sel):
            reg[sel] = _apply(ops[j], reg[sel])
    out[idx] = np.bitwise_xor.reduceat(reg, row0) ^ np.uint32(0xFFFFFFFF)
    return out
