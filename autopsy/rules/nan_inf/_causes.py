"""Why an optimisation blew up: the LR against its regime and schedule, warm-up, clipping.

Used by the blow-up rule and by the hidden-NaN rule (to repeat the blow-up advice). The
rules that use it declare :data:`autopsy.rules.nan_inf.thresholds.CAUSE`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from autopsy.model.finding import Evidence
from autopsy.model.run import Run
from autopsy.rules.lr_regime import lr_regime
from autopsy.signals import Schedule, lr_at, phase_at, reconstruct_schedule


@dataclass(frozen=True)
class BlowUpCause:
    """The primary cause of a blow-up, the contributing ones, and what to change."""

    primary: str
    others: tuple[str, ...]
    phrase: str
    also: str
    evidence: tuple[Evidence, ...]
    advice: tuple[str, ...]
    lr_high: bool
    advice_for: dict[str, str]


def _num(value: Any) -> float | None:
    try:
        out = float(value)
    except (TypeError, ValueError):
        return None
    return out if math.isfinite(out) else None


def _no_warmup(run: Run, sched: Schedule | None) -> tuple[bool | None, Evidence | None]:
    """Whether the run had no warm-up: the LR series first, else the config."""
    steps_e, ratio_e = run.config.get_entry("warmup_steps"), run.config.get_entry("warmup_ratio")
    cfg: bool | None = None
    if steps_e is not None or ratio_e is not None:
        cfg = not ((_num(steps_e.value) if steps_e else 0) or (_num(ratio_e.value) if ratio_e
                                                                else 0))
    if sched is not None and sched.warmup_steps > 0:
        return False, None
    if cfg is False:
        return False, None
    if sched is not None:
        return True, Evidence(
            summary=f"no warm-up: the learning rate starts at its peak ({sched.first:.3g} at "
                    f"step {sched.first_step}, peak {sched.peak:.3g})",
            tag="learning_rate", steps=(sched.first_step, sched.peak_step),
            numbers={"first": sched.first, "peak": sched.peak, "warmup_steps": 0})
    if cfg:
        entry = steps_e or ratio_e
        assert entry is not None
        return True, Evidence(summary=f"no warm-up configured ({entry.key}={entry.value})",
                              source=entry.source, numbers={entry.key: str(entry.value)})
    return None, None


def _clipping(run: Run) -> tuple[bool, str, Evidence | None]:
    """(clipping is off, how to say so, the config evidence)."""
    entry = run.config.get_entry("max_grad_norm")
    if entry is None:
        return True, "no max_grad_norm in the config (no clipping)", None
    value = _num(entry.value)
    if value is None or value <= 0:
        return True, f"no gradient clipping (max_grad_norm={entry.value})", Evidence(
            summary=f"max_grad_norm={entry.value}: gradients are not clipped",
            source=entry.source, numbers={"max_grad_norm": str(entry.value)})
    return False, f"max_grad_norm={entry.value}", None


def blowup_cause(run: Run, onset: int, th: Any) -> BlowUpCause:
    """Pick the primary cause of a blow-up that began at ``onset`` (see the NAN001 docs)."""
    lr_series = run.series("learning_rate")
    sched = reconstruct_schedule(lr_series) if len(lr_series) else None
    lr = lr_at(lr_series, onset) if len(lr_series) else None
    lr = lr if lr is not None else _num(run.config.get("learning_rate"))
    peak = sched.peak if sched is not None else lr
    reg = lr_regime(run, th)
    regime = reg.label + (" (assumed)" if reg.source is None else "")
    typical = reg.range_text
    high = float(th["high_lr_factor"]) * reg.high
    lr_high = lr is not None and lr >= high
    near_peak = lr is not None and peak is not None and lr >= float(th["peak_fraction"]) * peak
    no_warm, warm_ev = _no_warmup(run, sched)
    clip_off, clip_text, clip_ev = _clipping(run)
    steps = lr_series.index if len(lr_series) else run.series("loss").index
    first = int(steps.min()) if len(steps) else 0
    early = onset - first <= int(th["early_steps"])
    if lr_high and near_peak:
        primary = "lr_too_high"
    elif no_warm and early:
        primary = "no_warmup"
    elif clip_off:
        primary = "no_clipping"
    elif no_warm:
        primary = "no_warmup"
    else:
        primary = "lr_too_high"
    evidence: list[Evidence] = []
    lr_txt = f"{lr:.3g}" if lr is not None else "unknown"
    if lr is not None:
        where = f", phase {phase_at(sched, onset)}" if sched is not None else ""
        share = f" ({lr / peak:.0%} of the peak {peak:.3g}{where})" if peak else ""
        evidence.append(Evidence(
            summary=f"learning rate {lr_txt} at step {onset}{share}; above {high:.2g} is "
                    f"high for {regime} (typical {typical}; {reg.basis})",
            tag="learning_rate" if len(lr_series) else None,
            source=None if len(lr_series) else _source(run, "learning_rate"),
            steps=(onset, onset) if len(lr_series) else None,
            numbers={"lr": lr, "peak": peak, "high_for_regime": high}))
    evidence += [e for e in (warm_ev, clip_ev) if e is not None]
    phrases = {
        "lr_too_high": (f"the learning rate {lr_txt} is at its peak and high for {regime} "
                        f"(typical {typical})" if lr_high and near_peak else
                        f"the learning rate {lr_txt} was still too high for this model at "
                        f"step {onset} (clipping and warm-up are on: the LR is what is left)"),
        "no_warmup": f"no warm-up: the run started at its full learning rate {lr_txt}",
        "no_clipping": f"{clip_text} let the spike through" + (
            "" if lr_high else f" (the learning rate {lr_txt} is not unusual for {regime})"),
    }
    others = [c for c, on in (("lr_too_high", lr_high), ("no_warmup", bool(no_warm)),
                              ("no_clipping", clip_off)) if on and c != primary]
    short = {"lr_too_high": f"a high learning rate ({lr_txt})", "no_warmup": "no warm-up",
             "no_clipping": clip_text}
    total = _num(run.config.get("max_steps")) or (float(steps.max()) if len(steps) else 0.0)
    ratio = float(th["advice_warmup_ratio"])
    advice_for = {
        "lr_too_high": (f"lower the peak learning rate from {peak:.3g} to about "
                        f"{min(peak / 3, high / 2):.2g} (typical for {regime}: {typical})"
                        if peak else "lower the peak learning rate (3-10x)"),
        "no_warmup": (f"add a warm-up of ~{ratio:.0%} of the steps (warmup_ratio={ratio:g}, "
                      f"i.e. warmup_steps={max(1, round(ratio * total))} of {total:.0f})"),
        "no_clipping": "clip gradients: set max_grad_norm=1.0",
    }
    advice = [advice_for[c] for c in (primary, *others)]
    advice.append(f"restart from a checkpoint saved before step {onset}, where the blow-up "
                  f"began; later weights may already be damaged")
    return BlowUpCause(
        primary=primary, others=tuple(others), phrase=phrases[primary],
        also="; made worse by " + ", ".join(short[c] for c in others) if others else "",
        evidence=tuple(evidence), advice=tuple(advice), lr_high=lr_high,
        advice_for={c: advice_for[c] for c in (primary, *others)})


def _source(run: Run, key: str) -> str | None:
    entry = run.config.get_entry(key)
    return entry.source if entry is not None else None
