"""Benchmark: reading the trackers' own stores (a W&B record log, MLflow's SQLite and file
stores) against the size of what they hold.

Generates (in ``bench/out/trackers/``, git-ignored) with the libraries themselves (the test
extra: wandb, mlflow-skinny, sqlalchemy): a W&B offline run of ``--rows`` history rows of 5
keys (HF Trainer style: ``train/loss``, ``train/grad_norm``, ``train/learning_rate``,
``train/epoch``, ``train/global_step``), and one MLflow run of ``--points`` points of
``loss`` in each store (logged in batches, as ``log_batch`` does). Each read is one fresh
process (``autopsy.load_run``, median of 3), which reports its own wall time and peak RSS.
Figures under ``## Tracker stores`` of ``docs/performance.md``.

Usage: ``python bench/tracker_read.py [--rows 100000] [--points 200000] [--no-write]``
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
from pathlib import Path

from docfile import DOC, update_section

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "bench" / "out" / "trackers"
HEADING = "## Tracker stores"

_MAKE = """
import os, sys, time
os.environ.update(WANDB_MODE="offline", WANDB_SILENT="true", MLFLOW_ALLOW_FILE_STORE="true")
out, rows, points = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
import wandb
run = wandb.init(project="bench", dir=os.path.join(out, "wandb_run"))
for s in range(rows):
    wandb.log({"train/loss": 2 / (1 + s / 1000), "train/grad_norm": 1.0,
               "train/learning_rate": 1e-4, "train/epoch": s / 1000, "train/global_step": s})
run.finish()
import mlflow
from mlflow.entities import Metric
for name, uri in (("mlflow_sqlite", "sqlite:///" + os.path.join(out, "mlflow_sqlite", "mlflow.db")),
                  ("mlflow_file", "file:" + os.path.join(out, "mlflow_file", "mlruns"))):
    os.makedirs(os.path.join(out, name), exist_ok=True)
    mlflow.set_tracking_uri(uri)
    client = mlflow.tracking.MlflowClient()
    with mlflow.start_run() as r:
        now = int(time.time() * 1000)
        for lo in range(0, points, 1000):
            batch = range(lo, min(points, lo + 1000))
            client.log_batch(r.info.run_id, metrics=[
                Metric("loss", 2 / (1 + s / 1000), now + s, s) for s in batch])
"""

_READ = """
import json, resource, sys, time
t0 = time.perf_counter()
import autopsy
run = autopsy.load_run(sys.argv[1])
print(json.dumps({"s": time.perf_counter() - t0, "points": len(run.scalars),
                  "mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""


def _size(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\\n\\n")[0])
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--points", type=int, default=200_000)
    parser.add_argument("--no-write", action="store_true")
    ns = parser.parse_args(argv)
    stamp = OUT / f"made_{ns.rows}_{ns.points}"
    if not stamp.exists():
        if OUT.exists():
            import shutil

            shutil.rmtree(OUT)
        OUT.mkdir(parents=True)
        subprocess.run([sys.executable, "-c", _MAKE, str(OUT), str(ns.rows), str(ns.points)],
                       check=True, capture_output=True)
        stamp.write_text("")
    rows = []
    for name, what in (("wandb_run", f"W&B record log, {ns.rows:,} rows x 5 keys"),
                       ("mlflow_sqlite", f"MLflow SQLite store, {ns.points:,} points"),
                       ("mlflow_file", f"MLflow file store, {ns.points:,} points")):
        runs = [json.loads(subprocess.run([sys.executable, "-c", _READ, str(OUT / name)],
                                          check=True, capture_output=True, text=True,
                                          env={**os.environ}).stdout) for _ in range(3)]
        rows.append((what, _size(OUT / name), statistics.median(r["s"] for r in runs),
                     max(r["mb"] for r in runs), runs[0]["points"]))
    lines = [
        f"`python bench/tracker_read.py --rows {ns.rows} --points {ns.points}`: "
        f"`autopsy.load_run` of each store in a fresh process (median of 3 wall times, the "
        f"highest peak RSS; {platform.python_version()}, {platform.machine()}, "
        f"{os.cpu_count()} CPUs). The stores are made by wandb and mlflow themselves.",
        "",
        "| store | on disk | points read | read | peak RSS |",
        "|---|---|---|---|---|",
        *[f"| {w} | {b / 1e6:.1f} MB | {p:,} | {s:.2f} s | {m:.0f} MB |"
          for w, b, s, m, p in rows],
    ]
    body = "\n".join(lines)
    print(body)
    if not ns.no_write:
        update_section(DOC, HEADING, body)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
