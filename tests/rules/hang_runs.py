"""Helpers for the hang-rule tests: a Run with hand-written rank-log events."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pandas as pd
from runs import synthetic_run

import autopsy
from autopsy.model.events import EVENT_COLUMNS
from autopsy.model.run import Run

FIXTURES = "tests/fixtures/ranklogs"
TIMEOUT_MESSAGE = "RuntimeError: [pair.cc:78] Timed out waiting 15000ms for recv operation"


def events_run(rows: list[tuple[int | None, int | None, str, dict[str, Any]]]) -> Run:
    """A run whose events are ``(rank, step, kind, details)`` rows (one line each)."""
    frame = pd.DataFrame([{
        "rank": rank, "wall_time": float("nan"), "step": step, "kind": kind,
        "message": TIMEOUT_MESSAGE if kind != "child_failed" else kind,
        "source": f"rank{rank}.log", "line": i + 1, "details": details,
    } for i, (rank, step, kind, details) in enumerate(rows)])
    frame = frame.astype({c: t for c, t in EVENT_COLUMNS.items() if c != "details"})
    run = synthetic_run({"loss": [2.0 / (1 + 0.1 * i) for i in range(20)]})
    return replace(run, events=frame)


def load(name: str) -> Run:
    """A sample run (``sample_runs/<name>``) or a fixture (``fixtures/ranklogs/<name>``)."""
    path = f"sample_runs/{name}" if name.startswith("ddp_") else f"{FIXTURES}/{name}"
    return autopsy.load_run(path)
