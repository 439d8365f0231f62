"""The DeepSpeed layout: ``global_stepN/`` with ``mp_rank_XX_model_states.pt`` and, under
ZeRO, one ``zero_pp_rank_R_mp_rank_XX_optim_states.pt`` per data-parallel rank.

``engine.save_checkpoint`` keeps the module, the LR scheduler, the step counters
(``global_steps``, ``skipped_steps``) and ``dp_world_size`` in the model-states
file, and the optimizer (ZeRO partitions: flat fp32 moments) in the optim-states
files. It saves no RNG state and no data position unless they are passed in
``client_state``; the parent folder's ``latest`` file names the tag ``load_checkpoint``
picks.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from autopsy.ckpt.components import Part
from autopsy.ckpt.parts import Parts
from autopsy.ckpt.statedicts import (
    DATA_KEYS,
    first_key,
    int_value,
    is_optimizer,
    is_scheduler,
    unwrap,
    walk_tensors,
)

_ZERO = re.compile(r"^(?:bf16_)?zero_pp_rank_(\d+)_mp_rank_(\d+)_optim_states\.pt$")
_MODEL = re.compile(r"^(?:zero_pp_rank_\d+_)?mp_rank_(\d+)_model_states\.pt$")


def gather_optimizer(parts: Parts, folder: Path) -> dict[str, Any] | None:
    """Fill the optimizer slot from the ZeRO optim-states files; return rank 0's state."""
    opt = parts.slot(Part.OPTIMIZER)
    names = sorted(p.name for p in folder.iterdir()) if folder.is_dir() else []
    ranks: list[int] = []
    first: dict[str, Any] | None = None
    for name in names:
        m = _ZERO.match(name)
        if not m:
            continue
        ranks.append(int(m.group(1)))
        loaded = parts.reader.read(folder / name)
        opt.files.append(loaded)
        obj = unwrap(loaded.obj)
        if first is None and isinstance(obj, dict):
            first = obj
            inner = unwrap(obj.get("optimizer_state_dict"))
            base = unwrap(inner.get("base_optimizer_state")) if isinstance(inner, dict) else None
            opt.value = base if isinstance(base, dict) else inner if isinstance(inner, dict) \
                else obj
            opt.where = f"{folder.name}/{name}"
    if ranks:
        opt.present = True
        parts.flat_optimizer = True
        parts.world_sizes.append((f"{folder.name}/zero_pp_rank_R optim files ({len(ranks)})",
                                  len(set(ranks))))
        parts.moment_tensors.extend(
            (k, v) for f in opt.files for k, v in walk_tensors(f.obj)
            if k.rsplit(".", 1)[-1] in ("exp_avg", "exp_avg_sq"))
    return first


def gather(parts: Parts, folder: Path) -> None:
    """Fill ``parts`` from a ``global_stepN`` folder."""
    names = sorted(p.name for p in folder.iterdir()) if folder.is_dir() else []
    model_files = [n for n in names if _MODEL.match(n)]
    weights = parts.slot(Part.WEIGHTS)
    weights.expected = ["mp_rank_00_model_states.pt"]
    weights.effect = "load_checkpoint fails: the engine's module state is not there"
    states: dict[str, Any] = {}
    for name in model_files:
        loaded = parts.reader.read(folder / name)
        weights.files.append(loaded)
        obj = unwrap(loaded.obj)
        if isinstance(obj, dict) and not states:
            states = obj
    module = unwrap(states.get("module"))
    if isinstance(module, dict):
        weights.present = True
        weights.where = "module"
        parts.weight_tensors.extend(walk_tensors(module))
    gathered = gather_optimizer(parts, folder)
    opt = parts.slot(Part.OPTIMIZER)
    opt.expected = ["zero_pp_rank_R_mp_rank_00_optim_states.pt", "model states 'optimizer'"]
    opt.effect = "load_checkpoint restarts the optimizer: Adam's moments are rebuilt from zero"
    if gathered is None and is_optimizer(states.get("optimizer")):
        opt.present = True
        opt.value = unwrap(states["optimizer"])
        opt.where = "model states: optimizer"
        opt.files.extend(weights.files)
    sched = parts.slot(Part.SCHEDULER)
    sched.expected = ["model states 'lr_scheduler'"]
    sched.effect = "the LR schedule restarts from its first step (warmup again)"
    if is_scheduler(states.get("lr_scheduler")):
        sched.present = True
        sched.value = unwrap(states["lr_scheduler"])
        sched.where = "model states: lr_scheduler"
        sched.files.extend(weights.files)
    scaler = parts.slot(Part.GRAD_SCALER)
    scaler.not_applicable = "DeepSpeed keeps its loss scale inside the optimizer state"
    rng = parts.slot(Part.RNG)
    rng.required = False
    rng.expected = ["client_state"]
    rng.effect = ("DeepSpeed's save_checkpoint holds no RNG state: a resume draws fresh "
                  "dropout masks and shuffles (pass them in client_state to keep them)")
    data = parts.slot(Part.DATA_POSITION)
    data.required = False
    key = first_key(states, DATA_KEYS)
    if key is not None and states.get(key) is not None:
        data.present = True
        data.where = f"model states: {key}"
        data.files.extend(weights.files)
    else:
        data.effect = ("no data position saved (the format holds one only in client_state): "
                       "the loader restarts the epoch unless your loop skips to the step")
    ts = parts.slot(Part.TRAINER_STATE)
    ts.expected = ["model states 'global_steps'"]
    gs = int_value(states.get("global_steps"))
    if gs is not None:
        ts.present = True
        ts.where = "model states: global_steps"
        ts.files.extend(weights.files)
        ts.value = {k: states.get(k) for k in ("global_steps", "global_samples", "skipped_steps")}
        parts.global_steps.append(("model states global_steps", gs))
        skipped = int_value(states.get("skipped_steps"))
        if skipped:  # overflow skips: the scheduler did not step on those
            ts.notes.append(f"{skipped} step(s) skipped on fp16 overflow")
            parts.fp16 = True
    else:
        ts.effect = "the engine restarts its step counters at 0"
    dp = int_value(states.get("dp_world_size"))
    if dp:
        mp = int_value(states.get("mp_world_size")) or 1
        parts.world_sizes.append(("model states dp_world_size x mp_world_size", dp * mp))
    args = parts.slot(Part.TRAINING_ARGS)
    args.required = False
    config = states.get("ds_config")
    if isinstance(config, dict):
        args.present = True
        args.where = "model states: ds_config"
        args.value = config
        fp16 = config.get("fp16")
        if isinstance(fp16, dict) and parts.fp16 is None:
            parts.fp16 = bool(fp16.get("enabled", False))
    else:
        args.not_applicable = "the model states hold no ds_config"
