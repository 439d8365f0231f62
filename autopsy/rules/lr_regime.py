"""The run's learning-rate regime (LoRA, full fine-tuning, SGD) and its peak LR.

Rules that judge an LR as too low or too high (FLAT003, CFG003) compare it with the
typical range of the run's regime, read from its own config:

- ``finetune_mode == "lora"`` (an ``adapter_config.json`` was found): LoRA, typically
  ``lora_lr_low..lora_lr_high`` (1e-4..3e-4);
- an ``optim`` naming plain SGD: SGD, typically ``sgd_lr_low..sgd_lr_high`` (1e-3..1e-1);
- otherwise, for a run with a trainer's arguments (:data:`TRAINER_KEYS`), full
  fine-tuning with an Adam-family optimizer, typically ``full_lr_low..full_lr_high``
  (1e-5..5e-5). The config cannot tell fine-tuning from pre-training from scratch
  (typically 1e-4..1e-3); the regime says so;
- a run whose config names none of these (a text log, a Keras or Lightning table): the
  regime is unknown, and judged against the highest usual range (``sgd_lr_high``), so
  that a CNN trained from scratch with SGD at 0.02 is not held to fine-tuning's range.

Rules that use it declare :data:`autopsy.rules.thresholds.LR_REGIME` among their
thresholds (the ranges' defaults and why each has its value are declared there).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from autopsy.model.run import Run
from autopsy.rules.config._cfg import as_number


@dataclass(frozen=True)
class Regime:
    """A training regime and its typical LR range.

    Attributes:
        name: ``"lora"``, ``"sgd"`` or ``"full"``.
        label: how a report names it ("LoRA fine-tuning", ...).
        low: the bottom of the typical range.
        high: the top of the typical range.
        basis: why this regime was chosen, with the assumption made, for the report.
        source: the config file the decision rests on (None when it is a default).
    """

    name: str
    label: str
    low: float
    high: float
    basis: str
    source: str | None

    @property
    def range_text(self) -> str:
        """``"1e-05..5e-05"``."""
        return f"{self.low:.0e}..{self.high:.0e}"


@dataclass(frozen=True)
class PeakLR:
    """The peak learning rate and where it was read.

    Attributes:
        value: the LR.
        origin: ``"series"`` (peak of the logged ``learning_rate``) or ``"config"``.
        source: the config file (for ``"config"``), else None.
        step: the step of the peak (for ``"series"``), else None.
        config_value: the configured ``learning_rate`` when known (for the evidence).
    """

    value: float
    origin: str
    source: str | None = None
    step: int | None = None
    config_value: float | None = None

    def describe(self) -> str:
        """One phrase: "peak logged LR 2e-06 (step 40; config learning_rate 2e-06)"."""
        if self.origin == "series":
            cv = self.config_value
            cfg = "" if cv is None else f"; config learning_rate {cv:.3g}"
            return f"peak logged LR {self.value:.3g} (step {self.step}{cfg})"
        return f"learning_rate {self.value:.3g} (from {self.source})"


def lr_regime(run: Run, thresholds: Mapping[str, Any]) -> Regime:
    """The run's regime, from ``finetune_mode`` and ``optim`` (see the module docstring)."""
    mode = run.config.get_entry("finetune_mode")
    if mode is not None and str(mode.value).lower() == "lora":
        return Regime("lora", "LoRA fine-tuning", float(thresholds["lora_lr_low"]),
                      float(thresholds["lora_lr_high"]),
                      f"finetune_mode=lora from {mode.source}", mode.source)
    optim = run.config.get_entry("optim")
    if optim is not None and "sgd" in str(optim.value).lower():
        return Regime("sgd", "SGD training", float(thresholds["sgd_lr_low"]),
                      float(thresholds["sgd_lr_high"]),
                      f"optim={optim.value} from {optim.source}", optim.source)
    if not any(run.config.get_entry(k) is not None for k in TRAINER_KEYS):
        # nothing says fine-tuning: a CNN trained from scratch with SGD at 0.02, a
        # language model pre-trained with Adam at 1e-3; judged against the highest usual
        # range (SGD's), so only an LR high for any regime is called high
        return Regime("unknown", "any regime", float(thresholds["full_lr_low"]),
                      float(thresholds["sgd_lr_high"]),
                      "the config names no regime (no trainer arguments, no adapter config, "
                      "no optimizer)", None)
    basis = ("no adapter config found, so full fine-tuning with an Adam-family optimizer "
             "is assumed; a pre-training run from scratch typically uses 1e-4..1e-3")
    return Regime("full", "full fine-tuning", float(thresholds["full_lr_low"]),
                  float(thresholds["full_lr_high"]), basis, None)


#: Config keys of a trainer's arguments (the HF Trainer's, and the like): a run that has
#: them is taken for the fine-tuning these trainers are mostly used for, unless an adapter
#: config or an SGD optimizer says otherwise.
TRAINER_KEYS: tuple[str, ...] = ("training_args_class", "warmup_steps", "warmup_ratio",
                                 "per_device_train_batch_size", "lr_scheduler_type",
                                 "max_grad_norm", "logging_nan_inf_filter",
                                 "gradient_accumulation_steps", "logging_steps")


def peak_lr(run: Run) -> PeakLR | None:
    """The peak LR: the largest finite logged ``learning_rate``, else the config value."""
    entry = run.config.get_entry("learning_rate")
    cfg = as_number(entry.value) if entry is not None else None
    lr = run.series("learning_rate")
    values = lr.to_numpy(dtype=float)
    finite = np.isfinite(values)
    if finite.any():
        i = int(np.argmax(np.where(finite, values, -np.inf)))
        return PeakLR(float(values[i]), "series", step=int(lr.index[i]), config_value=cfg)
    if cfg is not None and entry is not None:
        return PeakLR(cfg, "config", source=entry.source)
    return None
