"""Reading config values for the lint rules: numbers, flags, and the run's step budget."""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import PurePath
from typing import Any

import numpy as np

from autopsy.model.config import ConfigValue
from autopsy.model.finding import Evidence
from autopsy.model.run import Run

#: Files that describe a model, not its training: a training key found there is not
#: evidence about how the run was trained. A ``config.json`` counts as one only when it
#: also gives ``model_type`` or ``architectures`` (a plain loop may keep its hparams there).
MODEL_CONFIG_FILES = ("adapter_config.json", "generation_config.json")
MODEL_CONFIG_MARKERS = ("model_type", "architectures")


def as_number(value: Any) -> float | None:
    """A finite int/float (not a bool), else None (also for an int too large for a float)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    try:
        number = float(value)
    except OverflowError:  # an integer of hundreds of digits in a hostile config
        return None
    return number if math.isfinite(number) else None




def is_model_config(run: Run, source: str | None) -> bool:
    """Whether ``source`` is a model (not training) config file of ``run``."""
    if source is None:
        return False
    if PurePath(source).name in MODEL_CONFIG_FILES:
        return True
    return any(e.source == source and e.key in MODEL_CONFIG_MARKERS
               for e in run.config.all_entries())


def config_evidence(entry: ConfigValue, note: str = "") -> Evidence:
    """A config value as evidence: ``max_grad_norm=0.0 (training_args.bin)``."""
    return Evidence(summary=f"{entry.key}={entry.value!r} ({entry.source}){note}",
                    source=entry.source, key=entry.key,
                    numbers={entry.key: entry.value if isinstance(entry.value, (int, float, str))
                             else repr(entry.value)})


def positive_entry(run: Run, key: str) -> ConfigValue | None:
    """The first value of ``key`` from any source that is a positive number (e.g. a
    ``max_steps`` of -1 in training_args.bin gives way to trainer_state.json's count)."""
    for entry in run.config.all_entries():
        if entry.key == key:
            v = as_number(entry.value)
            if v is not None and v > 0:
                return entry
    return None


@dataclass(frozen=True)
class StepBudget:
    """How many optimizer steps the run was meant to take, and how that is known."""

    steps: int | None
    how: str
    entry: ConfigValue | None = None
    steps_per_epoch: float | None = None


def steps_per_epoch(run: Run) -> float | None:
    """Optimizer steps per epoch from the logged ``epoch`` series (step / epoch at its end)."""
    s = run.series("epoch")
    v = s.to_numpy(dtype=float)
    ok = np.isfinite(v) & (v > 0)
    if not ok.any():
        return None
    i = int(np.flatnonzero(ok)[-1])
    step = float(s.index[i])
    return step / float(v[i]) if step > 0 else None


def step_budget(run: Run) -> StepBudget:
    """The expected optimizer steps: ``max_steps``, else epochs × steps per epoch."""
    entry = positive_entry(run, "max_steps")
    if entry is not None:
        return StepBudget(int(entry.value), f"max_steps={int(entry.value)} ({entry.source})",
                          entry, steps_per_epoch(run))
    epochs = positive_entry(run, "num_train_epochs")
    spe = steps_per_epoch(run)
    if epochs is not None and spe is not None:
        total = round(float(epochs.value) * spe)
        return StepBudget(total, f"num_train_epochs={epochs.value} ({epochs.source}) × "
                                 f"{spe:.4g} steps per epoch (from the logged epoch)", epochs, spe)
    if epochs is not None:
        return StepBudget(None, f"num_train_epochs={epochs.value} ({epochs.source}) but the "
                                f"dataset size is unknown (no epoch series logged)", epochs)
    return StepBudget(None, "neither max_steps nor num_train_epochs is known")


def last_step(run: Run) -> int | None:
    """The last step reached: ``global_step`` or the largest logged step, whichever is larger."""
    steps = run.scalars["step"].to_numpy(dtype=float) if not run.scalars.empty else np.array([])
    steps = steps[np.isfinite(steps)]
    logged = int(steps.max()) if steps.size else None
    g = as_number(run.config.get("global_step"))
    known = [int(x) for x in (logged, g) if x is not None]
    return max(known) if known else None
