"""Benchmark: ``autopsy fleet`` over 1,000 runs, sequential vs local pool vs Dask LocalCluster,
and a re-run with a warm cache.

The fleet (in ``bench/out/fleet/``, git-ignored) is ``--runs`` copies drawn in turn from the
runs of ``sample_runs/`` and the public corpus's dev half (real and made runs of every
format autopsy reads). Each mode is one fresh driver process calling
:func:`autopsy.fleet.driver.run_fleet`, which reports its wall time and its own peak RSS
(the driver's: workers are separate processes). Figures under ``## Fleet`` of
``docs/performance.md``.

Usage: ``python bench/fleet.py [--runs 1000] [--jobs 2] [--no-write]``
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import subprocess
import sys
from pathlib import Path

from corpus_stats import split_of
from docfile import DOC, update_section

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "bench" / "out" / "fleet"
SAMPLES = ROOT / "sample_runs"
HEADING = "## Fleet"

_DRIVE = """
import json, resource, sys, time
from pathlib import Path
from autopsy.fleet.cache import Cache
from autopsy.fleet.driver import run_fleet
root, jobs, dask, cache = sys.argv[1], int(sys.argv[2]), sys.argv[3] or None, sys.argv[4]
start = time.perf_counter()
got = run_fleet([Path(root)], jobs=jobs, dask=dask, cache=Cache(Path(cache) if cache else None))
wall = time.perf_counter() - start
errors = sum(1 for r in got.rows if r["error"])
print(json.dumps({"wall": wall, "rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
                  / 1024, "runs": len(got.rows), "diagnosed": got.diagnosed,
                  "cached": got.cached, "errors": errors}))
"""


def build(runs: int) -> Path:
    """``runs`` copies, in turn, of the sample and public dev runs."""
    root = OUT / "runs"
    if root.exists():
        shutil.rmtree(root)
    sources = [p for p in sorted(SAMPLES.iterdir()) if p.is_dir() and p.name != "public"
               and not p.name.startswith((".", "_"))]
    sources += [p for p in sorted((SAMPLES / "public").iterdir())
                if p.is_dir() and split_of(p.name) == "dev"]
    for i in range(runs):
        src = sources[i % len(sources)]
        shutil.copytree(src, root / f"batch{i // len(sources)}" / src.name, symlinks=True)
    return root


def drive(root: Path, jobs: int, dask: str = "", cache: Path | None = None) -> dict[str, float]:
    """One driver process; its figures."""
    done = subprocess.run([sys.executable, "-c", _DRIVE, str(root), str(jobs), dask,
                           str(cache) if cache else ""], capture_output=True, text=True,
                          check=True, env={**os.environ, "PYTHONWARNINGS": "ignore"})
    return json.loads(done.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=1000)
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 2)
    parser.add_argument("--no-write", action="store_true")
    ns = parser.parse_args(argv)
    root = build(ns.runs)
    cache = OUT / "cache"
    if cache.exists():
        shutil.rmtree(cache)
    rows = []
    for name, jobs, dask, with_cache in (
            ("sequential (-j 1, in the driver)", 1, "", None),
            (f"local process pool (-j {ns.jobs})", ns.jobs, "", cache),
            (f"Dask LocalCluster ({ns.jobs} workers)", ns.jobs, "local", None),
            (f"re-run, warm cache (-j {ns.jobs})", ns.jobs, "", cache)):
        got = drive(root, jobs, dask, with_cache)
        rows.append((name, got))
        print(name, got, flush=True)
    lines = [
        f"`python bench/fleet.py --runs {ns.runs} --jobs {ns.jobs}`: {ns.runs:,} runs (copies "
        "of `sample_runs/` and the public dev half: event files, HF Trainer states, rank "
        "logs, checkpoints, tables), one fresh driver process per mode; "
        f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}.",
        "",
        "| mode | wall | runs/s | driver peak RSS | diagnosed | from cache | errors |",
        "|---|---|---|---|---|---|---|",
        *(f"| {name} | {g['wall']:.1f} s | {g['runs'] / g['wall']:.1f} | {g['rss_mb']:.0f} MB"
          f" | {g['diagnosed']:,} | {g['cached']:,} | {g['errors']:,} |" for name, g in rows),
        "",
        "The warm re-run only stats every file of every run (the cache key) and reads the "
        "stored rows and reports back. The Dask figure includes starting the LocalCluster.",
    ]
    body = "\n".join(lines)
    print(body)
    if not ns.no_write:
        update_section(DOC, HEADING, body)
        print(f"wrote {DOC.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
