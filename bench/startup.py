"""Time ``autopsy --help``, each command's ``--help`` and ``autopsy rules`` whole-process.

The goal (issue 2): each returns in under 0.3 s, because nothing heavy is imported
at start-up. Writes the figures into ``docs/performance.md`` under ``## Start-up``.

Usage: ``python bench/startup.py [--runs 15] [--no-write]``
"""

from __future__ import annotations

import argparse
import platform
import shutil
import statistics
import subprocess
import sys
import time

from docfile import DOC, update_section

HEADING = "## Start-up"


def time_command(cmd: list[str], runs: int) -> list[float]:
    """Whole-process wall times of ``cmd`` over ``runs`` runs (after one warm-up)."""
    subprocess.run(cmd, capture_output=True, check=True)
    out = []
    for _ in range(runs):
        t0 = time.perf_counter()
        subprocess.run(cmd, capture_output=True, check=True)
        out.append(time.perf_counter() - t0)
    return out


def main() -> None:
    """Run the benchmark and write the table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--no-write", action="store_true")
    args = parser.parse_args()
    exe = shutil.which("autopsy")
    base = [exe] if exe else [sys.executable, "-m", "autopsy"]
    rows = []
    for extra in (["--help"], ["analyze", "--help"], ["timeline", "--help"], ["rules"]):
        times = time_command(base + extra, args.runs)
        rows.append((" ".join(["autopsy", *extra]), statistics.median(times), max(times)))
    floor = statistics.median(time_command([sys.executable, "-c", "pass"], args.runs))
    lines = [
        f"`python bench/startup.py --runs {args.runs}`: whole-process wall time of the "
        f"installed console script, median and worst of {args.runs} runs after a warm-up "
        f"({platform.python_version()}, {platform.machine()}). Goal: under 0.3 s.",
        "",
        "| command | median | worst |",
        "|---|---|---|",
        *[f"| `{name}` | {med:.3f} s | {worst:.3f} s |" for name, med, worst in rows],
        f"| `python -c pass` (the interpreter's own floor) | {floor:.3f} s | |",
    ]
    body = "\n".join(lines)
    print(body)
    if not args.no_write:
        update_section(DOC, HEADING, body)


if __name__ == "__main__":
    main()
