"""Helpers for the slow-rule tests: runs with time-stamped steps, per rank, in numbers."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from autopsy.api import diagnose
from autopsy.model import ConfigValue, Run, RunConfig, concat_scalars, empty_events, make_scalars
from autopsy.model.finding import Finding
from autopsy.rules.settings import Settings

T0 = 1_800_000_000.0


def jitter(n: int, base: float, rel: float = 0.05, seed: int = 0) -> np.ndarray:
    """``n`` step times around ``base`` with normal jitter of ``rel`` (never below 10%)."""
    rng = np.random.default_rng(seed)
    return np.maximum(base * (1 + rel * rng.standard_normal(n)), 0.1 * base)


def timed_run(
    per_step: Mapping[int | None, Sequence[float]],
    *,
    tags: Mapping[str, Mapping[int | None, Sequence[float]]] | None = None,
    config: Mapping[str, Any] | None = None,
    start: Mapping[int | None, float] | None = None,
    first_step: int = 1,
    log_every: int = 1,
    offsets: Mapping[int | None, Sequence[float]] | None = None,
) -> Run:
    """A run whose rank ``r`` takes ``per_step[r][i]`` seconds for step ``first_step + i``.

    Every ``log_every`` steps each rank logs ``loss`` (falling) with the wall time at the end
    of that step (plus ``offsets[r][i]``: how late the line comes); ``tags`` adds per-step
    series (``{"data_time": {rank: values}}``), logged at the same steps.
    """
    frames = []
    for rank, secs in per_step.items():
        secs = np.asarray(secs, dtype="float64")
        ends = (start or {}).get(rank, 0.0) + T0 + np.cumsum(secs)
        steps = np.arange(first_step, first_step + len(secs))
        pick = (steps - first_step) % log_every == log_every - 1 if log_every > 1 else slice(None)
        walls = ends[pick] + (np.asarray(offsets[rank])[pick] if offsets and rank in offsets
                              else 0.0)
        src = f"rank{rank}.log" if rank is not None else "events"
        frames.append(make_scalars(steps[pick], "loss", 2.0 / (1 + 0.05 * steps[pick]),
                                   wall_time=walls, rank=rank, source=src))
        for tag, by_rank in (tags or {}).items():
            if rank in by_rank:
                values = np.asarray(by_rank[rank], dtype="float64")[pick]
                frames.append(make_scalars(steps[pick], tag, values, wall_time=walls, rank=rank,
                                           source=src))
    cfg = RunConfig(ConfigValue(k, v, "config.json") for k, v in (config or {}).items())
    return Run(root=Path("synthetic"), scalars=concat_scalars(frames), events=empty_events(),
               config=cfg)


def findings(run: Run, code: str, **thresholds: Any) -> list[Finding]:
    """The findings of rule ``code`` on ``run`` (thresholds overridden as ``--set`` would)."""
    settings = Settings(overrides={code: thresholds}) if thresholds else Settings()
    return [f for f in diagnose(run, settings).findings if f.code == code]
