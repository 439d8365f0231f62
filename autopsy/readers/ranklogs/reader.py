"""The rank-log reader module interface: ``NAME``, ``sniff``, ``read``, ``read_group``.

Files are scanned one by one for small inputs, and by two worker processes when
there are several files totalling more than :data:`PARALLEL_BYTES`.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING

from autopsy.model.events import EVENT_COLUMNS, empty_events
from autopsy.model.problem import Problem
from autopsy.model.scalars import empty_scalars, make_scalars
from autopsy.readers.base import RunPart
from autopsy.readers.ranklogs.lines import looks_like_text, read_head
from autopsy.readers.ranklogs.scan import NO_RANK, FileResult, ScalarColumns, scan_file

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd

NAME = "ranklogs"

#: Scan in parallel when the files together are larger than this.
PARALLEL_BYTES = 64 << 20
#: Worker processes used for large inputs.
WORKERS = 2

_LOG_NAME = re.compile(
    r"(?:\.(?:log|out|err)|^(?:stdout|stderr)[^/]*|^slurm-[^/]*\.out)(?:\.\d+)?(?:\.gz)?$",
    re.IGNORECASE)
_TXT_NAME = re.compile(r"(?:log|rank|node|worker|stdout|stderr|out|err|train)[^/]*\.txt(?:\.gz)?$",
                       re.IGNORECASE)
_NOT_OURS = frozenset({"trainer_state.json", "config.json", "generation_config.json"})
_ERROR_JSON_HEAD = re.compile(rb'^\s*\{\s*"message"\s*:\s*[{"]')


def sniff(path: Path) -> bool:
    """Whether ``path`` is a text log or a torchelastic ``error.json``.

    Logs are recognised by name (``*.log``, ``*.out``, ``*.err``, ``stdout*``,
    ``stderr*``, ``slurm-*.out``, each maybe ``.gz``; ``*.txt`` only when the name
    says log, rank, node, worker, stdout/stderr or train, so ``notes.txt`` is not
    taken) and by first bytes that look like text. ``error.json`` files by their
    ``{"message": ...`` head.
    """
    name = path.name
    if name in _NOT_OURS:
        return False
    if name.endswith(".json"):
        return bool(_ERROR_JSON_HEAD.match(read_head(path, 256)))
    if not (_LOG_NAME.search(name) or _TXT_NAME.search(name)):
        return False
    return looks_like_text(read_head(path))


def read(path: Path, rel: str) -> RunPart:
    """Read one log file (see :func:`read_group`)."""
    return read_group([path], [rel])


def read_group(paths: list[Path], rels: list[str]) -> RunPart:
    """Read every rank's log: events, per-step scalars and problems."""
    if len(paths) != len(rels):
        raise ValueError("paths and rels differ in length")
    results = _scan_all(paths, rels)
    return RunPart(scalars=_scalars(results), events=_events(results),
                   problems=[p for r in results for p in r.problems])


def _total_size(paths: list[Path]) -> int:
    total = 0
    for p in paths:
        try:
            total += p.stat().st_size
        except OSError:
            pass
    return total


def _scan_all(paths: list[Path], rels: list[str]) -> list[FileResult]:
    if len(paths) > 1 and _total_size(paths) > PARALLEL_BYTES:
        try:
            with ProcessPoolExecutor(max_workers=WORKERS) as pool:
                return list(pool.map(scan_file, paths, rels, chunksize=1))
        except (OSError, RuntimeError):  # no processes here: fall back to one
            pass
    return [_safe_scan(p, r) for p, r in zip(paths, rels, strict=True)]


def _safe_scan(path: Path, rel: str) -> FileResult:
    try:
        return scan_file(path, rel)
    except (OSError, ValueError, MemoryError) as exc:
        out = FileResult(source=rel)
        out.problems.append(Problem(rel, f"cannot read: {type(exc).__name__}: {exc}",
                                    kind="unreadable"))
        return out


def _scalars(results: list[FileResult]) -> pd.DataFrame:
    """One scalars frame from every file's columns, built without per-file frames.

    Each file's columns are released as soon as they are gathered, so the peak is
    about the columns once plus the frame, not per-file frames plus their concat.
    """
    import numpy as np
    import pandas as pd

    tags: dict[str, int] = {}
    sources: dict[str, int] = {}
    names = ("step", "value", "wall_time", "rank", "segment")
    dtypes = (np.int64, np.float64, np.float64, np.int64, np.int64)
    parts: dict[str, list[np.ndarray]] = {k: [] for k in (*names, "tag", "source")}
    for r in results:
        cols = r.scalars
        n = len(cols)
        if not n:
            continue
        remap = np.array([tags.setdefault(t, len(tags)) for t in cols.tags], dtype=np.int32)
        parts["tag"].append(remap[np.frombuffer(cols.tag, dtype=np.int32)])
        for name, dtype in zip(names, dtypes, strict=True):
            parts[name].append(np.frombuffer(getattr(cols, name), dtype=dtype))
        parts["source"].append(np.full(n, sources.setdefault(r.source, len(sources)),
                                       dtype=np.int32))
        r.scalars = ScalarColumns()  # the views above now hold the only reference
    if not sources:
        return empty_scalars()

    def gather(name: str) -> np.ndarray:
        out = np.concatenate(parts[name]) if len(parts[name]) > 1 else parts[name][0].copy()
        parts[name].clear()
        _trim_heap()
        return out

    rank_raw = gather("rank")
    ranks = pd.array(rank_raw, dtype="Int64")
    ranks[rank_raw == NO_RANK] = pd.NA
    del rank_raw
    return make_scalars(
        gather("step"),
        pd.Categorical.from_codes(gather("tag"), categories=list(tags)),
        gather("value"),
        wall_time=gather("wall_time"), rank=ranks, segment=gather("segment"),
        source=pd.Categorical.from_codes(gather("source"), categories=list(sources)))


@lru_cache(maxsize=1)
def _malloc_trim() -> Callable[[int], int] | None:
    if not sys.platform.startswith("linux"):
        return None
    try:
        import ctypes

        return ctypes.CDLL("libc.so.6").malloc_trim  # type: ignore[no-any-return]
    except (OSError, AttributeError):  # not glibc
        return None


def _trim_heap() -> None:
    """Give the heap freed by the workers' columns back to the OS (glibc only).

    The columns arrive as many small arrays on the C heap; numpy's large arrays are
    mapped elsewhere and cannot reuse that space, so without this the freed columns
    stay in the peak RSS while the frame is built (about 65 MB at 768k points).
    """
    trim = _malloc_trim()
    if trim is not None:
        trim(0)


def _events(results: list[FileResult]) -> pd.DataFrame:
    import pandas as pd

    rows = [e for r in results for e in r.events]
    if not rows:
        return empty_events()
    cols = list(EVENT_COLUMNS)
    frame = pd.DataFrame(rows, columns=cols)
    for col, dtype in EVENT_COLUMNS.items():
        if col != "details":
            frame[col] = frame[col].astype(dtype)
    return frame
