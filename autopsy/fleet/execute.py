"""Where the runs of a fleet are diagnosed: a local process pool, or a Dask cluster.

Each run is one task (:func:`autopsy.fleet.task.diagnose_one`). The local pool
(``concurrent.futures.ProcessPoolExecutor``, ``--jobs``) needs nothing beyond autopsy;
``--dask ADDRESS`` submits to an existing ``distributed`` scheduler and ``--dask local``
starts a ``distributed.LocalCluster`` (the ``fleet`` extra: ``pip install
'train-autopsy[fleet]'``). Results come back as they finish.

The per-run time limit is enforced where the run is diagnosed: by a timer signal in a
local pool worker (or the calling process), and in a Dask worker's task thread by raising
the timeout in that thread (see :func:`autopsy.fleet.task._time_limit`).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from pathlib import Path
from typing import Any

from autopsy.errors import UsageError
from autopsy.fleet.task import diagnose_one, empty_row


def _local(jobs: list[tuple[Path, Path]], workers: int, sets: tuple[str, ...],
           timeout: float | None) -> Iterator[tuple[int, dict[str, Any]]]:
    """The local pool. A worker killed by the OS (a host OOM kill, a segfault in a native
    library) breaks the whole pool and fails every run still in it; those runs are then
    diagnosed again one by one, each in a pool of its own, so only the run that kills its
    worker gets a row with the error."""
    import multiprocessing
    from concurrent.futures.process import BrokenProcessPool

    context = multiprocessing.get_context("fork" if os.name == "posix" else "spawn")
    broken: list[int] = []
    with ProcessPoolExecutor(max_workers=workers, mp_context=context) as pool:
        pending = {pool.submit(diagnose_one, str(root), str(path), sets, timeout): i
                   for i, (root, path) in enumerate(jobs)}
        while pending:
            done, _ = wait(pending, return_when=FIRST_COMPLETED)
            for future in done:
                i = pending.pop(future)
                if isinstance(future.exception(), BrokenProcessPool):
                    broken.append(i)
                    continue
                yield i, _result(future, jobs[i])
    for i in sorted(broken):
        root, path = jobs[i]
        with ProcessPoolExecutor(max_workers=1, mp_context=context) as alone:
            future = alone.submit(diagnose_one, str(root), str(path), sets, timeout)
            wait([future])
            yield i, _result(future, jobs[i])


def _result(future: Any, job: tuple[Path, Path]) -> dict[str, Any]:
    """A finished future's result; a task that raised (a worker killed by the OS, for
    one) is a row with the error."""
    try:
        result = future.result()
    except Exception as exc:  # the worker died: that run's row says so
        row = empty_row(*job)
        row["error"] = f"worker failed: {type(exc).__name__}: {str(exc)[:200]}"
        return {"row": row, "report": None}
    return result  # type: ignore[no-any-return]


def _dask(jobs: list[tuple[Path, Path]], address: str, workers: int, sets: tuple[str, ...],
          timeout: float | None) -> Iterator[tuple[int, dict[str, Any]]]:
    try:
        from distributed import Client, LocalCluster, as_completed
    except ImportError as exc:
        raise UsageError("--dask needs Dask distributed: pip install "
                         "'train-autopsy[fleet]'") from exc
    cluster = None
    if address == "local":
        cluster = LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                               dashboard_address=None)
        client = Client(cluster)
    else:
        try:
            client = Client(address, timeout=30)
        except OSError as exc:
            raise UsageError(f"cannot reach the Dask scheduler at {address}: {exc}") from exc
    try:
        futures = {client.submit(diagnose_one, str(root), str(path), sets, timeout,
                                 pure=False): i for i, (root, path) in enumerate(jobs)}
        for future in as_completed(futures):
            i = futures[future]
            yield i, _result(future, jobs[i])
    finally:
        client.close()
        if cluster is not None:
            cluster.close()


def run_all(jobs: list[tuple[Path, Path]], *, workers: int, dask: str | None = None,
            sets: tuple[str, ...] = (), timeout: float | None = None
            ) -> Iterator[tuple[int, dict[str, Any]]]:
    """Diagnose every ``(root, run)`` of ``jobs``; yield ``(index, result)`` as each ends."""
    if not jobs:
        return iter(())
    if dask:
        return _dask(jobs, dask, workers, sets, timeout)
    if workers <= 1:
        return ((i, diagnose_one(str(r), str(p), sets, timeout))
                for i, (r, p) in enumerate(jobs))
    return _local(jobs, workers, sets, timeout)
