"""The rank-log reader module interface: ``NAME``, ``sniff``, ``read``, ``read_group``.

Files are scanned one by one for small inputs, and by two worker processes when
there are several files totalling more than :data:`PARALLEL_BYTES`.
"""

from __future__ import annotations

import re
import sys
from collections import deque
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ProcessPoolExecutor
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from autopsy.model.events import events_frame
from autopsy.model.problem import Problem
from autopsy.model.scalars import empty_scalars, make_scalars
from autopsy.readers.base import RunPart
from autopsy.readers.progress import report
from autopsy.readers.ranklogs.budget import ENV, max_points, thin_columns
from autopsy.readers.ranklogs.lines import looks_like_text, read_head
from autopsy.readers.ranklogs.scan import NO_RANK, FileResult, ScalarColumns, scan_file
from autopsy.readers.registry import Format

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd

NAME = "ranklogs"
_TEXT = ("scalars", "events")
FORMATS = (
    Format("hf_trainer_stdout", "HF Trainer console: {'loss': ...} dicts, tqdm bars", _TEXT,
           "train.log"),
    Format("megatron_log", "Megatron-LM iteration lines (iteration N/M | lm loss: ...)", _TEXT,
           "train.log"),
    Format("deepspeed_log", "DeepSpeed step=N, skipped=M lines, pipeline steps: N loss: X, "
           "OVERFLOW! messages", _TEXT, "train.log"),
    Format("fairseq_log", "fairseq | epoch 001 | loss ... and train_inner key=value lines",
           _TEXT, "train.log"),
    Format("mmengine_log", "mmengine/mmdetection/mmcv Epoch(train) [e][i/n] ... loss: X", _TEXT,
           "work_dirs/<exp>/20230101_120000.log"),
    Format("detectron2_log", "detectron2 iter: N  total_loss: X ... lr: ...", _TEXT, "log.txt"),
    Format("nemo_log", "NeMo / Lightning tqdm bars with a loss=... postfix", _TEXT,
           "nemo_log_globalrank-0_localrank-0.txt"),
    Format("lightning_stdout", "Lightning progress bars (Epoch N: ... loss=X, v_num=...)",
           _TEXT, "train.log"),
    Format("nanotron_log", "nanotron iteration: N / M | ... | lm_loss: X", _TEXT, "train.log"),
    Format("torchtitan_log", "torchtitan step: N  loss: X  memory: ...  tps: ...", _TEXT,
           "train.log"),
    Format("tf_log", "TensorFlow / absl loss = X, step = N", _TEXT, "train.log"),
    Format("caffe_log", "Caffe glog Iteration N, loss = X; Test net output", _TEXT,
           "caffe.INFO.log"),
    Format("keras_stdout", "Keras Epoch N/M and progress lines (- loss: X - val_loss: Y)",
           _TEXT, "train.log"),
    Format("tqdm_log", "a plain loop's tqdm bars with a loss=... postfix", _TEXT, "train.log"),
    Format("mxnet_log", "MXNet Module.fit (Epoch[e] Batch [b] Speed: ... name=value, "
           "Train-/Validation- lines) and GluonCV ([Epoch e][Batch b] ...) logs", _TEXT,
           "train.log"),
    Format("paddle_log", "PaddleClas [Train][Epoch e/E][Iter: i/n], PaddleDetection Epoch: [e] "
           "[i/n], PaddleOCR epoch: [e/E], iter: N and PaddleSeg [TRAIN] lines (reader_cost, "
           "batch_cost, ips)", _TEXT, "output/train.log"),
    Format("generic_log", "step/iter/epoch N ... loss X lines of any other loop", _TEXT,
           "train.log"),
    Format("pytorch_traceback", "Python tracebacks, CUDA OOM and error messages", ("events",),
           "train.log"),
    Format("torchrun_log", "torchrun / torchelastic output: [rankN]: prefixes, ChildFailedError,"
           " per-rank --log-dir files, error.json", _TEXT, "logs/<id>/attempt_0/0/stderr.log"),
    Format("nccl_log", "NCCL / ProcessGroupNCCL / gloo messages (watchdog timeouts, NCCL WARN)",
           ("events",), "rank0.log"),
    Format("slurm_log", "slurm output: srun: error:, CANCELLED ... DUE TO TIME LIMIT",
           _TEXT, "slurm-12345.out"),
)

#: Scan in parallel when the files together are larger than this.
PARALLEL_BYTES = 64 << 20
#: Worker processes used for large inputs.
WORKERS = 2
#: A file's share of the point budget is never below this (a job of a thousand ranks still
#: keeps a usable curve per rank); past its share, a file's points are thinned as it is read,
#: so a worker never sends the whole budget for one file.
MIN_FILE_POINTS = 20_000
#: Files in flight per worker (finished results wait at most this long to be merged).
FLIGHT = 2

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
    """Read every rank's log: events, per-step scalars and problems.

    Files are consumed one at a time as they are scanned; their metric points go
    into a :class:`_Gather` that keeps the total under the point budget
    (:mod:`.budget`), so memory stays bounded whatever the number and size of
    the files.
    """
    if len(paths) != len(rels):
        raise ValueError("paths and rels differ in length")
    gather = _Gather(max_points())
    rows: list[Any] = []
    problems: list[Problem] = []
    sizes = [_size(p) for p in paths]
    total, done = sum(sizes), 0
    cap = max(gather.budget // max(1, len(paths)), MIN_FILE_POINTS)
    for i, result in enumerate(_scan_all(paths, rels, cap)):
        done += sizes[i]
        report("reading rank logs", done, total)
        gather.add(result)
        rows.extend(result.events)
        problems.extend(result.problems)
    problems.extend(gather.problems())
    return RunPart(scalars=gather.frame(), events=events_frame(rows), problems=problems)


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


def _total_size(paths: list[Path]) -> int:
    return sum(_size(p) for p in paths)


def _scan_all(paths: list[Path], rels: list[str], cap: int | None = None
              ) -> Iterator[FileResult]:
    """Every file's result, in the order given; in worker processes for large inputs.

    At most ``FLIGHT × WORKERS`` files are in flight, so finished results never pile up
    while an earlier, larger file is still being scanned.
    """
    if len(paths) > 1 and _total_size(paths) > PARALLEL_BYTES:
        try:
            pool = ProcessPoolExecutor(max_workers=WORKERS)
        except (OSError, RuntimeError, NotImplementedError):  # no processes here
            pool = None
        if pool is not None:
            yield from _in_pool(pool, paths, rels, cap)
            return
    for p, r in zip(paths, rels, strict=True):
        yield _safe_scan(p, r, cap)


def _in_pool(pool: ProcessPoolExecutor, paths: list[Path], rels: list[str],
             cap: int | None = None) -> Iterator[FileResult]:
    todo = iter(zip(paths, rels, strict=True))
    flight: deque[tuple[Path, str, Future[FileResult] | None]] = deque()
    broken = False

    def submit() -> bool:
        nonlocal broken
        job = next(todo, None)
        if job is None:
            return False
        future = None
        if not broken:
            try:
                future = pool.submit(scan_file, *job, cap)
            except (OSError, RuntimeError):  # the pool broke: scan here from now on
                broken = True
        flight.append((*job, future))
        return True

    with pool:
        for _ in range(FLIGHT * WORKERS):
            if not submit():
                break
        while flight:
            path, rel, future = flight.popleft()
            result = None
            if future is not None:
                try:
                    result = future.result()
                except (OSError, RuntimeError, MemoryError):  # a dead worker
                    broken = True
                except ValueError:  # scanned again here, where _safe_scan records it
                    pass
            yield result if result is not None else _safe_scan(path, rel, cap)
            submit()


def _safe_scan(path: Path, rel: str, cap: int | None = None) -> FileResult:
    try:
        return scan_file(path, rel, cap)
    except (OSError, ValueError, MemoryError) as exc:
        out = FileResult(source=rel)
        out.problems.append(Problem(rel, f"cannot read: {type(exc).__name__}: {exc}",
                                    kind="unreadable"))
        return out


_NAMES = ("step", "value", "wall_time", "rank", "segment", "tag")


class _Gather:
    """Every file's metric points as numpy columns, kept under a point budget.

    When the total passes the budget, the file holding the most points is thinned
    (:func:`.budget.thin_columns`) until the total is back under it, so files end
    with about equal shares and a spike or a NaN survives in each.
    """

    def __init__(self, budget: int) -> None:
        self.budget = budget
        self.tags: dict[str, int] = {}
        self.sources: dict[str, int] = {}
        self.files: list[tuple[str, dict[str, Any], int]] = []
        self.total = 0

    def add(self, result: FileResult) -> None:
        """Take a file's points (the result's columns are released)."""
        import numpy as np

        cols = result.scalars
        result.scalars = ScalarColumns(cap=0)
        if not len(cols):
            return
        arrays = cols.arrays()
        remap = np.array([self.tags.setdefault(t, len(self.tags)) for t in cols.tags],
                         dtype=np.int32)
        arrays["tag"] = remap[arrays["tag"]]
        self.sources.setdefault(result.source, len(self.sources))
        self.files.append((result.source, arrays, cols.raw))
        self.total += len(arrays["value"])
        del cols
        while self.total > self.budget:
            i = max(range(len(self.files)), key=lambda k: len(self.files[k][1]["value"]))
            source, arrays, raw = self.files[i]
            thinner = thin_columns(arrays)
            if len(thinner["value"]) == len(arrays["value"]):
                break  # nothing left to thin: more series than the budget has points
            self.files[i] = (source, thinner, raw)
            self.total -= len(arrays["value"]) - len(thinner["value"])

    def problems(self) -> list[Problem]:
        """A ``thinned`` problem for each file that kept fewer points than it had."""
        out = []
        for source, arrays, raw in self.files:
            kept = len(arrays["value"])
            if kept < raw:
                out.append(Problem(
                    source, f"{raw:,} metric points, more than the budget of "
                    f"{self.budget:,} ({ENV}) allows with the other files: {kept:,} kept",
                    used="per 4 consecutive points of a series the lowest and highest, every "
                    "first non-finite point, the first and last step", kind="thinned",
                    count=raw - kept))
        return out

    def frame(self) -> pd.DataFrame:
        """One scalars frame of every file's kept points."""
        import numpy as np
        import pandas as pd

        if not self.files:
            return empty_scalars()
        parts: dict[str, list[Any]] = {k: [] for k in (*_NAMES, "source")}
        for source, arrays, _raw in self.files:
            for name in _NAMES:
                parts[name].append(arrays[name])
            parts["source"].append(np.full(len(arrays["value"]), self.sources[source],
                                           dtype=np.int32))
        self.files = []

        def gather(name: str) -> Any:
            out = np.concatenate(parts[name]) if len(parts[name]) > 1 else parts[name][0]
            parts[name].clear()
            _trim_heap()
            return out

        rank_raw = gather("rank")
        ranks = pd.array(rank_raw, dtype="Int64")
        ranks[rank_raw == NO_RANK] = pd.NA
        del rank_raw
        return make_scalars(
            gather("step"),
            pd.Categorical.from_codes(gather("tag"), categories=list(self.tags)),
            gather("value"),
            wall_time=gather("wall_time"), rank=ranks, segment=gather("segment"),
            source=pd.Categorical.from_codes(gather("source"), categories=list(self.sources)))


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

