"""CFG004: the effective batch size and the expected number of optimizer steps (a note)."""

from __future__ import annotations

from autopsy.model.finding import Evidence, Family, Finding, Severity
from autopsy.model.run import Run
from autopsy.rules.config._cfg import as_number, config_evidence, step_budget
from autopsy.rules.context import RuleContext
from autopsy.rules.registry import rule


@rule(
    code="CFG004",
    name="batch-and-steps",
    family=Family.SLOW,
    requires=("config:per_device_train_batch_size|config:train_batch_size|config:max_steps",),
)
def batch_and_steps(run: Run, ctx: RuleContext) -> Finding | None:
    """The effective batch size and the expected number of optimizer steps.

    What happened:
        A note, not a problem: how many examples each optimizer step sees
        (per-device batch × gradient accumulation × world size) and how many optimizer
        steps the run was set to take. It is filed under ``slow`` because that is where
        these numbers matter (throughput, time to finish), with severity ``info``, so it
        never becomes the verdict.

    Why it happens:
        The effective batch size sets the gradient noise and, with it, the LR that
        works (a larger batch tolerates a larger LR); the step budget sets the length of
        the warm-up and decay. Both are easy to get wrong when accumulation or the
        number of GPUs changes between runs.

    How to fix:
        Nothing, unless the numbers are not what was intended. When changing the world
        size or accumulation, keep the effective batch size or rescale the LR (roughly
        linearly for SGD, by the square root for Adam).

    Evidence shown:
        ``per_device_train_batch_size`` (or the Trainer's ``train_batch_size``),
        ``gradient_accumulation_steps`` and ``world_size`` with their files (1 assumed,
        and said, for those absent), and the step budget: ``max_steps``, or
        ``num_train_epochs`` × the steps per epoch read off the logged ``epoch``
        (saying when the dataset size is unknown).
    """
    cfg = run.config
    per_device = cfg.get_entry("per_device_train_batch_size") or cfg.get_entry("train_batch_size")
    evidence: list[Evidence] = []
    parts: list[str] = []
    assumed: list[str] = []
    effective: int | None = None
    if per_device is not None and as_number(per_device.value):
        effective = int(per_device.value)
        evidence.append(config_evidence(per_device))
        parts.append(f"{effective} per device")
        for key, unit in (("gradient_accumulation_steps", "accumulation"),
                          ("world_size", "rank")):
            entry = cfg.get_entry(key)
            value = as_number(entry.value) if entry is not None else None
            if entry is None or not value:
                assumed.append(key)
                value = 1.0
            else:
                evidence.append(config_evidence(entry))
            effective *= int(value)
            plural = "s" if unit == "rank" and int(value) != 1 else ""
            parts.append(f"{int(value)} {unit}{plural}")
    budget = step_budget(run)
    if budget.entry is not None:
        evidence.append(config_evidence(budget.entry))
    sentences: list[str] = []
    if effective is not None:
        note = f" ({' and '.join(assumed)} not in the config: 1 assumed)" if assumed else ""
        sentences.append(f"Effective batch size {effective} = {' × '.join(parts)}{note}.")
    if budget.steps is not None:
        sentences.append(f"Expected optimizer steps: {budget.steps} ({budget.how}).")
        if effective is not None and budget.steps_per_epoch:
            sentences.append(f"About {budget.steps_per_epoch * effective:.0f} training examples "
                             f"per epoch ({budget.steps_per_epoch:.4g} steps per epoch).")
    else:
        sentences.append(f"Expected optimizer steps unknown: {budget.how}.")
    evidence.append(Evidence(summary=" ".join(sentences),
                             numbers={"effective_batch_size": effective,
                                      "expected_steps": budget.steps}))
    return ctx.finding(
        message=" ".join(sentences),
        severity=Severity.INFO,
        confidence=0.9 if not assumed else 0.7,
        title="Effective batch size and step budget",
        evidence=evidence,
    )
