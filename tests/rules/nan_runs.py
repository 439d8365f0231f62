"""Synthetic runs for the NaN/Inf rule tests: noisy, seeded, in the shapes real runs take."""

from __future__ import annotations

from typing import Any

import numpy as np
from runs import synthetic_run

from autopsy.model import Run

NAN = float("nan")
INF = float("inf")


def noisy(n: int, start: float, end: float, noise: float, seed: int) -> list[float]:
    """A loss falling from ``start`` to ``end`` with multiplicative noise."""
    rng = np.random.default_rng(seed)
    base = end + (start - end) * np.exp(-np.arange(n) / (n / 4))
    return [float(v) for v in base * (1 + noise * rng.standard_normal(n))]


def flat_grad(n: int, level: float, seed: int) -> list[float]:
    """A grad norm wandering around ``level`` (log-normal noise, like real runs)."""
    rng = np.random.default_rng(seed)
    return [float(v) for v in level * np.exp(0.25 * rng.standard_normal(n))]


def blowup_run(*, n: int = 100, spike_at: int = 60, nan_at: int = 64, lr: float = 3e-3,
               config: dict[str, Any] | None = None, grad: bool = True,
               seed: int = 0) -> Run:
    """Grad norm spikes at ``spike_at`` and keeps growing; loss NaN from ``nan_at``."""
    loss = noisy(n, 3.0, 1.0, 0.03, seed)
    g = flat_grad(n, 1.0, seed + 1)
    for i in range(spike_at - 1, nan_at - 1):
        k = i - spike_at + 2
        g[i] = 10.0 ** (1 + 2 * (k - 1))
        loss[i] = loss[i] * 10.0 ** (k - 1)
    for i in range(nan_at - 1, n):
        loss[i], g[i] = NAN, NAN
    series: dict[str, Any] = {"loss": loss, "learning_rate": [lr] * n}
    if grad:
        series["grad_norm"] = g
    cfg = {"learning_rate": lr, "optim": "adamw_torch", "max_grad_norm": 0.0,
           "warmup_steps": 0, "warmup_ratio": 0.0, "max_steps": n, **(config or {})}
    return synthetic_run(series, config=cfg)


def bad_batch_run(*, n: int = 100, nan_at: int = 70, every: int = 1, seed: int = 0,
                  config: dict[str, Any] | None = None) -> Run:
    """Flat grad norm, then loss and grad norm NaN from ``nan_at`` (a poisoned batch)."""
    steps = list(range(every, n * every + 1, every))
    loss = noisy(n, 3.0, 1.0, 0.03, seed)
    g = flat_grad(n, 1.0, seed + 1)
    for i, st in enumerate(steps):
        if st >= nan_at:
            loss[i], g[i] = NAN, NAN
    cfg = {"learning_rate": 5e-5, "max_grad_norm": 1.0, "warmup_ratio": 0.05,
           **(config or {})}
    return synthetic_run({"loss": loss, "grad_norm": g}, steps=steps, config=cfg)


def fp16_scale(n: int, warmup_halvings: int, seed: int = 0) -> list[float]:
    """A GradScaler's scale: 65536 halved on the first steps, then ×2 every 25 steps with an
    occasional isolated overflow (halved again), as a healthy fp16 run logs it."""
    rng = np.random.default_rng(seed)
    scale, out = 65536.0, []
    for i in range(n):
        if i < warmup_halvings:
            scale /= 2
        elif i % 25 == 0:
            scale *= 2
        elif rng.random() < 0.03:
            scale /= 2
        out.append(scale)
    return out


def label(name: str) -> dict[str, Any] | None:
    """A sample run's label (``<name>.label.json``, else its entry in ``labels.json``)."""
    import json
    from pathlib import Path

    root = Path(__file__).resolve().parents[2] / "sample_runs"
    own = root / f"{name}.label.json"
    if own.exists():
        return dict(json.loads(own.read_text()))
    combined = root / "labels.json"
    if combined.exists():
        entry = json.loads(combined.read_text()).get(name)
        return dict(entry) if entry else None
    return None


def label_causes(expected: dict[str, Any] | None, default: str | None) -> list[str | None]:
    """The causes a label accepts (its ``cause`` may be one cause or a list, primary first)."""
    cause = (expected or {}).get("cause", default)
    return list(cause) if isinstance(cause, list) else [cause]


def sample(name: str) -> Run:
    """Load ``sample_runs/<name>``, skipping the test when it is not there yet."""
    from pathlib import Path

    import pytest

    from autopsy import load_run

    path = Path(__file__).resolve().parents[2] / "sample_runs" / name
    if not path.exists():
        pytest.fail(f"sample run {name} not generated yet")
    return load_run(path)


NAN_CODES = ("NAN001", "NAN002", "NAN003", "NAN005")


def nan_explanations(findings: Any) -> list[Any]:
    """The verdict-grade NaN/Inf findings (one per event, by design)."""
    return [f for f in findings if f.code in NAN_CODES]


def grad_scaler(n: int, *, level: float, growth: int, seed: int,
                collapse_at: int | None = None) -> dict[str, list[float]]:
    """Simulate a dynamic loss scaler, as torch's GradScaler runs it.

    A step overflows when the scale exceeds a noisy ``level`` (the largest scale the
    gradients tolerate); the scaler then halves the scale and skips the step, and doubles
    it after ``growth`` good steps. From ``collapse_at`` on the gradients double every step,
    so every step overflows. Returns ``loss``, ``loss_scale``, ``skipped_steps`` (cumulative)
    and ``grad_norm`` (inf on skipped steps, as the HF Trainer logs it).
    """
    rng = np.random.default_rng(seed)
    scale, skipped, good = 65536.0, 0, 0
    out: dict[str, list[float]] = {"loss": [], "loss_scale": [], "skipped_steps": [],
                                   "grad_norm": []}
    for i in range(n):
        limit = level * float(np.exp(0.5 * rng.standard_normal()))
        if collapse_at is not None and i >= collapse_at:
            limit = level * 2.0 ** -(i - collapse_at)
        if scale > limit:
            scale, skipped, good = scale / 2, skipped + 1, 0
            out["grad_norm"].append(INF)
        else:
            good += 1
            scale *= 2 if good % growth == 0 else 1
            out["grad_norm"].append(float(np.exp(0.3 * rng.standard_normal())))
        out["loss_scale"].append(scale)
        out["skipped_steps"].append(float(skipped))
        out["loss"].append(2.0 + 0.1 * float(rng.standard_normal()))
    return out
