"""Single-file checkpoints: a ``torch.save`` dict, a Lightning ``.ckpt``, a lone safetensors.

A plain dict is read by its keys (``model``/``state_dict``, ``optimizer``,
``scheduler``/``lr_scheduler``, ``scaler``, ``step``/``global_step``/``epoch``,
``sampler``/``dataloader`` or a StatefulDataLoader state, RNG states). A Lightning
``.ckpt`` has ``state_dict``, ``optimizer_states``, ``lr_schedulers``, ``loops``
(the fit loop's batch progress: its data position), ``global_step`` and ``epoch``;
Lightning saves no RNG state. A file holding only a state dict (or a safetensors
file) is weights only: nothing else can be resumed from it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from autopsy.ckpt.components import Part
from autopsy.ckpt.layouts import Layout
from autopsy.ckpt.parts import Parts
from autopsy.ckpt.statedicts import (
    ARGS_KEYS,
    DATA_KEYS,
    EPOCH_KEYS,
    OPTIMIZER_KEYS,
    SCALER_KEYS,
    SCHEDULER_KEYS,
    STEP_KEYS,
    WEIGHT_KEYS,
    first_key,
    int_value,
    is_scaler,
    is_weights,
    optimizers_in,
    schedulers_in,
    unwrap,
    walk_tensors,
)

_STATEFUL_DL_KEYS = frozenset({"_num_yielded", "_sampler_iter_yielded", "_snapshot",
                               "_iterator_finished", "_index_sampler_state"})
WEIGHTS_ONLY = ("the file holds weights only: a resume restarts {what} from scratch")


def _has_stateful_loader(obj: Any, depth: int = 0,
                         _seen: set[int] | None = None) -> str | None:
    """The key path of a StatefulDataLoader state dict inside ``obj``, or None.

    A dict met again (shared through the pickle's memo) is looked into once.
    """
    obj = unwrap(obj)
    if depth > 6 or not isinstance(obj, dict):
        return None
    seen = set() if _seen is None else _seen
    if id(obj) in seen:
        return None
    seen.add(id(obj))
    if _STATEFUL_DL_KEYS & {str(k) for k in obj}:
        return ""
    for k, v in obj.items():
        found = _has_stateful_loader(v, depth + 1, seen)
        if found is not None:
            return f"{k}.{found}".rstrip(".")
    return None


def gather_safetensors(parts: Parts, path: Path) -> None:
    """A lone safetensors file, or a weights-only folder: weights only."""
    if path.is_dir():
        from autopsy.ckpt.weights import read_folder_weights

        read_folder_weights(parts, path)
        _weights_only(parts, "a weights-only folder (save_pretrained / adapter)")
        return
    loaded = parts.reader.read(path)
    weights = parts.slot(Part.WEIGHTS)
    weights.files.append(loaded)
    weights.present = True
    weights.where = path.name
    parts.weight_tensors.extend(loaded.tensors)
    _weights_only(parts, "safetensors holds tensors only")


def _weights_only(parts: Parts, why: str) -> None:
    parts.weights_only = True
    for part, what in ((Part.OPTIMIZER, "the optimizer (Adam's moments)"),
                       (Part.SCHEDULER, "the LR schedule (warmup again)")):
        slot = parts.slot(part)
        slot.expected = []
        slot.effect = WEIGHTS_ONLY.format(what=what)
        slot.notes.append(why)
    parts.slot(Part.GRAD_SCALER).not_applicable = "nothing says the run used fp16"
    rng = parts.slot(Part.RNG)
    rng.required = False
    rng.effect = "fresh RNG: dropout masks and shuffles differ from the original run"
    data = parts.slot(Part.DATA_POSITION)
    data.required = False
    data.effect = "no data position: the loader restarts the epoch"
    ts = parts.slot(Part.TRAINER_STATE)
    ts.required = False
    ts.effect = "no step counter: a resume starts at step 0"
    parts.slot(Part.TRAINING_ARGS).not_applicable = "a weights file holds no arguments"
    parts.slot(Part.TRAINING_ARGS).required = False


def gather_torch(parts: Parts, path: Path) -> None:
    """A ``torch.save`` file or a Lightning ``.ckpt``."""
    loaded = parts.reader.read(path)
    obj = unwrap(loaded.obj)
    weights = parts.slot(Part.WEIGHTS)
    weights.expected = [f"{path.name}: {' / '.join(WEIGHT_KEYS[:3])}"]
    weights.effect = "the resume has no trained weights: the model starts from scratch"
    weights.files.append(loaded)
    if loaded.error is not None:
        for part in Part:
            if part is not Part.WEIGHTS:
                parts.slot(part).not_applicable = "the file could not be read"
        return
    if is_weights(obj) or not isinstance(obj, dict):
        weights.present = is_weights(obj)
        weights.where = path.name
        parts.weight_tensors.extend(walk_tensors(obj))
        _weights_only(parts, "the file is a bare state dict")
        return
    lightning = parts.layout is Layout.LIGHTNING or "pytorch-lightning_version" in obj \
        or "optimizer_states" in obj
    if lightning:
        parts.layout = Layout.LIGHTNING
    wkey = first_key(obj, WEIGHT_KEYS)
    if wkey is not None:
        weights.present = True
        weights.where = f"{path.name}: {wkey}"
        parts.weight_tensors.extend(walk_tensors(obj[wkey]))
    else:  # a dict of several models ({"encoder": {...}, "decoder": {...}})
        models = [k for k, v in obj.items() if is_weights(v)]
        if models:
            weights.present = True
            weights.where = f"{path.name}: {', '.join(map(str, models))}"
            for k in models:
                parts.weight_tensors.extend(walk_tensors(obj[k], str(k)))

    def fill(part: Part, keys: tuple[str, ...], found: list[Any], effect: str) -> None:
        slot = parts.slot(part)
        slot.expected = [f"{path.name}: {' / '.join(keys[:2])}"]
        slot.effect = effect
        key = first_key(obj, keys)
        if found:
            slot.present = True
            slot.value = found[0]
            slot.where = f"{path.name}: {key}" if key else path.name
            slot.files.append(loaded)
            raw = unwrap(obj[key]) if key else None
            if isinstance(raw, (list, tuple)):
                index = next((i for i, v in enumerate(raw) if unwrap(v) is found[0]), 0)
                slot.prefix = f"{key}.{index}."
            elif key:
                slot.prefix = f"{key}."
            if len(found) > 1:
                slot.notes.append(f"{len(found)} of them; the first is checked")

    okey = first_key(obj, OPTIMIZER_KEYS)
    fill(Part.OPTIMIZER, OPTIMIZER_KEYS, optimizers_in(obj[okey]) if okey else [],
         "the optimizer restarts: Adam's moments are rebuilt from zero (a loss spike, and "
         "bias correction restarts)")
    skey = first_key(obj, SCHEDULER_KEYS)
    scheds = []
    if skey is not None:
        raw = obj[skey]
        if lightning and isinstance(raw, (list, tuple)):
            raw = [unwrap(r) for r in raw]
        scheds = schedulers_in(raw)
    fill(Part.SCHEDULER, SCHEDULER_KEYS, scheds,
         "the LR schedule restarts from its first step (warmup again)")

    scaler = parts.slot(Part.GRAD_SCALER)
    ckey = first_key(obj, SCALER_KEYS)
    scaler.effect = "the loss scale restarts at its initial value: early steps are skipped"
    if ckey is not None and (is_scaler(obj[ckey]) or isinstance(unwrap(obj[ckey]), dict)):
        scaler.present = True
        scaler.value = unwrap(obj[ckey])
        scaler.where = f"{path.name}: {ckey}"
        scaler.files.append(loaded)
    else:
        scaler.not_applicable = "no scaler saved; one is needed only for fp16 training"

    rkeys = [k for k in obj if isinstance(k, str) and ("rng" in k.lower()
                                                      or "random" in k.lower())]
    rng = parts.slot(Part.RNG)
    rng.required = False
    rng.expected = [f"{path.name}: rng_state"]
    if rkeys:
        rng.present = True
        rng.where = f"{path.name}: {', '.join(rkeys)}"
        parts.rng[0] = loaded
    else:
        rng.effect = ("fresh RNG: dropout masks and shuffles differ from the original run"
                      + (" (Lightning saves no RNG state)" if lightning else ""))

    data = parts.slot(Part.DATA_POSITION)
    data.required = False
    data.expected = [f"{path.name}: dataloader / sampler / step / epoch"]
    data.effect = ("no sampler, data-loader state or step counter: the loader restarts the "
                   "epoch from its first batch")
    dkey = first_key(obj, DATA_KEYS)
    sdl = _has_stateful_loader(obj)
    step_key = first_key(obj, STEP_KEYS)
    epoch_key = first_key(obj, EPOCH_KEYS)
    if sdl is not None:
        data.present = True
        data.where = f"{path.name}: {sdl} (StatefulDataLoader state)"
    elif dkey is not None:
        data.present = True
        data.where = f"{path.name}: {dkey}"
    elif lightning and isinstance(unwrap(obj.get("loops")), dict):
        data.present = True
        data.where = f"{path.name}: loops (fit loop batch progress)"
    elif step_key is not None or epoch_key is not None:
        data.present = True
        data.where = f"{path.name}: {step_key or epoch_key}"
        data.notes.append("only a counter: your loop must skip to it (no sampler state)")
    if data.present:
        data.files.append(loaded)
    else:  # not even a step counter: the resume cannot know where the data was
        data.required = True

    ts = parts.slot(Part.TRAINER_STATE)
    ts.required = False
    ts.effect = "no step or epoch counter: a resume starts at step 0"
    if step_key is not None or epoch_key is not None:
        ts.present = True
        ts.where = f"{path.name}: {', '.join(k for k in (step_key, epoch_key) if k)}"
        ts.files.append(loaded)
        ts.value = {k: obj[k] for k in (step_key, epoch_key) if k}
        gs = int_value(obj.get(step_key)) if step_key else None
        if gs is not None:
            parts.global_steps.append((f"{path.name}: {step_key}", gs))
    ws = int_value(obj.get("world_size"))
    if ws:
        parts.world_sizes.append((f"{path.name}: world_size", ws))
    args = parts.slot(Part.TRAINING_ARGS)
    args.required = False
    akey = first_key(obj, ARGS_KEYS)
    if akey is not None:
        args.present = True
        args.where = f"{path.name}: {akey}"
        args.files.append(loaded)
        val = unwrap(obj[akey])
        if isinstance(val, dict):
            fp16 = val.get("fp16")
            if isinstance(fp16, bool):
                parts.fp16 = fp16
            parts.grad_accum = int_value(val.get("gradient_accumulation_steps")) \
                or int_value(val.get("accumulate_grad_batches"))
    else:
        args.not_applicable = "no args/config/hparams key"
