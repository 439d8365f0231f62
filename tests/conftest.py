"""Shared fixtures: small runs written by the real writers at test time."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

from repo_paths import REPO, SAMPLE_RUNS  # noqa: F401  (also here for fixtures)


def write_scalars(logdir: Path, points: dict[str, list[tuple[int, float]]]) -> None:
    """Write scalars with torch's real SummaryWriter (one writer, one event file)."""
    from torch.utils.tensorboard import SummaryWriter

    writer = SummaryWriter(log_dir=str(logdir))
    rows = sorted((step, tag, value) for tag, pts in points.items() for step, value in pts)
    for step, tag, value in rows:
        writer.add_scalar(tag, value, step)
    writer.close()


@pytest.fixture
def tb_run(tmp_path: Path) -> Path:
    """A run dir with one SummaryWriter event file, a trainer_state.json and a stray file."""
    run = tmp_path / "run"
    write_scalars(run / "runs" / "exp", {
        "train/loss": [(s, 2.0 / s) for s in range(1, 21)],
        "train/learning_rate": [(s, 1e-3) for s in range(1, 21)],
    })
    state = {
        "global_step": 20, "max_steps": 20, "logging_steps": 5,
        "log_history": [
            {"step": 5, "loss": 0.4, "grad_norm": 1.0, "learning_rate": 1e-3, "epoch": 0.5},
            {"step": 10, "loss": float("nan"), "grad_norm": float("inf"),
             "learning_rate": 1e-3, "epoch": 1.0},
        ],
    }
    (run / "trainer_state.json").write_text(json.dumps(state))
    (run / "notes.txt").write_text("nothing to see\n")
    return run


def tree_snapshot(root: Path) -> dict[str, tuple[int, int]]:
    """Every path under ``root`` with its size and mtime (ns)."""
    out = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            p = Path(dirpath) / name
            st = p.lstat()
            out[str(p.relative_to(root))] = (st.st_size, st.st_mtime_ns)
    return out


@pytest.fixture
def snapshot() -> Callable[[Path], dict[str, tuple[int, int]]]:
    """The :func:`tree_snapshot` helper, as a fixture."""
    return tree_snapshot
