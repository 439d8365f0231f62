"""Benchmark: metric-dense text logs (every line a step line), whole-process.

Generates (cached in ``bench/out/textlog/``, git-ignored) logs in which every line is a
metric line, as real jobs print them: a generic ``logging`` line (``2026-11-22 16:34:23,962
INFO step N loss X lr Y grad_norm Z tokens_per_sec W``, 119 bytes), a Megatron-LM
``iteration N/M | ... | lm loss: ...`` line (311 bytes), an mmengine ``Epoch(train)
[e][i/n] ...`` line (231 bytes), and a file holding one line of ``--long-mb`` MB (a dumped
tensor or a progress bar never ended with a newline). Then times ``autopsy analyze FILE
--format json`` (median of ``--runs`` after a warm-up, page cache warm) and measures the
process tree's peak RSS (VmHWM, polled from ``/proc``), with the ripgrep fast path and
without it (``AUTOPSY_RANKLOGS_SEARCH=python``). Checks that every step line gave its loss
point (counted with the point budget lifted; the timed runs keep the default budget of
750,000 points, so a log of more is thinned as ``docs/readers.md`` says). Figures go to
``docs/performance.md`` under ``## Metric-dense text logs``.

Usage: ``python bench/textlog.py [--mb 100] [--long-mb 800] [--runs 3] [--no-write]``
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import shutil
import statistics
import subprocess
import sys
from pathlib import Path

from docfile import DOC, update_section
from ranklogs import run_measured

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "bench" / "out" / "textlog"


def _generic(step: int, rng: random.Random) -> str:
    return (f"2026-11-22 16:{(step // 60) % 60:02d}:{step % 60:02d},962 INFO step {step} loss "
            f"{2.5 * 0.9999 ** step + rng.random() * 0.01:.4f} lr {1e-4:.6f} grad_norm "
            f"{1 + rng.random():.4f} tokens_per_sec {12000 + rng.random() * 100:.1f}\n")


def _megatron(step: int, rng: random.Random) -> str:
    return (f" iteration {step:>8}/  500000 | consumed samples:     {step * 512:>9} | elapsed "
            f"time per iteration (ms): {450 + rng.random() * 10:.1f} | learning rate: "
            f"{3e-4:.3E} | global batch size:   512 | lm loss: "
            f"{2.5 * 0.9999 ** step + rng.random() * 0.01:.6E} | loss scale: 65536.0 | grad "
            f"norm: {1 + rng.random():.3f} | number of skipped iterations:   0 | number of nan "
            f"iterations:   0 |\n")


def _mmengine(step: int, rng: random.Random) -> str:
    epoch, i = step // 735 + 1, step % 735 + 1
    return (f"2023/03/01 12:00:00 - mmengine - INFO - Epoch(train)  [{epoch}][{i:>3}/735]  "
            f"lr: 2.0000e-04  eta: 1:23:45  time: {0.5 + rng.random() * 0.01:.4f}  data_time: "
            f"{0.01 + rng.random() * 0.001:.4f}  memory: 3456  grad_norm: {1 + rng.random():.4f}"
            f"  loss: {2.5 * 0.9999 ** step:.4f}  loss_cls: {rng.random():.4f}\n")


SHAPES = {"generic": _generic, "megatron": _megatron, "mmengine": _mmengine}


def generate(mb: int, long_mb: int) -> dict[str, tuple[Path, int]]:
    """The logs, made once: name -> (path, number of step lines)."""
    OUT.mkdir(parents=True, exist_ok=True)
    made: dict[str, tuple[Path, int]] = {}
    for name, line in SHAPES.items():
        path = OUT / f"{name}_{mb}mb.log"
        meta = path.with_suffix(".json")
        if not (path.is_file() and meta.is_file()):
            rng = random.Random(0)
            steps, size = 0, 0
            with open(path, "w", encoding="ascii") as fh:
                while size < mb << 20:
                    steps += 1
                    text = line(steps, rng)
                    fh.write(text)
                    size += len(text)
            meta.write_text(json.dumps({"steps": steps}))
        made[name] = (path, json.loads(meta.read_text())["steps"])
    if long_mb:
        path = OUT / f"long_line_{long_mb}mb.log"
        if not path.is_file():
            with open(path, "wb") as fh:
                fh.write(b"step 1 loss 2.5\nstep 2 loss 2.4\n")
                chunk = b"0.1234, " * (1 << 17)  # 1 MiB of a dumped tensor, no newline
                for _ in range(long_mb):
                    fh.write(chunk)
                fh.write(b"\nstep 3 loss 2.3\n")
        made["long_line"] = (path, 3)
    return made


def measure(path: Path, runs: int, search: str | None) -> dict[str, float | int]:
    """Median wall time, peak RSS and loss points of ``autopsy analyze`` on one log."""
    env = dict(os.environ)
    if search:
        env["AUTOPSY_RANKLOGS_SEARCH"] = search
    cmd = [*ONE_CORE, sys.executable, "-m", "autopsy", "analyze", str(path), "--format",
           "json"]
    os.environ.update(env)
    try:
        run_measured(cmd)  # warm-up
        results = [run_measured(cmd) for _ in range(runs)]
    finally:
        if search:
            os.environ.pop("AUTOPSY_RANKLOGS_SEARCH", None)
    times = [r[0] for r in results]
    tree = max(r[2]["tree_mb"] for r in results)
    main = max(r[2]["main_mb"] for r in results)
    points = _loss_points(path, search)
    return {"median": statistics.median(times), "min": min(times), "max": max(times),
            "tree_mb": tree, "main_mb": main, "points": points}


def _loss_points(path: Path, search: str | None) -> int:
    """Loss points the reader gives for ``path`` (in a fresh process, untimed)."""
    code = ("import sys, autopsy; r = autopsy.load_run(sys.argv[1]); "
            "print(int((r.scalars['tag'] == 'loss').sum()))")
    env = dict(os.environ, **({"AUTOPSY_RANKLOGS_SEARCH": search} if search else {}))
    env["AUTOPSY_MAX_POINTS"] = str(10**9)  # every point kept: the count is a check
    out = subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True,
                         text=True, env=env, check=True)
    return int(out.stdout.strip())


#: The goal is per core: every timed process (and the ripgrep child, which inherits the
#: affinity) is pinned to CPU 0 where ``taskset`` exists.
ONE_CORE = ["taskset", "-c", "0"] if shutil.which("taskset") else []


def compile_bytecode() -> None:
    """Write autopsy's ``.pyc`` files, as installing a wheel does (an editable install
    under ``PYTHONDONTWRITEBYTECODE`` would otherwise compile every module on every run)."""
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(ROOT / "autopsy")],
                   check=True, stdout=subprocess.DEVNULL)


def main() -> None:
    """Generate, measure, print and write the section."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mb", type=int, default=100)
    ap.add_argument("--long-mb", type=int, default=800)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--no-write", action="store_true")
    ns = ap.parse_args()
    logs = generate(ns.mb, ns.long_mb)
    compile_bytecode()
    rows = ["| log | size | step lines | search | median | range | MB/s | loss points read "
            "(all kept) | peak RSS (tree) |", "|---|---|---|---|---|---|---|---|---|"]
    for name, (path, steps) in logs.items():
        size = path.stat().st_size / 2**20
        for search in (None, "python"):
            runs = ns.runs if name != "long_line" else 1
            m = measure(path, runs, search)
            label = "rg (default)" if search is None else "pure Python"
            rows.append(f"| {name} | {size:.0f} MB | {steps:,} | {label} | {m['median']:.2f} s "
                        f"| {m['min']:.2f}-{m['max']:.2f} s | {size / m['median']:.1f} | "
                        f"{m['points']:,} | {m['tree_mb']:.0f} MB |")
            print(rows[-1], file=sys.stderr)
    body = "\n".join([
        f"`python bench/textlog.py --mb {ns.mb} --long-mb {ns.long_mb} --runs {ns.runs}`: "
        "every line a step line (generic `logging` lines, Megatron-LM, mmengine), and one "
        f"{ns.long_mb} MB line with no newline between step lines. Whole-process `autopsy "
        "analyze FILE --format json`, page cache warm, median after a warm-up; peak RSS of the "
        "process tree (VmHWM). "
        + ("Every run is pinned to one core (`taskset -c 0`, the ripgrep child too). "
           if ONE_CORE else "No `taskset` here: runs are not pinned to one core. ")
        + "autopsy's bytecode is compiled first (`compileall`), as a wheel install has it. "
        "Goals (issue 12): at least 50 MB/s on one core for metric-dense "
        "logs; under 300 MiB for the long line, with and without ripgrep.", "", *rows, "",
        f"- Machine: {os.cpu_count()} cores, {platform.machine()}, Python "
        f"{platform.python_version()}.",
    ]) + "\n"
    print(body)
    if not ns.no_write:
        update_section(DOC, "## Metric-dense text logs", body)


if __name__ == "__main__":
    main()
