"""Recognising state dicts in unpickled objects: weights, optimizer, scheduler, scaler.

The objects come from :func:`autopsy.formats.torchmeta.read_torch_meta`: plain
dicts/lists with ``TensorInfo`` where tensors were; unknown classes stay
placeholders (their ``state_dict`` is used when they carry one).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from autopsy.ckpt.files import is_tensor

#: Keys of a plain checkpoint dict that hold each component, in order of preference.
WEIGHT_KEYS = ("model", "state_dict", "model_state_dict", "model_state", "module", "net",
               "network", "weights", "ema", "params")
OPTIMIZER_KEYS = ("optimizer", "optimizer_state_dict", "optimizer_state", "optim", "opt",
                  "optimizer_states", "optimizers")
SCHEDULER_KEYS = ("lr_scheduler", "scheduler", "scheduler_state_dict", "lr_scheduler_state",
                  "lr_schedulers", "schedulers", "sched",
                  "opt_param_scheduler")  # Megatron-LM's OptimizerParamScheduler
SCALER_KEYS = ("scaler", "grad_scaler", "scaler_state_dict", "amp", "native_amp_scaling_state",
               "MixedPrecision", "loss_scaler")
STEP_KEYS = ("global_step", "step", "iteration", "iter", "iter_num", "global_steps",
             "num_updates", "total_steps", "steps", "optimizer_step", "train_step")
EPOCH_KEYS = ("epoch", "epochs", "cur_epoch", "current_epoch")
ARGS_KEYS = ("args", "config", "hparams", "hyper_parameters", "cfg", "training_args")
DATA_KEYS = ("sampler", "dataloader", "data_loader", "train_dataloader", "train_loader",
             "dataloader_state", "dl_state", "dl_state_dict", "sampler_state", "data_sampler",
             "data_state", "loader")


def unwrap(obj: Any) -> Any:
    """A placeholder's state dict (an object pickled by class), else ``obj``."""
    state = getattr(obj, "state_dict", None)
    if isinstance(state, dict) and not callable(state):
        return state
    return obj


def walk_tensors(obj: Any, prefix: str = "", depth: int = 0,
                 _seen: set[int] | None = None) -> Iterator[tuple[str, Any]]:
    """``(dotted key, TensorInfo)`` for every tensor in nested dicts/lists.

    A container met again (a pickle's memo can reference one from many places) is
    walked once, under its first key path: ten references per level, twelve levels
    deep, would otherwise be 10**12 visits of a 2 kB file.
    """
    if depth > 12:
        return
    if is_tensor(obj):
        yield prefix, obj
        return
    obj = unwrap(obj)
    if not isinstance(obj, (dict, list, tuple)):
        return
    seen = set() if _seen is None else _seen
    if id(obj) in seen:
        return
    seen.add(id(obj))
    if isinstance(obj, dict):
        for k, v in obj.items():
            yield from walk_tensors(v, f"{prefix}.{k}" if prefix else str(k), depth + 1, seen)
    else:
        for i, v in enumerate(obj):
            yield from walk_tensors(v, f"{prefix}.{i}" if prefix else str(i), depth + 1, seen)


def is_weights(obj: Any) -> bool:
    """A flat ``{name: tensor}`` state dict (most values tensors)."""
    obj = unwrap(obj)
    if not isinstance(obj, dict) or not obj:
        return False
    tensors = sum(1 for v in obj.values() if is_tensor(v))
    return tensors > 0 and tensors >= 0.5 * len(obj)


def is_optimizer(obj: Any) -> bool:
    """A torch optimizer state dict: ``{"state": ..., "param_groups": [...]}``."""
    obj = unwrap(obj)
    return isinstance(obj, dict) and "param_groups" in obj and "state" in obj


#: Keys of Megatron-LM's scheduler state (``OptimizerParamScheduler.state_dict()``; the
#: older ``AnnealingLR`` saved ``warmup_steps``/``decay_steps``/``decay_style``): its step
#: count ``num_steps`` and one of its schedule settings.
_MEGATRON_SCHEDULER = frozenset({"max_lr", "lr_warmup_steps", "warmup_steps", "lr_decay_steps",
                                 "decay_steps"})


def is_scheduler(obj: Any) -> bool:
    """An LR scheduler state dict: torch's (``last_epoch``/``base_lrs``/``_step_count``) or
    Megatron-LM's (``num_steps`` with ``max_lr``, ``lr_warmup_steps``...)."""
    obj = unwrap(obj)
    if not isinstance(obj, dict):
        return False
    keys = set(obj)
    return bool({"last_epoch", "base_lrs", "_step_count"} & keys) or (
        "num_steps" in keys and bool(_MEGATRON_SCHEDULER & keys))


def is_scaler(obj: Any) -> bool:
    """A GradScaler state dict (``scale``, ``growth_factor``...)."""
    obj = unwrap(obj)
    return isinstance(obj, dict) and "scale" in obj and (
        "growth_factor" in obj or "_growth_tracker" in obj)


def optimizers_in(obj: Any) -> list[dict[str, Any]]:
    """The optimizer state dicts in ``obj`` (one, or a list as Lightning saves)."""
    obj = unwrap(obj)
    if is_optimizer(obj):
        return [unwrap(obj)]
    if isinstance(obj, (list, tuple)):
        return [unwrap(o) for o in obj if is_optimizer(o)]
    if isinstance(obj, dict):
        return [unwrap(o) for o in obj.values() if is_optimizer(o)]
    return []


def schedulers_in(obj: Any) -> list[dict[str, Any]]:
    """The scheduler state dicts in ``obj`` (one, or a list as Lightning saves)."""
    obj = unwrap(obj)
    if is_scheduler(obj):
        return [unwrap(obj)]
    if isinstance(obj, (list, tuple)):
        return [unwrap(o) for o in obj if is_scheduler(o)]
    return []


def int_value(value: Any) -> int | None:
    """An int from an int (not bool) or an integral float, else None."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return None


def first_key(obj: dict[str, Any], keys: tuple[str, ...]) -> str | None:
    """The first of ``keys`` present in ``obj``."""
    return next((k for k in keys if k in obj), None)
