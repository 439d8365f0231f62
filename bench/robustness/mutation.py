"""Format-aware mutation: real files of each format autopsy reads, damaged in six ways.

Each real file of :data:`MUTATED` (a TensorBoard event file, ``trainer_state.json``,
``training_args.bin``, a text log, Lightning's ``metrics.csv`` and ``.ckpt``,
``model.safetensors``, a torch zip, a legacy torch file, a DCP ``.metadata``, a torchrun
rank log, Flight Recorder dumps in both forms, a py-spy dump and a faulthandler log, a
W&B record log and summary, MLflow's SQLite and file stores; the tracker runs are made by
wandb and mlflow at the start, so the test extra is needed) is mutated by each kind of
:data:`MUTATIONS` (bit flips, truncation, a zeroed region, inserted and deleted bytes, a
duplicated region), seeded, in a copy of its run folder.
"""

from __future__ import annotations

import random
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SAMPLES = ROOT / "sample_runs"
OUT = ROOT / "bench" / "out" / "robustness"
SOURCES = OUT / "sources"

FIXTURES = ROOT / "tests" / "fixtures"
#: Real files mutated by the second campaign: (name, the run folder (a sample's name, or a
#: path), the file in it, the command that reads it).
MUTATED: tuple[tuple[str, str | Path, str, str], ...] = (
    ("tfevents", "diverging_finite", "runs/events.out.tfevents.*", "analyze"),
    ("trainer_state", "ckpt_hf_good", "trainer_state.json", "analyze"),
    ("safetensors", "ckpt_hf_good", "checkpoint-8/model.safetensors", "ckpt"),
    ("torch_zip", "ckpt_hf_good", "checkpoint-8/optimizer.pt", "ckpt"),
    ("dcp_metadata", "ckpt_dcp_good", "*/.metadata", "ckpt"),
    ("rank_log", "ddp_rank_exception", "logs/*/attempt_0/2/stderr.log", "ranks"),
    ("fr_pickle", FIXTURES / "flight_recorder" / "rank1_never_enters", "nccl_trace_rank_0",
     "ranks"),
    ("fr_json", FIXTURES / "flight_recorder" / "rank1_never_enters", "nccl_trace_rank_1.json",
     "ranks"),
    ("pyspy_dump", FIXTURES / "stack_dumps" / "rank1_stuck_in_data_loading", "pyspy_rank1.txt",
     "ranks"),
    ("faulthandler_log", FIXTURES / "stack_dumps" / "rank1_stuck_in_data_loading", "rank1.log",
     "ranks"),
    ("wandb_summary", FIXTURES / "wandb_files", "files/wandb-summary.json", "analyze"),
    ("training_args", "ckpt_hf_good", "training_args.bin", "analyze"),
    ("text_log", "healthy_hf_trainer", "train.log", "analyze"),
    ("lightning_csv", SOURCES / "lightning", "lightning_logs/version_0/metrics.csv", "analyze"),
    ("lightning_ckpt", "ckpt_lightning_good", "**/*.ckpt", "ckpt"),
    # made by wandb and mlflow at build time (the test extra), see _tracker_runs
    ("wandb_log", SOURCES / "wandb", "wandb/offline-run-*/run-*.wandb", "analyze"),
    ("mlflow_sqlite", SOURCES / "mlflow", "mlflow.db", "analyze"),
    ("mlflow_file", SOURCES / "mlflow", "mlruns/*/*/metrics/loss", "analyze"),
)

_TRACKERS = """
import os, sys
os.environ.update(WANDB_MODE="offline", WANDB_SILENT="true", MLFLOW_ALLOW_FILE_STORE="true")
import mlflow, wandb
out = sys.argv[1]
run = wandb.init(project="fuzz", dir=os.path.join(out, "wandb"), config={"lr": 0.1})
for s in range(300):
    wandb.log({"loss": 1.0 / (1 + s), "lr": 0.1, "note": "x" * 200}, step=s)
run.finish(exit_code=1)
for uri in ("sqlite:///" + os.path.join(out, "mlflow", "mlflow.db"),
            "file:" + os.path.join(out, "mlflow", "mlruns")):
    mlflow.set_tracking_uri(uri)
    with mlflow.start_run(run_name="fuzz"):
        mlflow.log_param("learning_rate", 0.1)
        for s in range(100):
            mlflow.log_metric("loss", 1.0 / (1 + s), step=s)
from lightning.pytorch.loggers import CSVLogger
logger = CSVLogger(os.path.join(out, "lightning"), name="lightning_logs")
logger.log_hyperparams({"lr": 0.1, "batch_size": 32})
for s in range(200):
    logger.log_metrics({"train_loss": 1.0 / (1 + s), "epoch": s // 20}, step=s)
logger.finalize("success")
"""


def tracker_runs(dest: Path = SOURCES) -> None:
    """A W&B offline run, MLflow's two stores and a Lightning CSVLogger folder, written by
    the libraries themselves."""
    (dest / "wandb" / "wandb").mkdir(parents=True, exist_ok=True)
    (dest / "mlflow").mkdir(parents=True, exist_ok=True)
    subprocess.run([sys.executable, "-c", _TRACKERS, str(dest)], check=True,
                   capture_output=True, timeout=300)


MUTATIONS = ("bitflip", "truncate", "zero", "insert", "delete", "duplicate")


def mutate(data: bytes, kind: str, rng: random.Random) -> bytes:
    n = len(data)
    if n == 0:
        return data
    at = rng.randrange(n)
    width = rng.randint(1, max(1, min(4096, n // 4)))
    if kind == "bitflip":
        out = bytearray(data)
        for _ in range(rng.randint(1, 16)):
            i = rng.randrange(n)
            out[i] ^= 1 << rng.randrange(8)
        return bytes(out)
    if kind == "truncate":
        return data[:at]
    if kind == "zero":
        return data[:at] + b"\0" * width + data[at + width:]
    if kind == "insert":
        return data[:at] + bytes(rng.randrange(256) for _ in range(width)) + data[at:]
    if kind == "delete":
        return data[:at] + data[at + width:]
    return data[:at] + data[at:at + width] * rng.randint(2, 50) + data[at:]


def source_file(name: str) -> tuple[Path, Path, str]:
    """``(run folder, the file in it, command)`` of the format called ``name``."""
    for fmt, sample, pattern, command in MUTATED:
        if fmt == name:
            base = sample if isinstance(sample, Path) else SAMPLES / sample
            found = sorted(base.glob(pattern))
            if not found:
                raise FileNotFoundError(f"{name}: no {pattern} under {base}")
            return base, found[0], command
    raise KeyError(name)
