"""The run's configuration: what it was told to do, each value with its source."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

#: Config keys the readers fill and rules read, with their meaning. Readers may add
#: others (everything a source says is kept), but these names are the contract.
KNOWN_KEYS: dict[str, str] = {
    "learning_rate": "peak learning rate the optimizer was given",
    "warmup_steps": "number of warm-up steps",
    "warmup_ratio": "warm-up length as a fraction of training",
    "lr_scheduler_type": "schedule after warm-up (linear, cosine, constant, ...)",
    "max_grad_norm": "gradient clipping threshold (0 or None: no clipping)",
    "fp16": "mixed precision with float16 and loss scaling",
    "bf16": "mixed precision with bfloat16",
    "per_device_train_batch_size": "micro-batch size per device",
    "gradient_accumulation_steps": "micro-batches per optimizer step",
    "world_size": "number of ranks",
    "weight_decay": "weight decay",
    "optim": "optimizer name",
    "seed": "random seed",
    "num_train_epochs": "epochs asked for",
    "max_steps": "optimizer steps asked for",
    "global_step": "last optimizer step reached",
    "logging_steps": "steps between log entries",
    "save_steps": "steps between checkpoints",
    "eval_steps": "steps between evaluations",
    "finetune_mode": "'lora' (adapter) or 'full'",
    "model_type": "architecture family from config.json",
    "vocab_size": "vocabulary size",
    "num_labels": "number of classes of a classification head",
}


@dataclass(frozen=True)
class ConfigValue:
    """One configuration value and where it came from."""

    key: str
    value: Any
    source: str


class RunConfig:
    """All configuration values found, first source wins per key, others kept.

    ``config["learning_rate"]`` gives the value; :meth:`get_entry` gives the
    :class:`ConfigValue` with its source; :meth:`all_entries` every value found,
    including those a higher-priority source overrode.
    """

    def __init__(self, entries: Iterable[ConfigValue] = ()) -> None:
        self._entries: list[ConfigValue] = []
        self._first: dict[str, ConfigValue] = {}
        for entry in entries:
            self.add(entry)

    def add(self, entry: ConfigValue) -> None:
        """Add a value; the first value added for a key is the one used."""
        self._entries.append(entry)
        self._first.setdefault(entry.key, entry)

    def __getitem__(self, key: str) -> Any:
        return self._first[key].value

    def __contains__(self, key: object) -> bool:
        return key in self._first

    def __iter__(self) -> Iterator[str]:
        return iter(self._first)

    def __len__(self) -> int:
        return len(self._first)

    def get(self, key: str, default: Any = None) -> Any:
        """Return the value for ``key`` or ``default``."""
        entry = self._first.get(key)
        return default if entry is None else entry.value

    def get_entry(self, key: str) -> ConfigValue | None:
        """Return the value used for ``key`` with its source, or None."""
        return self._first.get(key)

    def all_entries(self) -> list[ConfigValue]:
        """Every value found, in the order read."""
        return list(self._entries)

    def to_dict(self) -> dict[str, dict[str, Any]]:
        """Return ``{key: {"value": ..., "source": ...}}`` for the values used."""
        return {k: {"value": e.value, "source": e.source} for k, e in self._first.items()}


def as_flag(value: Any) -> bool | None:
    """True/False from a bool, 0/1 or "true"/"false" (as configs spell flags); None otherwise."""
    if isinstance(value, bool):
        return value
    if isinstance(value, (int, float)) and value in (0, 1):
        return bool(value)
    if isinstance(value, str) and value.strip().lower() in ("true", "false"):
        return value.strip().lower() == "true"
    return None
