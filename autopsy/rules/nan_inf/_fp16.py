"""fp16 loss scaling, read off the run: benign scaler warm-up skips versus an overflow.

A dynamic loss scaler (torch ``GradScaler``, DeepSpeed, Megatron) starts high (2^16),
halves the scale and skips the step on every overflow, and grows it back slowly. In the
first steps it overflows several times in a row while it finds its scale: normal. After
that an occasional isolated skip is normal too. An overflow is a *collapse*: the scale
reaching ``min_scale``, falling ``collapse_halvings`` halvings below its running maximum
after the warm-up, or ``skip_run`` consecutive skipped steps after the warm-up: drops of a logged
scale on adjacent steps, or logging intervals of a skipped-steps counter in which at least
half the steps were skipped (so that sparse logging of a healthy run's rare overflows never
adds up to a run; a collapse logged sparsely still shows in the scale's fall).

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
        regrowing: the logged scale rose again after its lowest value and ends above it
            (the scaler found a scale it can keep and is growing it back).
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
    regrowing: bool = False


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


def _runs(flags: np.ndarray) -> list[np.ndarray]:
    """Maximal runs of consecutive logged points whose flag is set (their positions)."""
    idx = np.flatnonzero(flags)
    if not idx.size:
        return []
    return np.split(idx, np.flatnonzero(np.diff(idx) > 1) + 1)


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
    width = int(th["scaler_warmup_steps"])
    post = np.flatnonzero(~_warm(steps, starts, width))
    floor = smin <= float(th["min_scale"]) < smax
    fall = 0.0
    if post.size:  # the deepest fall below the running maximum after the warm-up
        pv = np.log2(vals[post])
        depth = np.maximum.accumulate(pv) - pv
        worst = int(np.argmax(depth))
        fall = float(depth[worst])
        top = int(post[int(np.argmax(pv[: worst + 1]))])
        low = int(post[worst])
    if floor:  # where the scale first reached the floor
        low = int(np.flatnonzero(vals <= float(th["min_scale"]))[0])
        start = int(steps[low])
        more = f", at or below {float(th['min_scale']):g} from step {start}"
    elif fall >= float(th["collapse_halvings"]):
        falls = np.flatnonzero(vals[top + 1 : low + 1] < vals[top:low])
        start = int(steps[top + 1 + falls[0]]) if falls.size else int(steps[low])
        more = f" after the warm-up, {fall:.0f} halvings below its level at step {steps[top]}"
    else:
        start = -1
    if start >= 0:
        halvings = math.log2(smax / smin)
        min_step = int(steps[int(np.argmin(vals))])
        found.append((start, f"the loss scale fell from {smax:g} to {smin:g} by step "
                      f"{min_step}{more}", Evidence(
                          summary=f"loss scale fell from {smax:g} to {smin:g} "
                                  f"({halvings:.1f} halvings) by step {min_step}{more}",
                          tag="loss_scale", steps=(start, min_step),
                          numbers={"max": smax, "min": smin, "halvings": halvings,
                                   "fall_after_warmup": fall, "collapse_step": start}),
                      int(steps[-1]), True))
    # drops on adjacent steps only: sparse logging of a healthy scaler's rare overflows
    # must not look like a run (a sparse-logged collapse shows in the fall itself)
    drops = np.r_[False, (vals[1:] < vals[:-1]) & (np.diff(steps) == 1)]
    _skip_runs(steps, drops, starts, th, "loss scale dropped", "loss_scale", found)


def _skip_runs(steps: np.ndarray, flags: np.ndarray, starts: list[int], th: Any, what: str,
               tag: str, found: list[Found], counts: np.ndarray | None = None) -> None:
    """The first run of flagged points after the warm-up that skips ``skip_run`` steps.

    ``counts`` is the number of skipped steps each point stands for (default 1).
    """
    width = int(th["scaler_warmup_steps"])
    for run in _runs(flags):
        late = run[~_warm(steps[run], starts, width)]
        n = int(late.size if counts is None else counts[late].sum())
        if late.size and n >= int(th["skip_run"]):
            a, b = int(steps[late[0]]), int(steps[late[-1]])
            found.append((a, f"{what} on {n} consecutive steps from step {a}", Evidence(
                summary=f"{what} on {n} consecutive steps, steps {a}-{b} (after the "
                        f"scaler's warm-up)",
                tag=tag, steps=(a, b), numbers={"consecutive": n}), b, False))
            return


def _skipped_counter(skipped: pd.Series, starts: list[int], th: Any,
                     found: list[Found]) -> None:
    """Skipped-step counts, cumulative (non-decreasing) or per logging interval.

    A point is flagged when at least half the steps of its logging interval were skipped,
    so that sparse logging of a healthy run's rare skips does not add up to a run.
    """
    s = _finite(skipped)
    if len(s) < 2:
        return
    vals = s.to_numpy(dtype=float)
    steps = s.index.to_numpy(dtype=np.int64)
    inc = np.diff(vals, prepend=0.0) if bool(np.all(np.diff(vals) >= 0)) else vals
    gap = np.diff(steps, prepend=steps[0] - 1)
    _skip_runs(steps, (inc > 0) & (2 * inc >= gap), starts, th, "steps were skipped",
               "skipped_steps", found, counts=inc)


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
    for pos in _runs(flags):
        run = steps[pos]
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


def scaler_active(run: Run) -> bool:
    """Whether a loss scaler is in use: ``fp16`` (or ``mixed_precision="fp16"``) in the
    config, a logged loss scale that moves, or a skipped-steps counter above 0."""
    sv = _finite(run.series("loss_scale")).to_numpy(dtype=float)
    kv = _finite(run.series("skipped_steps")).to_numpy(dtype=float)
    return (truthy(run.config.get("fp16"))
            or str(run.config.get("mixed_precision", "")).lower() == "fp16"
            or np.unique(sv).size > 1 or bool((kv > 0).any()))


def fp16_state(run: Run, loss: pd.Series, grad: pd.Series, th: Any) -> Fp16State:
    """Analyse fp16 loss scaling (see the module docstring); thresholds from ``th``."""
    entry = run.config.get_entry("fp16")
    from_config = truthy(run.config.get("fp16")) or str(
        run.config.get("mixed_precision", "")).lower() == "fp16"
    scale = run.series("loss_scale")
    skipped = run.series("skipped_steps")
    sv = _finite(scale).to_numpy(dtype=float)
    if not scaler_active(run):
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
    ordered = _finite(scale).sort_index().to_numpy(dtype=float)
    lowest = int(np.flatnonzero(ordered == ordered.min())[-1]) if ordered.size else -1
    regrowing = 0 <= lowest < ordered.size - 1 and bool(ordered[-1] > ordered[lowest])
    return Fp16State(
        active=True, from_config=from_config, source=entry.source if entry else None,
        benign=benign, overflow_step=found[0][0] if found else None,
        evidence=tuple(evidence), reasons=tuple(f[1] for f in found),
        scale_min=float(sv.min()) if sv.size else math.nan,
        collapsed=any(f[4] for f in found), last_skip=max((f[3] for f in found), default=None),
        regrowing=regrowing,
    )


def logged_scale(details: Any) -> float | None:
    """The loss scale an ``overflow_skip`` event reports (the new scale, else the one
    attempted), or None: the details come from a log and may hold anything."""
    if not isinstance(details, dict):
        return None
    for key in ("new_scale", "attempted_scale"):
        v = details.get(key)
        if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v):
            return float(v)
    return None
