"""fp16 loss scaling, read off the run: benign scaler warm-up skips versus an overflow.

A dynamic loss scaler (torch ``GradScaler``, DeepSpeed, Megatron) starts high (2^16),
halves the scale and skips the step on every overflow, and grows it back slowly. In the
first steps it overflows several times in a row while it finds its scale: normal. After
that an occasional isolated skip is normal too. An overflow is a *collapse*: the scale
reaching ``min_scale``, falling ``collapse_halvings`` halvings below its maximum after the
warm-up, or skips on ``skip_run`` consecutive logged points after the warm-up.

The HF Trainer logs no loss scale: a skipped step shows as a non-finite ``grad_norm``
next to a finite loss, and the same rules apply to those points.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from autopsy.model.finding import Evidence
from autopsy.model.run import Run

#: (first step, phrase for the message, evidence, last step, whether the scale collapsed)
Found = tuple[int, str, Evidence, int, bool]


@dataclass(frozen=True)
class Fp16State:
    """What the run says about fp16 loss scaling.

    Attributes:
        active: a loss scaler is in use (config ``fp16``/``mixed_precision``, a varying
            ``loss_scale``, or skipped steps).
        from_config: ``fp16`` is set in the config (with ``source``).
        benign: non-finite grad-norm steps explained as ordinary scaler skips.
        overflow_step: the first step of the overflow (None: no overflow).
        evidence: what shows the overflow (and the config entry).
        reasons: short phrases for the message ("the loss scale fell to 0.5", ...).
        scale_min: the smallest logged loss scale (NaN if not logged).
        collapsed: the scale itself collapsed (not only a run of skips).
        last_skip: the last step of the overflow's evidence (None: no overflow).
    """

    active: bool = False
    from_config: bool = False
    source: str | None = None
    benign: frozenset[int] = frozenset()
    overflow_step: int | None = None
    evidence: tuple[Evidence, ...] = ()
    reasons: tuple[str, ...] = field(default_factory=tuple)
    scale_min: float = math.nan
    collapsed: bool = False
    last_skip: int | None = None


def truthy(value: Any) -> bool:
    """Whether a config value means "on" (True, 1, "true", "yes", "fp16")."""
    if isinstance(value, str):
        return value.strip().lower() in ("true", "1", "yes", "on", "fp16")
    return bool(value) if isinstance(value, (bool, int, float)) else False


def _finite(s: pd.Series) -> pd.Series:
    values = s.to_numpy(dtype="float64", na_value=np.nan)
    return s[np.isfinite(values)].sort_index()


def _warm(steps: np.ndarray, starts: list[int], width: int) -> np.ndarray:
    """Which ``steps`` lie within ``width`` steps after a segment's first step."""
    out = np.zeros(steps.shape, dtype=bool)
    for s in starts:
        out |= (steps >= s) & (steps <= s + width)
    return out


def _runs(steps: np.ndarray, flags: np.ndarray) -> list[np.ndarray]:
    """Maximal runs of consecutive logged points whose flag is set (their steps)."""
    idx = np.flatnonzero(flags)
    if not idx.size:
        return []
    return [steps[g] for g in np.split(idx, np.flatnonzero(np.diff(idx) > 1) + 1)]


def _scale_findings(scale: pd.Series, starts: list[int], th: Any,
                    found: list[Found]) -> None:
    """Collapse and post-warm-up runs of drops of a logged loss scale."""
    s = _finite(scale)
    s = s[s > 0]
    if len(s) < 2:
        return
    steps = s.index.to_numpy(dtype=np.int64)
    vals = s.to_numpy(dtype=float)
    smax, smin = float(vals.max()), float(vals.min())
    low = int(np.argmin(vals))
    min_step = int(steps[low])
    halvings = math.log2(smax / smin)
    width = int(th["scaler_warmup_steps"])
    warm = bool(_warm(steps[low : low + 1], starts, width)[0])
    floor = smin <= float(th["min_scale"]) < smax
    if floor or (halvings >= float(th["collapse_halvings"]) and not warm):
        if floor:  # where the scale first reached the floor
            start = int(steps[int(np.flatnonzero(vals <= float(th["min_scale"]))[0])])
            more = f", at or below {float(th['min_scale']):g} from step {start}"
        else:  # the first drop after the warm-up on the way down to the minimum
            rises = np.flatnonzero(vals[1 : low + 1] > vals[:low])
            top = int(rises[-1]) + 1 if rises.size else 0
            falls = np.flatnonzero((vals[top + 1 :] < vals[top:-1])
                                   & ~_warm(steps[top + 1 :], starts, width))
            start = int(steps[top + 1 + falls[0]]) if falls.size else min_step
            more = f", falling from step {start}"
        found.append((start, f"the loss scale fell from {smax:g} to {smin:g} "
                      f"({halvings:.0f} halvings) by step {min_step}{more}", Evidence(
                          summary=f"loss scale fell from {smax:g} to {smin:g} "
                                  f"({halvings:.1f} halvings) by step {min_step}{more}",
                          tag="loss_scale", steps=(start, min_step),
                          numbers={"max": smax, "min": smin, "halvings": halvings,
                                   "collapse_step": start}),
                      int(steps[-1]), True))
    drops = np.r_[False, vals[1:] < vals[:-1]]
    _skip_runs(steps, drops, starts, th, "loss scale dropped", "loss_scale", found)


def _skip_runs(steps: np.ndarray, flags: np.ndarray, starts: list[int], th: Any, what: str,
               tag: str, found: list[Found]) -> None:
    """Runs of ``skip_run`` or more flagged points after the warm-up."""
    width = int(th["scaler_warmup_steps"])
    for run in _runs(steps, flags):
        late = run[~_warm(run, starts, width)]
        if late.size >= int(th["skip_run"]):
            a, b = int(late[0]), int(late[-1])
            found.append((a, f"{what} on {late.size} consecutive logged steps from step {a}",
                          Evidence(
                              summary=f"{what} on {late.size} consecutive logged steps, "
                                      f"steps {a}-{b} (after the scaler's warm-up)",
                              tag=tag, steps=(a, b), numbers={"consecutive": int(late.size)}),
                          b, False))
            return


def _skipped_counter(skipped: pd.Series, starts: list[int], th: Any,
                     found: list[Found]) -> None:
    """Skipped-step counts: cumulative (non-decreasing) or per logging interval."""
    s = _finite(skipped)
    if len(s) < 2:
        return
    vals = s.to_numpy(dtype=float)
    inc = np.diff(vals, prepend=0.0) if bool(np.all(np.diff(vals) >= 0)) else vals
    _skip_runs(s.index.to_numpy(dtype=np.int64), inc > 0, starts, th,
               "steps were skipped", "skipped_steps", found)


def _grad_skips(loss: pd.Series, grad: pd.Series, starts: list[int], th: Any,
                found: list[Found]) -> frozenset[int]:
    """HF-style skips (non-finite grad norm, finite or no loss); return the benign ones.

    A run of such points is benign when it is shorter than ``skip_run`` (and the grad
    norm is finite again after it, or it is the last point alone), or when it starts in
    the scaler's warm-up and the grad norm is finite again after it. Any other run is an
    overflow (the first one is recorded in ``found``).
    """
    g = grad.sort_index()
    gv = g.to_numpy(dtype="float64", na_value=np.nan)
    lv = loss.reindex(g.index).to_numpy(dtype="float64", na_value=np.nan)
    logged = g.index.isin(loss.index)
    steps = g.index.to_numpy(dtype=np.int64)
    flags = ~np.isfinite(gv) & (np.isfinite(lv) | ~logged)
    width, benign = int(th["scaler_warmup_steps"]), set()
    recorded = False
    for run in _runs(steps, flags):
        n, first, recovers = int(run.size), int(run[0]), run[-1] != steps[-1]
        short = n < int(th["skip_run"]) and (recovers or n == 1)
        if short or (recovers and bool(_warm(run[:1], starts, width)[0])):
            benign.update(int(x) for x in run)
        elif not recorded:
            recorded = True
            tail = "" if recovers else ", to the end of the log"
            found.append((first, f"the grad norm was non-finite (skipped steps) on {n} "
                          f"consecutive logged steps from step {first}{tail}", Evidence(
                              summary=f"grad norm non-finite with a finite loss on {n} "
                                      f"consecutive logged steps, steps {first}-{run[-1]}"
                                      f"{tail} (overflowing steps the scaler skipped)",
                              tag="grad_norm", steps=(first, int(run[-1])),
                              numbers={"consecutive": n}), int(run[-1]), False))
    return frozenset(benign)


def fp16_state(run: Run, loss: pd.Series, grad: pd.Series, th: Any) -> Fp16State:
    """Analyse fp16 loss scaling (see the module docstring); thresholds from ``th``."""
    entry = run.config.get_entry("fp16")
    from_config = truthy(run.config.get("fp16")) or str(
        run.config.get("mixed_precision", "")).lower() == "fp16"
    scale = run.series("loss_scale")
    skipped = run.series("skipped_steps")
    sv = _finite(scale).to_numpy(dtype=float)
    kv = _finite(skipped).to_numpy(dtype=float)
    active = from_config or np.unique(sv).size > 1 or bool((kv > 0).any())
    if not active:
        return Fp16State()
    starts = sorted({int(seg["first_step"]) for seg in run.segments()}) or [0]
    found: list[Found] = []
    _scale_findings(scale, starts, th, found)
    _skipped_counter(skipped, starts, th, found)
    benign = _grad_skips(loss, grad, starts, th, found) if len(grad) else frozenset()
    lv = loss.sort_index()
    inf_steps = lv.index[np.isinf(lv.to_numpy(dtype="float64", na_value=np.nan))]
    if len(inf_steps):
        st = int(inf_steps[0])
        found.append((st, f"the loss is inf at step {st}", Evidence(
            summary=f"loss is inf at step {st} under fp16 (inf on {len(inf_steps)} points)",
            tag="loss", steps=(st, int(inf_steps[-1])), numbers={"inf_points": len(inf_steps)}),
            int(inf_steps[-1]), False))
    found.sort(key=lambda x: x[0])
    evidence = [f[2] for f in found]
    if found and from_config:
        value = run.config.get("fp16") if entry is not None else run.config.get("mixed_precision")
        evidence.append(Evidence(summary=f"fp16 mixed precision is on (fp16={value})",
                                 source=entry.source if entry is not None else None,
                                 numbers={"fp16": str(value)}))
    return Fp16State(
        active=True, from_config=from_config, source=entry.source if entry else None,
        benign=benign, overflow_step=found[0][0] if found else None,
        evidence=tuple(evidence), reasons=tuple(f[1] for f in found),
        scale_min=float(sv.min()) if sv.size else math.nan,
        collapsed=any(f[4] for f in found), last_skip=max((f[3] for f in found), default=None),
    )
