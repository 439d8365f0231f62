"""Helpers for the resume-forensics tests: runs of several segments, in numbers.

A *launch* is ``{tag: {step: value}}`` (optionally with a rank per launch); the launches
become segments 0, 1, ... of one :class:`Run`, with audits of checkpoints built as tiny
:class:`CheckpointAudit` records (the sample runs exercise the real audit).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from autopsy.api import diagnose
from autopsy.ckpt.components import CheckpointAudit, Component, Part, Status
from autopsy.model import ConfigValue, Run, RunConfig, concat_scalars, empty_events, make_scalars
from autopsy.model.finding import Finding

SAMPLE_RUNS = Path(__file__).resolve().parents[2] / "sample_runs"
Launch = Mapping[str, Mapping[int, float]]


def segmented_run(launches: Sequence[Launch], *, config: Mapping[str, Any] | None = None,
                  checkpoints: Sequence[CheckpointAudit] = (),
                  ranks: Sequence[Sequence[int | None]] | None = None) -> Run:
    """Segments 0, 1, ... from ``launches``; ``ranks[i]`` the ranks launch ``i`` logged."""
    frames = []
    for seg, launch in enumerate(launches):
        for rank in (ranks[seg] if ranks is not None else [None]):
            for tag, points in launch.items():
                frames.append(make_scalars(list(points), tag, list(points.values()),
                                           segment=seg, rank=rank,
                                           source=f"runs/events.{seg}"))
    cfg = RunConfig(ConfigValue(k, v, "config.json") for k, v in (config or {}).items())
    return Run(root=Path("synthetic"), scalars=concat_scalars(frames), events=empty_events(),
               config=cfg, checkpoints=list(checkpoints))


def audit(step: int, missing: Sequence[str] = (), world_size: int | None = None,
          name: str | None = None) -> CheckpointAudit:
    """A checkpoint audited at ``step`` whose ``missing`` parts are missing, the rest ok."""
    comps = tuple(Component(p.value, Status.MISSING if p.value in missing else Status.OK,
                            files=(f"{p.value}.pt",),
                            effect="lost on resume" if p.value in missing else "")
                  for p in Part)
    return CheckpointAudit(path=str(Path("synthetic") / (name or f"checkpoint-{step}")),
                           layout="hf_trainer", step=step, components=comps,
                           world_size=world_size)


def schedule(step: int, peak: float = 1e-3, warmup: int = 10, total: int = 200) -> float:
    """Linear warm-up then cosine decay (1-based steps)."""
    if step <= warmup:
        return peak * step / warmup
    return peak * 0.5 * (1 + math.cos(math.pi * (step - warmup) / (total - warmup)))


def loss_curve(steps: range | Sequence[int], seed: int = 0, noise: float = 0.02,
               start: float = 2.0, floor: float = 0.5) -> dict[int, float]:
    """A falling loss with per-step noise (the same seed, the same wiggles per step)."""
    rng = np.random.default_rng(seed)
    wiggle = {s: float(x) for s, x in zip(range(1, 10_001), rng.standard_normal(10_000),
                                          strict=False)}
    return {s: floor + (start - floor) * math.exp(-s / 60) + noise * wiggle[s] for s in steps}


def finding(run: Run, code: str) -> Finding | None:
    """The finding ``code`` gives for ``run`` (None when it passes)."""
    return next((f for f in diagnose(run).findings if f.code == code), None)
