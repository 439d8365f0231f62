"""Hugging Face Trainer ``training_args.bin``, read without unpickling any code.

The Trainer writes its ``TrainingArguments`` with ``torch.save`` (a torch zip
file; older versions or ``_use_new_zipfile_serialization=False`` give the legacy
format; a plain pickle is accepted too). The file is read with
:mod:`autopsy.formats.unpickle`: nothing it names is imported or called.
The arguments object is the placeholder whose state has a ``learning_rate``;
its class (``transformers.training_args.TrainingArguments``, or a subclass such
as TRL's ``SFTConfig``) is emitted as ``training_args_class``.

Config emitted (when present in the file): :data:`MAIN_KEYS`, then
:data:`EXTRA_KEYS`. Enum values (``lr_scheduler_type``, ``optim``, strategies)
become their string value (``"linear"``, ``"adamw_torch_fused"``); values that
are neither plain data nor enums are not emitted, nor are values that expand past
:data:`~autopsy.formats.unpickle.MAX_PLAIN_NODES` (a ``value_too_large`` problem).
``None`` is emitted for a main key (``max_grad_norm=None`` means no clipping) and
left out for an extra one.

A file that references dangerous globals (``os.system``, ``builtins.eval`` ...)
gives an ``unsafe_pickle`` problem naming the file and the globals; they are never
executed, and the benign values beside them are still used.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from autopsy.formats import unpickle
from autopsy.model.config import ConfigValue
from autopsy.model.problem import Problem
from autopsy.readers.base import RunPart, head
from autopsy.readers.registry import Format

NAME = "training_args"
FORMATS = (
    Format("hf_training_args", "HF Trainer training_args.bin (read without unpickling code)",
           ("config",), "training_args.bin"),
)
FILE_NAME = "training_args.bin"

#: The keys rules read (see ``autopsy.model.config.KNOWN_KEYS``).
MAIN_KEYS: tuple[str, ...] = (
    "learning_rate", "warmup_steps", "warmup_ratio", "lr_scheduler_type", "max_grad_norm",
    "fp16", "bf16", "per_device_train_batch_size", "gradient_accumulation_steps",
    "weight_decay", "optim", "seed", "num_train_epochs", "max_steps", "logging_steps",
    "save_steps", "eval_steps",
)
#: Further keys worth keeping: optimizer, strategies, resume and precision details.
EXTRA_KEYS: tuple[str, ...] = (
    "per_device_eval_batch_size", "adam_beta1", "adam_beta2", "adam_epsilon",
    "lr_scheduler_kwargs", "label_smoothing_factor", "eval_strategy", "evaluation_strategy",
    "save_strategy", "logging_strategy", "save_total_limit", "save_only_model",
    "load_best_model_at_end", "metric_for_best_model", "ignore_data_skip",
    "resume_from_checkpoint", "data_seed", "full_determinism", "gradient_checkpointing",
    "torch_compile", "half_precision_backend", "fp16_opt_level", "tf32",
    "dataloader_drop_last", "deepspeed", "fsdp", "output_dir",
)

_PICKLE_SUFFIXES = (".bin", ".pt", ".pth", ".pkl")
#: Largest file read (a training_args.bin is a few kB).
MAX_BYTES = 64 * 1024 * 1024


def sniff(path: Path) -> bool:
    """``training_args.bin``, or a ``*training_args*`` pickle/torch file by its first bytes."""
    if path.name == FILE_NAME:
        return True
    if "training_args" not in path.name or path.suffix not in _PICKLE_SUFFIXES:
        return False
    start = head(path, 4)
    return start.startswith(b"PK\x03\x04") or start.startswith(b"\x80")


def _find_args(obj: Any) -> tuple[str, dict[Any, Any]] | None:
    """The arguments' class name and state: the first object holding a ``learning_rate``."""
    if isinstance(obj, dict) and "learning_rate" in obj:
        return "dict", obj
    for value, _ in unpickle.walk(obj):
        if isinstance(value, unpickle.Call):
            state = value.state_dict
            if state is not None and "learning_rate" in state:
                return value.func_name, state
    return None


def read(path: Path, rel: str) -> RunPart:
    """Read a ``training_args.bin`` safely; emit its config (see the module docstring)."""
    part = RunPart()
    try:
        with open(path, "rb") as fh:
            loaded = unpickle.load_torch(fh, max_bytes=MAX_BYTES)
    except OSError as exc:
        part.problems.append(Problem(rel, f"cannot read: {exc.strerror}", kind="unreadable"))
        return part
    except unpickle.UnpickleError as exc:
        kind = "truncated" if isinstance(exc, unpickle.PickleTruncated) else "invalid_pickle"
        part.problems.append(Problem(rel, f"cannot read the training arguments: {exc}",
                                     kind=kind))
        return part
    found = _find_args(loaded.obj)
    unsafe, unverified = loaded.judged()
    if unsafe:
        names = ", ".join(g for g, _ in unsafe)
        part.problems.append(Problem(
            rel, f"{rel} references {names}, which would run code when unpickled; "
            "autopsy did not execute it",
            used="the plain values beside it" if found else "", kind="unsafe_pickle",
            count=len(unsafe)))
    if unverified:
        names = ", ".join(g for g, _ in unverified)
        part.problems.append(Problem(
            rel, f"{rel} references {names}, which autopsy cannot vouch for (not among the "
            "globals training arguments hold); autopsy did not execute it",
            used="the plain values beside it" if found else "", kind="unverified_pickle",
            count=len(unverified)))
    if found is None:
        part.problems.append(Problem(rel, "no TrainingArguments object (nothing with a "
                                     "learning_rate) in the file", kind="unexpected_structure"))
        return part
    class_name, state = found
    part.config.append(ConfigValue("training_args_class", class_name, rel))
    too_large: list[str] = []
    for key in (*MAIN_KEYS, *EXTRA_KEYS):
        if key in state:
            status, value = unpickle.to_plain(state[key])
            if status is unpickle.PlainStatus.TOO_LARGE:
                too_large.append(key)
            elif status is unpickle.PlainStatus.OK and (value is not None or key in MAIN_KEYS):
                part.config.append(ConfigValue(key, value, rel))
    if too_large:
        part.problems.append(Problem(
            rel, f"{', '.join(too_large)} expand past {unpickle.MAX_PLAIN_NODES:,} values "
            "(the pickle references the same data many times): not kept",
            used="the other arguments", kind="value_too_large", count=len(too_large)))
    return part
