"""The accelerate layout: an ``Accelerator.save_state`` folder.

``save_state`` writes the models (``model.safetensors`` / ``pytorch_model.bin``,
``model_1...`` for more), ``optimizer.bin`` (``optimizer_1.bin``...),
``scheduler.bin``, ``sampler.bin`` (seedable samplers) or ``dl_state_dict.bin``
(stateful data loaders), ``scaler.pt`` (fp16), one ``random_states_R.pkl`` per
process and ``custom_checkpoint_N.pkl`` for registered objects. It keeps no
global step of its own; ``load_state`` restores what it finds and says nothing
about what is absent.
"""

from __future__ import annotations

import re
from pathlib import Path

from autopsy.ckpt.components import Part
from autopsy.ckpt.parts import Parts
from autopsy.ckpt.statedicts import int_value, unwrap
from autopsy.ckpt.weights import read_folder_weights

_RANDOM = re.compile(r"^random_states_(\d+)\.pkl$")
_OPT = re.compile(r"^optimizer(?:_\d+)?\.bin$")
_SCHED = re.compile(r"^scheduler(?:_\d+)?\.bin$")
_MODEL = re.compile(r"^(?:model|pytorch_model)(?:_\d+)?\.(?:safetensors|bin)$")
_DATA = re.compile(r"^(?:sampler|dl_state_dict)(?:_\d+)?\.bin$")


def gather(parts: Parts, folder: Path) -> None:
    """Fill ``parts`` from an accelerate ``save_state`` folder."""
    names = sorted(p.name for p in folder.iterdir()) if folder.is_dir() else []
    reader = parts.reader
    extra = tuple(n for n in names if _MODEL.match(n) and n not in
                  ("model.safetensors", "pytorch_model.bin"))
    read_folder_weights(parts, folder, extra=extra)
    if extra and parts.slot(Part.WEIGHTS).present:
        for name in extra:
            loaded = reader.read(folder / name)
            if loaded not in parts.slot(Part.WEIGHTS).files:
                parts.slot(Part.WEIGHTS).files.append(loaded)

    opt = parts.slot(Part.OPTIMIZER)
    opt.expected = ["optimizer.bin"]
    opt.effect = ("load_state restores what it finds and says nothing: the optimizer keeps "
                  "its fresh state and Adam's moments restart from zero")
    for name in (n for n in names if _OPT.match(n)):
        loaded = reader.read(folder / name)
        opt.files.append(loaded)
        opt.present = True
        if opt.value is None:
            opt.value = unwrap(loaded.obj)
            opt.where = name
    sched = parts.slot(Part.SCHEDULER)
    sched.expected = ["scheduler.bin"]
    sched.effect = "the LR schedule restarts from its first step (warmup again), silently"
    for name in (n for n in names if _SCHED.match(n)):
        loaded = reader.read(folder / name)
        sched.files.append(loaded)
        sched.present = True
        if sched.value is None:
            sched.value = unwrap(loaded.obj)
            sched.where = name
    scaler = parts.slot(Part.GRAD_SCALER)
    scaler.expected = ["scaler.pt"]
    scaler.effect = "the loss scale restarts at its initial value: early steps are skipped"
    if "scaler.pt" in names:
        loaded = reader.read(folder / "scaler.pt")
        scaler.files.append(loaded)
        scaler.present = True
        scaler.value = unwrap(loaded.obj)
    else:
        scaler.not_applicable = ("no scaler.pt: accelerate writes one only for fp16 mixed "
                                 "precision")

    ranks = sorted(int(m.group(1)) for n in names if (m := _RANDOM.match(n)))
    for r in ranks:
        parts.rng[r] = reader.read(folder / f"random_states_{r}.pkl")
    rng = parts.slot(Part.RNG)
    rng.expected = ["random_states_R.pkl (one per process)"]
    rng.effect = ("load_state skips the missing process's RNG silently: its dropout masks "
                  "and shuffles differ from the original run")
    if ranks:
        parts.world_sizes.append((f"random_states_R.pkl files (highest rank {ranks[-1]})",
                                  ranks[-1] + 1))
        first = parts.rng[ranks[0]]
        state = unwrap(first.obj) if first is not None else None
        if isinstance(state, dict) and int_value(state.get("step")) is not None:
            rng.notes.append(f"accelerator step counter {state['step']} "
                             "(gradient-accumulation position)")

    data = parts.slot(Part.DATA_POSITION)
    data.expected = ["sampler.bin", "dl_state_dict.bin"]
    data.required = False
    data.effect = ("no sampler or data-loader state: the loader restarts the epoch from its "
                   "first batch unless your loop calls accelerator.skip_first_batches")
    for name in (n for n in names if _DATA.match(n)):
        data.files.append(reader.read(folder / name))
        data.present = True
        data.where = name

    ts = parts.slot(Part.TRAINER_STATE)
    ts.required = False
    custom = [n for n in names if n.startswith("custom_checkpoint_")]
    if custom:
        ts.present = True
        ts.files.extend(reader.read(folder / n) for n in custom)
        ts.where = ", ".join(custom)
        ts.notes.append("registered objects (accelerator.register_for_checkpointing)")
    else:
        ts.not_applicable = ("accelerate keeps no trainer state; step counters live in your "
                             "loop (register them with accelerator.register_for_checkpointing)")
    parts.slot(Part.TRAINING_ARGS).not_applicable = "accelerate saves no training arguments"
    parts.slot(Part.TRAINING_ARGS).required = False
