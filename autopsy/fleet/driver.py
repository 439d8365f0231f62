"""The fleet's driver: find the runs, take what the cache has, diagnose the rest, gather.

:func:`run_fleet` is the library entry point of ``autopsy fleet`` (see docs/fleet.md).
"""

from __future__ import annotations

import csv
import json
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from autopsy.errors import UsageError
from autopsy.fleet.cache import Cache, run_key
from autopsy.fleet.discover import find_runs
from autopsy.fleet.execute import run_all


@dataclass
class FleetResult:
    """Every run's row and JSON report (None where autopsy could not make one), in path
    order, with how many came from the cache."""

    rows: list[dict[str, Any]] = field(default_factory=list)
    reports: list[dict[str, Any] | None] = field(default_factory=list)
    cached: int = 0
    diagnosed: int = 0


def read_hosts(path: Path) -> dict[str, list[str]]:
    """A scheduler's host map: CSV rows of ``path,host`` (a header row is allowed; several
    rows per run for several hosts). Paths are as the table writes them (relative to their
    root) or absolute."""
    hosts: dict[str, list[str]] = {}
    try:
        with open(path, encoding="utf-8", newline="") as fh:
            for row in csv.reader(fh):
                if len(row) < 2 or row[0].strip().lower() == "path":
                    continue
                hosts.setdefault(row[0].strip().rstrip("/"), []).append(row[1].strip())
    except (OSError, UnicodeDecodeError, csv.Error) as exc:
        raise UsageError(f"--hosts {path}: cannot read it: {exc}") from exc
    return hosts


def run_fleet(roots: list[Path], *, jobs: int = 0, dask: str | None = None,
              cache: Cache | None = None, sets: tuple[str, ...] = (),
              timeout: float | None = None, hosts: dict[str, list[str]] | None = None,
              progress: Callable[[int, int], None] | None = None) -> FleetResult:
    """Diagnose every run under ``roots`` (see the module docstring).

    ``jobs``: local worker processes (0: one per core); ``dask``: a scheduler address or
    ``"local"``; ``cache``: where results are kept between fleets; ``sets``: rule
    settings (``CODE.name=value``); ``timeout``: seconds per run; ``hosts``: a host map
    (:func:`read_hosts`) added to the hosts the logs name.

    Raises:
        UsageError: a root does not exist, or no run was found under the roots.
    """
    for root in roots:
        if not root.exists():
            raise UsageError(f"no such file or directory: {root}")
    found = find_runs(roots)
    if not found:
        raise UsageError(f"no run found under {', '.join(map(str, roots))} (a run is a "
                         "folder with files autopsy reads: see docs/fleet.md)")
    cache = cache or Cache(None)
    result = FleetResult(rows=[{}] * len(found), reports=[None] * len(found))
    keys = [run_key(path, sets) for _, path in found]
    todo: list[int] = []
    for i, key in enumerate(keys):
        hit = cache.get(key)
        if hit is not None:
            result.rows[i], result.reports[i] = hit["row"], hit.get("report")
            result.cached += 1
        else:
            todo.append(i)
    workers = jobs or os.cpu_count() or 1
    done = result.cached
    for j, got in run_all([found[i] for i in todo], workers=workers, dask=dask, sets=sets,
                          timeout=timeout):
        i = todo[j]
        result.rows[i], result.reports[i] = got["row"], got["report"]
        cache.put(keys[i], got)
        result.diagnosed += 1
        done += 1
        if progress is not None:
            progress(done, len(found))
    if hosts:
        for (_root, path), row in zip(found, result.rows, strict=True):
            extra = hosts.get(row["path"].rstrip("/")) or hosts.get(str(path).rstrip("/")) \
                or hosts.get(str(path.resolve()).rstrip("/")) or []
            row["hosts"] = list(dict.fromkeys([*row["hosts"], *extra]))
    return result


def write_reports(result: FleetResult, folder: Path) -> None:
    """Each run's JSON report as ``FOLDER/<path with / as __>.json`` (prefixed by its root's
    name and number when the fleet has several roots, which may hold the same paths)."""
    folder.mkdir(parents=True, exist_ok=True)
    roots = list(dict.fromkeys(row["root"] for row in result.rows))
    for row, report in zip(result.rows, result.reports, strict=True):
        if report is None:
            continue
        name = row["path"].replace("/", "__") or "run"
        if len(roots) > 1:
            name = f"{roots.index(row['root'])}_{Path(row['root']).name}__{name}"
        with open(folder / f"{name}.json", "w", encoding="utf-8") as fh:
            json.dump(report, fh, indent=2, allow_nan=False, ensure_ascii=False)
            fh.write("\n")
