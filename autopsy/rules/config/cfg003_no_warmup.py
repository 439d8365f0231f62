"""CFG003: no warm-up with an LR above the regime's range."""

from __future__ import annotations

from autopsy.model.config import ConfigValue
from autopsy.model.finding import Evidence, Family, Finding, Severity
from autopsy.model.run import Run
from autopsy.rules.config._cfg import as_number, config_evidence, step_budget
from autopsy.rules.config.thresholds import CFG003
from autopsy.rules.context import RuleContext
from autopsy.rules.lr_regime import lr_regime, peak_lr
from autopsy.rules.registry import rule
from autopsy.signals import Schedule, reconstruct_schedule


def _warmup(run: Run) -> tuple[bool | None, list[Evidence]]:
    """(True: a warm-up, False: none, None: unknown), with the evidence for it.

    A warm-up in the config (warmup_steps or warmup_ratio > 0) counts even when sparse
    logging hides it; otherwise the logged LR decides (no warm-up when it starts at its
    peak), else the config's zeros do.
    """
    entries: list[ConfigValue] = [e for e in (run.config.get_entry("warmup_steps"),
                                              run.config.get_entry("warmup_ratio")) if e]
    if any((as_number(e.value) or 0) > 0 for e in entries):
        return True, [config_evidence(e) for e in entries]
    sched: Schedule | None = reconstruct_schedule(run.series("learning_rate"))
    if sched is not None:
        ev = Evidence(
            summary=f"logged LR starts at {sched.first:.3g}, peak {sched.peak:.3g} at step "
                    f"{sched.peak_step}: reconstructed warm-up {sched.warmup_steps} steps",
            tag="learning_rate", steps=(sched.first_step, sched.last_step),
            numbers={"first": sched.first, "peak": sched.peak, "warmup_steps": sched.warmup_steps},
        )
        return sched.warmup_steps > 0, [*(config_evidence(e) for e in entries), ev]
    if entries and all(as_number(e.value) == 0 for e in entries):
        return False, [config_evidence(e) for e in entries]
    return None, []


@rule(
    code="CFG003",
    name="no-warmup-high-lr",
    family=Family.DIVERGING,
    causes=("no_warmup",),
    requires=("learning_rate|config:learning_rate",),
    thresholds=CFG003,
)
def no_warmup_high_lr(run: Run, ctx: RuleContext) -> Finding | None:
    """No learning-rate warm-up, with an LR above the regime's usual range.

    What happened:
        The run starts at its peak learning rate (``warmup_steps=0`` and
        ``warmup_ratio=0``, or a logged LR that starts at its peak), and that peak is
        above the range usually used for the run's regime. This is a risk, not a
        failure: a warning (family ``diverging``) that never becomes the verdict on its
        own, though a NaN or divergence rule may cite it.

    Why it happens:
        At the first steps Adam's second-moment estimates are poor and the weights sit
        in a sharp region; the full LR at once can push them off (an early loss spike,
        divergence or NaN). A short linear warm-up avoids it. The regime comes from the
        config: LoRA (``finetune_mode=lora``) typically 1e-4..3e-4, SGD typically
        1e-3..1e-1, otherwise full fine-tuning with Adam, typically 1e-5..5e-5 (a
        pre-training run from scratch typically 1e-4..1e-3, and warms up too).

    How to fix:
        Add a warm-up of 1-5% of the optimizer steps (HF: ``warmup_steps=N`` or
        ``warmup_ratio=0.03``); the finding gives N from the run's step budget. Lower
        the peak LR into the regime's range if it was not deliberate.

    Evidence shown:
        The warm-up settings with their files, the reconstructed schedule of the logged
        LR, the peak LR against the regime's range, and the step budget used for the
        advice (``warmup_frac`` of it). Fires when there is no warm-up and the peak LR
        is above ``lora_lr_high``, ``sgd_lr_high`` or ``full_lr_high`` for the regime.
    """
    lr = peak_lr(run)
    regime = lr_regime(run, ctx.thresholds)
    if lr is None or lr.value <= regime.high:
        return None
    has_warmup, evidence = _warmup(run)
    if has_warmup is not False:
        return None
    evidence.append(Evidence(
        summary=f"{lr.describe()} is above the {regime.label} range {regime.range_text} "
                f"({regime.basis})",
        tag="learning_rate" if lr.origin == "series" else None, source=lr.source,
        numbers={"lr": lr.value, "regime": regime.name, "high": regime.high},
    ))
    budget = step_budget(run)
    frac = float(ctx["warmup_frac"])
    if budget.steps:
        n = max(1, round(frac * budget.steps))
        lo, hi = max(1, round(0.01 * budget.steps)), max(1, round(0.05 * budget.steps))
        advice = (f"Add a warm-up of 1-5% of the {budget.steps} steps ({lo}-{hi}): "
                  f"warmup_steps={n} (or warmup_ratio={frac:g}); {budget.how}.")
    else:
        advice = (f"Add a warm-up of 1-5% of the optimizer steps (warmup_ratio={frac:g}); "
                  f"the step count is unknown: {budget.how}.")
    assumed = "" if regime.source is not None else (
        " (the config names no regime)" if regime.name == "unknown"
        else " (regime assumed: no adapter config)")
    return ctx.finding(
        message=f"No LR warm-up, and the peak LR {lr.value:.3g} is above the {regime.label} "
                f"range {regime.range_text}{assumed}: the first steps take the full LR at once.",
        severity=Severity.WARNING,
        confidence=0.7,
        cause="no_warmup",
        evidence=evidence,
        advice=(advice, f"Check the peak LR: {regime.label} typically uses "
                        f"{regime.range_text}."),
    )
