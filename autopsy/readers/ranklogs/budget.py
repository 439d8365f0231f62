"""Bounded memory for the per-step metrics of rank logs: a point budget and thinning.

The rank logs of a long job on many ranks can hold more metric lines than fit in
memory (100 GB of logs at one metric line in a hundred is about 30 million
points). The reader keeps at most :func:`max_points` points (750,000 unless
``AUTOPSY_MAX_POINTS`` says otherwise); below the budget every point is kept, as
the run model promises.

Above it, series are *thinned*, never cut: a series is the points of one
``(rank, tag, segment)`` in file order; one thinning pass splits it into buckets
of :data:`BUCKET` consecutive points and keeps, per bucket, the point with the
lowest and the one with the highest value (NaN counting as highest), plus every
point where the series turns non-finite and the first and last point of the
series. A pass halves a series (about), a spike or a dip survives any number of
passes, every first NaN keeps its exact step, and the first and last logged
steps stay. The reader records a ``thinned`` problem per
file that lost points, with how many it kept.

Within a file (:class:`StreamThinner` in the scanner), points arrive in order:
once a file passes the budget, everything it holds is thinned one level and new
points are thinned to the same level as they arrive, so the density stays
uniform along the run. Across files (the main process), the file holding the
most points is thinned until the total is back under the budget, so files end up
with about equal shares.
"""

from __future__ import annotations

import os

import numpy as np

from autopsy.readers.ranklogs.compiled import compiled

#: Environment variable overriding the point budget.
ENV = "AUTOPSY_MAX_POINTS"
#: Points kept in memory (all files together) unless :data:`ENV` says otherwise.
DEFAULT_MAX_POINTS = 750_000
#: The smallest budget accepted (a lower one would thin small runs for nothing).
MIN_POINTS = 10_000
#: Consecutive points of a series one thinning pass reduces to their min and max (the
#: compiled pass in ``_shapematch.c`` has the same constant).
BUCKET = 4
#: The compiled pass keeps one state per possible series number; above this many, the
#: series are numbered by ``np.unique`` instead (a sort, for rare keys spread that wide).
_DIRECT_SERIES = 1 << 16


def max_points() -> int:
    """The point budget: :data:`ENV` if it holds an integer >= :data:`MIN_POINTS`."""
    raw = os.environ.get(ENV, "").strip().replace("_", "")
    if raw.isdigit():
        return max(int(raw), MIN_POINTS)
    return DEFAULT_MAX_POINTS


def thin_mask(rank: np.ndarray, tag: np.ndarray, segment: np.ndarray,
              value: np.ndarray) -> np.ndarray:
    """Which points one thinning pass keeps (a boolean mask in the input's order).

    Series are the runs of equal ``(rank, tag, segment)``, in input order within
    each; see the module docstring for what a pass keeps. Linear in the points
    where the series keys are small integers (a radix sort, then per-bucket
    reductions), which they are for the points of one file.
    """
    n = len(value)
    if n <= BUCKET:
        return np.ones(n, dtype=bool)
    native = getattr(compiled(), "thin_keep", None)  # None: not built, or built before it
    if native is not None:
        keys, nseries = _series_keys(rank, tag, segment)
        out = np.zeros(n, dtype=np.uint8)
        native(keys, np.ascontiguousarray(value, dtype=np.float64), nseries, out)
        return out.view(bool)
    order = _series_order(rank, tag, segment)
    r, t, s = rank[order], tag[order], segment[order]
    v = np.asarray(value, dtype=np.float64)[order]
    new = np.empty(n, dtype=bool)
    new[0] = True
    new[1:] = (r[1:] != r[:-1]) | (t[1:] != t[:-1]) | (s[1:] != s[:-1])
    starts = np.flatnonzero(new)
    group = np.cumsum(new) - 1
    pos = np.arange(n) - starts[group]
    edge = new | (pos % BUCKET == 0)  # the first point of each bucket
    first = np.flatnonzero(edge)
    bucket = np.cumsum(edge) - 1
    nan = np.isnan(v)
    w = np.where(nan, np.inf, v)
    low = np.minimum.reduceat(w, first)[bucket]
    high = np.maximum.reduceat(w, first)[bucket]
    has_nan = np.logical_or.reduceat(nan, first)[bucket]
    all_nan = np.logical_and.reduceat(nan, first)[bucket]
    # lowest: the first point at the bucket's minimum (NaN only in an all-NaN bucket);
    # highest: the last NaN of a bucket holding one, else the last point at its maximum
    keep = np.zeros(n, dtype=bool)
    keep[_firsts(np.flatnonzero((w == low) & (~nan | all_nan)), bucket)] = True
    keep[_lasts(np.flatnonzero(np.where(has_nan, nan, w == high)), bucket)] = True
    bad = ~np.isfinite(v)
    prev_bad = np.empty(n, dtype=bool)
    prev_bad[0] = False
    prev_bad[1:] = bad[:-1] & ~new[1:]
    keep |= bad & ~prev_bad  # where a series turns non-finite
    keep[starts] = True
    keep[np.append(starts[1:] - 1, n - 1)] = True
    mask = np.empty(n, dtype=bool)
    mask[order] = keep
    return mask


def _packed_key(rank: np.ndarray, tag: np.ndarray,
                segment: np.ndarray) -> tuple[np.ndarray, int] | None:
    """``(rank, tag, segment)`` packed into one int64 per point, ordered by rank, then tag,
    then segment, with the number of possible keys; None when they do not fit in 62 bits."""
    key = np.zeros(len(rank), dtype=np.int64)
    span = 1
    for col in (segment, tag, rank):  # least significant first
        col = np.asarray(col, dtype=np.int64)
        low, high = int(col.min()), int(col.max())
        width = high - low + 1
        if span * width >= 2 ** 62:
            return None
        key += (col - low) * span
        span *= width
    return key, span


def _series_keys(rank: np.ndarray, tag: np.ndarray,
                 segment: np.ndarray) -> tuple[np.ndarray, int]:
    """Each point's series as a number from 0 (int64), and how many numbers there are
    (for the compiled pass, which keeps one state per number)."""
    packed = _packed_key(rank, tag, segment)
    if packed is not None and packed[1] <= _DIRECT_SERIES:
        return packed
    stacked = np.stack([np.asarray(c, dtype=np.int64) for c in (rank, tag, segment)], axis=1)
    _, inverse = np.unique(stacked, axis=0, return_inverse=True)
    inverse = np.ascontiguousarray(inverse.reshape(-1), dtype=np.int64)
    return inverse, int(inverse.max()) + 1


def _series_order(rank: np.ndarray, tag: np.ndarray, segment: np.ndarray) -> np.ndarray:
    """A stable order grouping equal ``(rank, tag, segment)`` keys (series in order of
    rank, tag, segment; points in input order within each)."""
    packed = _packed_key(rank, tag, segment)
    if packed is None:
        return np.lexsort((np.arange(len(rank)), segment, tag, rank))
    key, span = packed
    if span <= 2 ** 16:  # numpy's stable sort of 16-bit keys is a radix sort
        return np.argsort(key.astype(np.uint16), kind="stable")
    return np.argsort(key, kind="stable")


def _firsts(idx: np.ndarray, bucket: np.ndarray) -> np.ndarray:
    """Of the sorted positions ``idx``, the first one of each bucket."""
    b = bucket[idx]
    lead = np.empty(len(idx), dtype=bool)
    lead[:1] = True
    lead[1:] = b[1:] != b[:-1]
    return idx[lead]


def _lasts(idx: np.ndarray, bucket: np.ndarray) -> np.ndarray:
    """Of the sorted positions ``idx``, the last one of each bucket."""
    b = bucket[idx]
    tail = np.empty(len(idx), dtype=bool)
    tail[-1:] = True
    tail[:-1] = b[1:] != b[:-1]
    return idx[tail]


def thin_columns(cols: dict[str, np.ndarray], passes: int = 1) -> dict[str, np.ndarray]:
    """Columns (``step``, ``tag``, ``value``, ``wall_time``, ``rank``, ``segment``)
    after ``passes`` thinning passes; the input arrays are not modified."""
    for _ in range(passes):
        if len(cols["value"]) <= BUCKET:
            break
        mask = thin_mask(cols["rank"], cols["tag"], cols["segment"], cols["value"])
        if mask.all():
            break
        keep = np.flatnonzero(mask)  # one index array: faster than 6 boolean selections
        cols = {name: col[keep] for name, col in cols.items()}
    return cols
