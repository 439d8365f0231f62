"""Noisy synthetic series for the not-decreasing and config-lint rule tests."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import autopsy
from autopsy.api import diagnose
from autopsy.model import Run

SAMPLE_RUNS = Path(__file__).resolve().parents[2] / "sample_runs"


def noisy(level: float, n: int = 60, *, noise: float = 0.02, slope: float = 0.0,
          seed: int = 0) -> list[float]:
    """``level · (1 + slope·i/n)`` with relative Gaussian noise, like a logged batch loss."""
    rng = np.random.default_rng(seed)
    return [level * (1 + slope * i / n) * (1 + noise * float(rng.standard_normal()))
            for i in range(n)]


def falling(start: float, end: float, n: int = 60, *, noise: float = 0.02,
            seed: int = 0) -> list[float]:
    """An exponential-ish fall from ``start`` to ``end`` with noise."""
    rng = np.random.default_rng(seed)
    return [(end + (start - end) * math.exp(-5 * i / n))
            * (1 + noise * float(rng.standard_normal())) for i in range(n)]


def codes(run: Run) -> dict[str, Any]:
    """``{code: finding}`` of a diagnosis."""
    return {f.code: f for f in diagnose(run).findings}


def sample(name: str) -> Run:
    """Load a sample run, or skip the test when it has not been generated yet."""
    path = SAMPLE_RUNS / name
    if not path.is_dir():
        pytest.fail(f"sample run {name} not generated yet (sample_runs/make.py {name})")
    return autopsy.load_run(path)


def label(name: str) -> dict[str, Any]:
    """A sample run's label file (``<name>.label.json``), or skip when absent."""
    import json

    path = SAMPLE_RUNS / f"{name}.label.json"
    if not path.is_file():
        pytest.fail(f"no label file {path.name} yet")
    return json.loads(path.read_text())


def assert_verdict_matches_label(name: str, code: str) -> None:
    """The verdict on sample run ``name`` is ``code`` with the label's family, cause and step."""
    run = sample(name)
    truth = label(name)
    v = diagnose(run).verdict
    assert v.code == code
    assert (v.family.value, v.cause, v.step) == (truth["family"], truth["cause"],
                                                 truth["first_bad_step"])
