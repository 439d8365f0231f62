"""What the not-decreasing rules share: "is the loss flat near its start?" and which cause.

Every FLAT rule calls :func:`flat_loss` and fires only when the cause it returns is its
own, so exactly one of them explains a flat run. The causes are tried in this order,
each excluding the next:

1. ``labels_masked``: the loss is 0 at every point (``|loss| <= zero_loss``; with a grad
   norm of 0 at every point too, from a single logged point on), or
   constant to ``const_rel`` of its level with zero gradients (grad norm absent, at most
   ``zero_grad_norm``, or not finite while the loss reads 0: the HF Trainer's NaN
   filter logs 0 for a NaN loss);
2. ``frozen_params``: grad norm logged, its median at most ``zero_grad_norm``;
3. ``lr_too_low``: the peak LR below the bottom of the regime's range
   (:mod:`autopsy.rules.lr_regime`);
4. ``frozen_params`` again, on weaker evidence: outside LoRA, a grad norm whose median
   is at most ``tiny_grad_rel`` × the loss level. When the whole model (output layer
   included) trains, the grad norm of a cross-entropy loss is typically 0.1-5× the loss
   (largest at chance level, where p - y is largest); far below it, only a sliver of the
   model is trainable. LoRA is excluded: its adapters are a sliver by design;
5. ``chance_level``: the loss within ``chance_tol`` (relative) of ln(C) for C =
   ``num_labels`` or ``vocab_size``;
6. ``None``: flat, cause not established (FLAT005).

The thresholds, with why each has its value, are declared in
:data:`autopsy.rules.not_decreasing.thresholds.FLAT` (every FLAT rule declares all of them).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from autopsy.model.finding import Evidence
from autopsy.model.run import Run
from autopsy.rules.lr_regime import PeakLR, Regime, lr_regime, peak_lr
from autopsy.signals import Plateau, plateau_test
from autopsy.signals.interval import start_in_intervals

#: Architecture name endings whose loss is a cross-entropy over ``num_labels`` classes.
CLASSIFIER_HEADS = ("ForSequenceClassification", "ForTokenClassification",
                    "ForImageClassification", "ForAudioClassification")
HF_DEFAULT_NUM_LABELS = 2


@dataclass(frozen=True)
class Grad:
    """The grad norm over the flat window."""

    median: float
    max: float
    n: int
    non_finite: int


@dataclass(frozen=True)
class Chance:
    """A chance level ln(C) the loss sits at."""

    classes: int
    key: str
    level: float
    deviation: float
    source: str | None
    note: str = ""


@dataclass(frozen=True)
class FlatLoss:
    """A training loss flat near its initial value, and what explains it."""

    plateau: Plateau
    initial: float
    level: float
    first_step: int
    last_step: int
    n: int
    zero: bool
    constant: bool
    grad: Grad | None
    lr: PeakLR | None
    regime: Regime
    chance: Chance | None
    cause: str | None
    #: the series judged: the training loss, else (none logged) the eval loss
    tag: str = "loss"

    def loss_evidence(self) -> Evidence:
        """The flat loss as evidence."""
        p = self.plateau
        what = "loss" if self.tag == "loss" else f"{self.tag} (no training loss logged)"
        return Evidence(
            summary=f"{what} flat at {self.level:.6g} over {self.n} points, steps "
                    f"{self.first_step}-{self.last_step} (initial {self.initial:.6g}, "
                    f"change {p.rel_change:+.1%}, noise {p.noise:.1%})",
            tag=self.tag, steps=(self.first_step, self.last_step),
            numbers={"initial": self.initial, "level": self.level, "start_level": p.start_level,
                     "end_level": p.end_level, "rel_change": p.rel_change, "points": self.n},
        )

    def grad_evidence(self) -> Evidence | None:
        """The grad norm as evidence (None when not logged)."""
        g = self.grad
        if g is None:
            return None
        bad = f", {g.non_finite} not finite" if g.non_finite else ""
        return Evidence(
            summary=f"grad norm median {g.median:.3g}, max {g.max:.3g} over {g.n} finite "
                    f"points{bad}",
            tag="grad_norm", steps=(self.first_step, self.last_step),
            numbers={"median": g.median, "max": g.max, "points": g.n, "non_finite": g.non_finite},
        )

    def lr_evidence(self) -> Evidence | None:
        """The peak LR against the regime's range (None when no LR is known)."""
        if self.lr is None:
            return None
        r = self.regime
        return Evidence(
            summary=f"{self.lr.describe()}; {r.label} typically uses {r.range_text} "
                    f"({r.basis})",
            tag="learning_rate" if self.lr.origin == "series" else None,
            source=self.lr.source,
            key="learning_rate" if self.lr.origin == "config" else None,
            numbers={"lr": self.lr.value, "regime": r.name, "low": r.low, "high": r.high},
        )


def _grad(run: Run, first: int, last: int) -> Grad | None:
    s = run.series("grad_norm")
    if s.empty:
        return None
    s = s[(s.index >= first) & (s.index <= last)]
    v = s.to_numpy(dtype=float)
    finite = v[np.isfinite(v)]
    if v.size == 0:
        return None
    if finite.size == 0:
        return Grad(math.nan, math.nan, 0, int(v.size))
    return Grad(float(np.median(np.abs(finite))), float(np.max(np.abs(finite))),
                int(finite.size), int(v.size - finite.size))


def _int(value: Any) -> int | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return int(value) if value >= 2 and float(value).is_integer() else None


def _class_counts(run: Run) -> list[tuple[int, str, str | None, str]]:
    """Candidate class counts: (C, key, source, note)."""
    out: list[tuple[int, str, str | None, str]] = []
    cfg = run.config
    problem = str(cfg.get("problem_type") or "")
    arch = " ".join(str(a) for a in (cfg.get("architectures") or []))
    num = cfg.get_entry("num_labels")
    if problem == "multi_label_classification":
        src = cfg.get_entry("problem_type")
        out.append((2, "problem_type", src.source if src else None,
                    "per-label binary cross-entropy"))
    elif problem != "regression":
        if num is not None and _int(num.value):
            out.append((int(num.value), "num_labels", num.source, ""))
        elif any(arch.endswith(h) or h in arch for h in CLASSIFIER_HEADS):
            src = cfg.get_entry("architectures")
            out.append((HF_DEFAULT_NUM_LABELS, "num_labels", src.source if src else None,
                        "no id2label in the config: the HF default of 2 labels assumed"))
    vocab = cfg.get_entry("vocab_size")
    if vocab is not None and _int(vocab.value):
        out.append((int(vocab.value), "vocab_size", vocab.source, ""))
    return out


def _chance(run: Run, level: float, tol: float) -> Chance | None:
    best: Chance | None = None
    for classes, key, source, note in _class_counts(run):
        ln_c = math.log(classes)
        dev = abs(level - ln_c) / ln_c
        if dev <= tol and (best is None or dev < best.deviation):
            best = Chance(classes, key, ln_c, dev, source, note)
    return best


def _implied_chance(level: float, tol: float) -> Chance | None:
    """Chance level over k classes when ``level`` is ln(k) for a whole k >= 2 (no config)."""
    if not level > 0.5 or level > 30:
        return None
    k = round(math.exp(level))
    if k < 2:
        return None
    dev = abs(level - math.log(k)) / math.log(k)
    if dev > tol:
        return None
    return Chance(k, "implied", math.log(k), dev, None,
                  note=f"no class count in the config: ln({k}) = {math.log(k):.4f}")


def _stuck_tail(run: Run, loss: Any, t: Mapping[str, Any]) -> FlatLoss | None:
    """A loss that stopped changing at all: identical over its last points (see
    ``min_constant_points``), where a noisy plateau test needs more points than the run has.
    """
    y_all = loss.to_numpy(dtype=float)
    steps_all = loss.index.to_numpy()
    keep = np.isfinite(y_all)
    y, steps = y_all[keep], steps_all[keep]
    need = int(t["min_constant_points"])
    if y.size < need:
        return None
    level = float(y[-1])
    if abs(level) < float(t["min_constant_level"]):
        return None
    same = np.abs(y - level) <= float(t["const_rel"]) * abs(level)
    tail = int(np.argmin(same[::-1])) if not same.all() else y.size  # constant points at the end
    if tail < need or tail * 4 < y.size:
        return None
    first, last = int(steps[y.size - tail]), int(steps[-1])
    chance = _chance(run, level, float(t["chance_tol"])) or _implied_chance(
        level, float(t["implied_chance_tol"]))
    grad = _grad(run, first, last)
    lr, regime = peak_lr(run), lr_regime(run, t)
    grad_zero = grad is not None and grad.n > 0 and grad.median <= float(t["zero_grad_norm"])
    cause = "chance_level" if chance is not None else "frozen_params" if grad_zero else None
    plateau = Plateau(is_flat=True, slope=0.0, rel_change=0.0, noise=0.0, start_level=level,
                      end_level=level, n=tail)
    return FlatLoss(plateau=plateau, initial=float(y[0]), level=level, first_step=first,
                    last_step=last, n=tail, zero=False, constant=True, grad=grad, lr=lr,
                    regime=regime, chance=chance, cause=cause)


def flat_loss(run: Run, t: Mapping[str, Any]) -> FlatLoss | None:
    """The flat-loss analysis, with its cause; None when the loss is not flat near its start
    and has not stopped changing at its end (:func:`_stuck_tail`)."""
    tag = judged_loss(run)
    loss = run.series(tag)
    found = (_flat_plateau(run, loss, t) or _stuck_tail(run, loss, t)
             or _no_signal(run, loss, t) or _zero_lr(run, loss, t))
    return replace(found, tag=tag) if found is not None and tag != "loss" else found


def _no_signal(run: Run, loss: Any, t: Mapping[str, Any]) -> FlatLoss | None:
    """A loss of 0 with a grad norm of 0 at every logged point, however few (the plateau
    and stuck-loss tests need several): no training signal at all (labels_masked)."""
    y = loss.to_numpy(dtype=float)
    if y.size == 0 or not np.isfinite(y).all() or not np.all(np.abs(y) <= t["zero_loss"]):
        return None
    steps = loss.index.to_numpy()
    first, last = int(steps[0]), int(steps[-1])
    grad = _grad(run, first, last)
    if grad is None or grad.n == 0 or grad.non_finite or grad.max > t["zero_grad_norm"]:
        return None
    plateau = Plateau(is_flat=True, slope=0.0, rel_change=0.0, noise=0.0, start_level=0.0,
                      end_level=0.0, n=int(y.size))
    return FlatLoss(plateau=plateau, initial=float(y[0]), level=0.0, first_step=first,
                    last_step=last, n=int(y.size), zero=True, constant=True, grad=grad,
                    lr=peak_lr(run), regime=lr_regime(run, t), chance=None,
                    cause="labels_masked")


def _zero_lr(run: Run, loss: Any, t: Mapping[str, Any]) -> FlatLoss | None:
    """A loss that did not fall while the logged learning rate was 0 at every logged point,
    from the run's start (its first logged point within ``late_start_intervals`` logging
    intervals of step 0), however few points (at least ``min_constant_points``): the weights
    cannot move. A window from late in a run (an LR decayed to 0 at the end, a converged
    loss) is not judged."""
    lr = run.series("learning_rate").to_numpy(dtype=float)
    if lr.size < int(t["min_constant_points"]) or not np.all(lr == 0.0):
        return None
    values = loss.to_numpy(dtype=float)
    finite = np.isfinite(values)
    y, steps = values[finite], loss.index.to_numpy()[finite]
    if y.size < int(t["min_constant_points"]):
        return None
    start = start_in_intervals(steps)
    if start is None or start > float(t["late_start_intervals"]):
        return None
    initial = float(np.median(y[: max(1, int(t["initial_points"]))]))
    level = float(np.median(y))
    if initial > 0 and (initial - float(y[-1])) / initial > t["max_initial_drop"]:
        return None
    first, last = int(steps[0]), int(steps[-1])
    plateau = Plateau(is_flat=True, slope=0.0, rel_change=0.0, noise=0.0, start_level=initial,
                      end_level=float(y[-1]), n=int(y.size))
    return FlatLoss(plateau=plateau, initial=initial, level=level, first_step=first,
                    last_step=last, n=int(y.size), zero=False, constant=False,
                    grad=_grad(run, first, last), lr=peak_lr(run), regime=lr_regime(run, t),
                    chance=None, cause="lr_too_low")


def judged_loss(run: Run) -> str:
    """The loss the flat rules judge: the training loss, else the eval loss (a run that
    logs only its evaluations, ``Val epoch 3 has acc 0.25 and loss 1.386``)."""
    loss = run.series("loss").to_numpy(dtype=float)
    return "loss" if np.isfinite(loss).any() or not run.has("eval_loss") else "eval_loss"


def _flat_plateau(run: Run, loss: Any, t: Mapping[str, Any]) -> FlatLoss | None:
    """A loss flat near its initial value over at least ``min_points`` points."""
    values = loss.to_numpy(dtype=float)
    finite = np.isfinite(values)
    if finite.sum() < t["min_points"]:
        return None
    plateau = plateau_test(loss, rel_tol=float(t["flat_rel_tol"]), min_points=int(t["min_points"]))
    if plateau is None or not plateau.is_flat:
        return None
    y = values[finite]
    steps = loss.index.to_numpy()[finite]
    initial = float(np.median(y[: max(1, int(t["initial_points"]))]))
    end = plateau.end_level
    if initial > 0 and (initial - end) / initial > t["max_initial_drop"]:
        return None  # fell, then flattened: converged or stalled late, not "never learned"
    level = float(np.median(y))
    zero = bool(np.all(np.abs(y) <= t["zero_loss"]))
    constant = bool(np.ptp(y) <= t["const_rel"] * max(abs(level), 1e-12)) or zero
    first, last = int(steps[0]), int(steps[-1])
    grad = _grad(run, first, last)
    lr, regime = peak_lr(run), lr_regime(run, t)
    chance = _chance(run, level, float(t["chance_tol"]))
    cause = _cause(zero=zero, constant=constant, grad=grad, lr=lr, regime=regime,
                   chance=chance, zero_grad=float(t["zero_grad_norm"]),
                   tiny_grad=float(t["tiny_grad_rel"]) * abs(level))
    return FlatLoss(
        plateau=plateau, initial=initial, level=level, first_step=first, last_step=last,
        n=int(y.size), zero=zero, constant=constant, grad=grad, lr=lr,
        regime=regime, chance=chance, cause=cause,
    )


def _cause(*, zero: bool, constant: bool, grad: Grad | None, lr: PeakLR | None,
           regime: Regime, chance: Chance | None, zero_grad: float,
           tiny_grad: float) -> str | None:
    """The one cause the evidence supports, in the order of the module docstring."""
    grad_zero = grad is not None and grad.n > 0 and grad.median <= zero_grad
    grad_nan_only = grad is not None and grad.n == 0
    if zero and (grad is None or grad_zero or grad_nan_only):
        return "labels_masked"
    if constant and (grad is None or grad_zero):
        return "labels_masked"
    if grad_zero:
        return "frozen_params"
    if lr is not None and lr.value < regime.low and not zero:
        return "lr_too_low"
    if grad is not None and grad.n > 0 and grad.median <= tiny_grad and regime.name != "lora":
        return "frozen_params"
    if chance is not None and not zero:
        return "chance_level"
    return None


def thirds(values: np.ndarray) -> tuple[float, float]:
    """The medians of the first and last thirds of ``values`` (one point each at least): how
    the FLAT rules read an accuracy's (or a loss's) start and end."""
    third = max(1, len(values) // 3)
    return float(np.median(values[:third])), float(np.median(values[-third:]))
