"""The run's NaN/Inf event, analysed once and owned by exactly one NaN/Inf rule.

:func:`classify` finds the first bad step (the first non-finite loss or grad norm, ordinary
fp16 scaler skips left out) and sorts the event into one kind, in this order:

- ``fp16_overflow``: the loss scaler collapsed, skipped runs of steps, or the loss is inf
  under fp16 (:mod:`._fp16`); also any non-finite value under fp16 that never recovers.
- ``blowup``: a grad-norm spike or a loss explosion in the last ``lookback_points`` finite
  points before the first bad step.
- ``bad_data``: the grad norm was logged, with enough points, and stayed flat before it.
- ``unexplained``: none of these can be told (no grad norm, no explosion).

Each NaN/Inf rule reports only its own kind, so one event gives one verdict-grade finding.
All NaN/Inf rules declare :data:`autopsy.rules.nan_inf.thresholds.CLASSIFY` so that they
classify alike.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from autopsy.model.finding import Evidence, Severity
from autopsy.model.run import Run
from autopsy.rules.nan_inf._fp16 import Fp16State, fp16_state
from autopsy.rules.nan_inf.thresholds import CLASSIFY
from autopsy.signals import Spike, find_spikes, non_finite_steps

KINDS = ("fp16_overflow", "blowup", "bad_data", "unexplained")


@dataclass(frozen=True)
class BlowUp:
    """What shows an optimisation blow-up before the first bad step."""

    onset: int
    spike: Spike | None  # the first spike of the escalation
    explosion: tuple[int, float, float] | None  # (step of the peak, peak, baseline)
    evidence: tuple[Evidence, ...]


@dataclass(frozen=True)
class NanEvent:
    """The run's NaN/Inf event (see the module docstring)."""

    kind: str
    severity: Severity
    step: int
    tag: str
    what: str
    loss_step: int | None
    grad_step: int | None
    prev_step: int | None
    recovered: bool
    hidden: bool
    fp16: Fp16State
    blowup: BlowUp | None
    grad_median: float
    grad_last: float
    grad_points: int
    evidence: tuple[Evidence, ...]

    @property
    def label(self) -> str:
        """The bad series as prose: "loss" or "grad norm"."""
        return self.tag.replace("_", " ")

    @property
    def interval_note(self) -> str:
        """" (any of steps a-b)" when the logging interval leaves the bad batch open."""
        if self.prev_step is not None and self.step - self.prev_step > 1:
            return f" (logged every {self.step - self.prev_step} steps: any of steps " \
                   f"{self.prev_step + 1}-{self.step}; step {self.prev_step} was still finite)"
        return ""


def _finite(s: pd.Series) -> pd.Series:
    return s[np.isfinite(s.to_numpy(dtype="float64", na_value=np.nan))]


def _describe(s: pd.Series, step: int) -> str:
    v = float(s.loc[step])
    return "NaN" if np.isnan(v) else ("+Inf" if v > 0 else "-Inf")


def _first_bad(s: pd.Series, skip: frozenset[int]) -> tuple[int | None, np.ndarray]:
    bad = non_finite_steps(s)
    bad = bad[~np.isin(bad, list(skip))] if skip else bad
    return (int(bad[0]) if bad.size else None), bad


def _grad_spike(grad: pd.Series, step: int, th: Any) -> tuple[Spike, Spike] | None:
    """The escalation of grad-norm spikes leading into ``step``: (first spike, largest)."""
    fin = _finite(grad[grad.index < step].sort_index())
    # A chain of spikes cannot outlast about half a window (the spikes raise the rolling
    # median), so the tail of the series is enough to score.
    fin = fin.iloc[-(3 * int(th["spike_window"]) + int(th["lookback_points"])):]
    spikes = find_spikes(fin, window=int(th["spike_window"]),
                         min_periods=int(th["spike_min_points"]),
                         min_score=float(th["spike_score"]), min_ratio=float(th["spike_ratio"]))
    steps = [int(x) for x in fin.index]
    recent = set(steps[-int(th["lookback_points"]):])
    hits = {s.step: s for s in spikes}
    if not any(st in recent for st in hits):
        return None
    i = max(i for i, st in enumerate(steps) if st in hits)  # the last spike before the event
    while i > 0 and steps[i - 1] in hits:
        i -= 1
    chain = [hits[st] for st in steps[i:] if st in hits]
    # a spike the grad norm came back down from is not what the NaN grew out of
    if float(fin.iloc[-1]) < float(th["spike_ratio"]) * chain[0].baseline:
        return None
    return chain[0], max(chain, key=lambda s: s.value)


def _explosion(loss: pd.Series, step: int, th: Any) -> tuple[int, float, float] | None:
    fin = _finite(loss[loss.index < step].sort_index())
    k = int(th["lookback_points"])
    if len(fin) < k + int(th["spike_min_points"]):
        return None
    recent, earlier = fin.iloc[-k:], fin.iloc[:-k].iloc[-int(th["spike_window"]):]
    base = float(np.median(earlier.to_numpy(dtype=float)))
    peak = float(recent.max())
    if base > 0 and peak >= float(th["explosion_factor"]) * base:
        return int(recent.idxmax()), peak, base
    return None


def _rise_start(loss: pd.Series, step: int, level: float) -> int:
    """The first step of the last stretch of finite points above ``level`` before ``step``."""
    fin = _finite(loss[loss.index < step].sort_index())
    steps, vals = fin.index.to_numpy(), fin.to_numpy(dtype=float)
    i = len(vals) - 1
    while i > 0 and vals[i - 1] > level:
        i -= 1
    return int(steps[i])


def _blowup(loss: pd.Series, grad: pd.Series, step: int, th: Any) -> BlowUp | None:
    spike = _grad_spike(grad, step, th) if len(grad) else None
    boom = _explosion(loss, step, th) if len(loss) else None
    if spike is None and boom is None:
        return None
    evidence = []
    onset = step
    if spike is not None:
        first, top = spike
        onset = first.step
        rose = f"; it rose to {top.value:.3g} by step {top.step}" if top.step != first.step else ""
        evidence.append(Evidence(
            summary=f"grad norm spiked at step {first.step}: {first.value:.3g}, "
                    f"{first.ratio:.3g}× its rolling median {first.baseline:.3g}{rose}",
            tag="grad_norm", steps=(first.step, top.step),
            numbers={"step": first.step, "value": first.value, "median": first.baseline,
                     "ratio": first.ratio, "score": first.score, "peak_step": top.step,
                     "peak": top.value}))
    if boom is not None:
        st, peak, base = boom
        start = _rise_start(loss, step, float(th["spike_ratio"]) * base)
        onset = min(onset, start) if spike is not None else start
        evidence.append(Evidence(
            summary=f"loss exploded while still finite: {peak:.3g} at step {st}, "
                    f"{peak / base:.3g}× its earlier median {base:.3g}",
            tag="loss", steps=(start, st),
            numbers={"step": st, "peak": peak, "median": base, "ratio": peak / base}))
    return BlowUp(onset=onset, spike=spike[0] if spike else None, explosion=boom,
                  evidence=tuple(evidence))


def _recovered(series: list[pd.Series], last_bad: int, skip: frozenset[int], th: Any) -> bool:
    """Whether every series has ``recover_points`` points after ``last_bad``, all finite."""
    for s in series:
        after = s[(s.index > last_bad) & ~s.index.isin(list(skip))]
        if len(after) < int(th["recover_points"]) or len(_finite(after)) != len(after):
            return False
    return True


def _severity(kind: str, non_finite: bool, recovered: bool, fp16: Fp16State) -> Severity:
    """CRITICAL for non-finite values that stay; an overflow that lasts, or a scale collapse
    the scaler has not grown back from, without them is an ERROR; anything else the run
    recovered from (a collapse whose scale rises again while every series is finite) is a
    WARNING."""
    if not recovered:
        return Severity.CRITICAL if non_finite else Severity.ERROR
    if kind == "fp16_overflow" and fp16.collapsed and not fp16.regrowing:
        return Severity.ERROR
    return Severity.WARNING


def _hidden(loss: pd.Series, grad: pd.Series, bad_grad: np.ndarray, step: int) -> bool:
    """The grad norm is non-finite while the logged loss stays finite (or is missing)."""
    if not bad_grad.size or not len(loss):
        return False
    if non_finite_steps(loss[loss.index >= step]).size:
        return False
    at_bad = loss.reindex(bad_grad).dropna()
    if len(at_bad):
        return True
    before = grad.index[grad.index < step]
    return bool(len(before)) and float(np.mean(before.isin(loss.index))) >= 0.5


def classify(run: Run, th: Any) -> NanEvent | None:
    """The run's NaN/Inf event, or None when the run has none (see the module docstring).

    Computed once per engine run and thresholds: every NaN/Inf rule asks for it.
    """
    if not hasattr(th, "cached"):  # plain thresholds, not a RuleContext
        return _classify(run, th)
    key = "nan_inf.classify" + repr(sorted((k, th[k]) for k in CLASSIFY))
    return th.cached(key, lambda: _classify(run, th))  # type: ignore[no-any-return]


def _classify(run: Run, th: Any) -> NanEvent | None:
    loss, grad = run.series("loss"), run.series("grad_norm")
    fp16 = fp16_state(run, loss, grad, th)
    loss_step, bad_loss = _first_bad(loss, frozenset())
    grad_step, bad_grad = _first_bad(grad, fp16.benign)
    firsts = [s for s in (loss_step, grad_step) if s is not None]
    if not firsts and fp16.overflow_step is None:
        return None
    step = min(firsts) if firsts else int(fp16.overflow_step or 0)
    tag = "loss" if loss_step == step else "grad_norm"
    series = loss if tag == "loss" else grad
    what = _describe(series, step) if firsts else "overflowing"
    bad_all = np.concatenate([bad_loss, bad_grad])
    last_bad = int(bad_all.max()) if bad_all.size else int(fp16.last_skip or step)
    recovered = _recovered([s for s in (loss, grad) if len(s)], last_bad, fp16.benign, th)
    blowup = _blowup(loss, grad, step, th) if firsts else None
    fin_grad = _finite(grad[grad.index < step])
    if fp16.overflow_step is not None or (fp16.active and firsts and not recovered):
        kind = "fp16_overflow"
    elif blowup is not None:
        kind = "blowup"
    elif len(fin_grad) >= int(th["spike_min_points"]):
        kind = "bad_data"
    else:
        kind = "unexplained"
    prev = series.index[series.index < step]
    evidence = []
    if firsts:
        bad_here = bad_loss if tag == "loss" else bad_grad
        last = int(series.index.max())
        evidence.append(Evidence(
            summary=f"{tag.replace('_', ' ')} is {what} at step {step}, first of "
                    f"{bad_here.size} non-finite points (of {int((series.index >= step).sum())} "
                    f"logged from there to step {last})",
            tag=tag, steps=(step, last),
            numbers={"first_bad_step": step, "non_finite_points": int(bad_here.size)}))
    gv = fin_grad.to_numpy(dtype=float)
    return NanEvent(
        kind=kind, severity=_severity(kind, bool(firsts), recovered, fp16), step=step,
        tag=tag, what=what, loss_step=loss_step, grad_step=grad_step,
        prev_step=int(prev.max()) if len(prev) else None, recovered=recovered,
        hidden=_hidden(loss, grad, bad_grad, step), fp16=fp16, blowup=blowup,
        grad_median=float(np.median(gv[-int(th["spike_window"]):])) if gv.size else np.nan,
        grad_last=float(gv[-1]) if gv.size else np.nan, grad_points=int(gv.size),
        evidence=tuple(evidence),
    )
