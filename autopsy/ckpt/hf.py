"""The Hugging Face Trainer layout: a ``checkpoint-N/`` folder.

What the Trainer does on ``resume_from_checkpoint`` (and so what a missing file costs):
it loads ``optimizer.pt`` *and* ``scheduler.pt`` only when both exist (one missing:
both silently skipped); ``scaler.pt`` when present; ``rng_state.pth`` (one process)
or ``rng_state_R.pth`` (rank R), and a missing one is only logged at INFO; it keeps
no sampler state but skips the first ``global_step`` batches of the epoch (unless
``ignore_data_skip``); ``trainer_state.json`` is written last, so a folder without
it is a torn save. A DeepSpeed run keeps its optimizer in ``global_stepN/``.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from autopsy.ckpt.components import Part
from autopsy.ckpt.files import Loaded
from autopsy.ckpt.parts import Parts
from autopsy.ckpt.statedicts import int_value, unwrap
from autopsy.ckpt.weights import read_folder_weights

_RNG_RANK = re.compile(r"^rng_state_(\d+)\.pth$")

EFFECT_OPT_SCHED = ("the Trainer loads optimizer.pt and scheduler.pt only when both exist: "
                    "it silently skips both and restarts Adam's moments and the LR schedule "
                    "from scratch (warmup again)")
EFFECT_RNG = ("the Trainer logs at INFO only and goes on with fresh RNG: dropout masks and "
              "shuffles differ from the original run")


def training_args_values(loaded: Loaded | None) -> dict[str, Any]:
    """The ``TrainingArguments`` state dict from a read ``training_args.bin`` (or ``{}``)."""
    if loaded is None or loaded.error is not None:
        return {}
    state = unwrap(loaded.obj)
    return state if isinstance(state, dict) else {}


def world_size_of_args(args: dict[str, Any]) -> int | None:
    """The world size a ``TrainingArguments`` was pickled with (its distributed state)."""
    dist = unwrap(args.get("distributed_state"))
    if isinstance(dist, dict):
        n = int_value(dist.get("num_processes"))
        if n is not None and n > 0:
            return n
    return None


def gather(parts: Parts, folder: Path) -> None:
    """Fill ``parts`` from a Trainer checkpoint folder."""
    names = {p.name for p in folder.iterdir()} if folder.is_dir() else set()
    reader = parts.reader
    read_folder_weights(parts, folder)
    ds_dirs = sorted(n for n in names if re.match(r"^global_step\d+$", n)
                     and (folder / n).is_dir())

    # training args first: they say fp16, accumulation and the world size
    args_slot = parts.slot(Part.TRAINING_ARGS)
    args_slot.expected = ["training_args.bin"]
    args_slot.required = False
    args_slot.effect = "nothing for the resume itself (the new run's arguments are used)"
    args: dict[str, Any] = {}
    if "training_args.bin" in names:
        loaded = reader.read(folder / "training_args.bin")
        args_slot.files.append(loaded)
        args_slot.present = True
        args = training_args_values(loaded)
        args_slot.value = args
        if args:
            fp16 = args.get("fp16")
            parts.fp16 = bool(fp16) if isinstance(fp16, bool) else None
            parts.grad_accum = int_value(args.get("gradient_accumulation_steps"))
            ws = world_size_of_args(args)
            if ws is not None:
                parts.world_sizes.append(("training_args.bin (distributed_state)", ws))

    # trainer state: written last
    ts_slot = parts.slot(Part.TRAINER_STATE)
    ts_slot.expected = ["trainer_state.json"]
    ts_slot.effect = ("the Trainer starts from step 0: no global_step, epoch or log history; "
                      "the folder is a torn save (trainer_state.json is written last)")
    if "trainer_state.json" in names:
        loaded = reader.read(folder / "trainer_state.json")
        ts_slot.files.append(loaded)
        ts_slot.present = True
        if isinstance(loaded.obj, dict):
            ts_slot.value = loaded.obj
            gs = int_value(loaded.obj.get("global_step"))
            if gs is not None:
                parts.global_steps.append(("trainer_state.json global_step", gs))
    else:
        parts.torn.append("trainer_state.json is absent: the Trainer writes it last, so the "
                          "save stopped before it finished")

    # optimizer and scheduler: both or neither
    opt = parts.slot(Part.OPTIMIZER)
    opt.expected = ["optimizer.pt"]
    opt.effect = EFFECT_OPT_SCHED
    sched = parts.slot(Part.SCHEDULER)
    sched.expected = ["scheduler.pt"]
    sched.effect = EFFECT_OPT_SCHED
    for name in ("optimizer.pt", "optimizer.bin"):
        if name in names:
            loaded = reader.read(folder / name)
            opt.files.append(loaded)
            opt.present = True
            opt.value = unwrap(loaded.obj)
            opt.where = name
            break
    if not opt.present and ds_dirs:
        from autopsy.ckpt.deepspeed import gather_optimizer

        gather_optimizer(parts, folder / ds_dirs[-1])
    fsdp = sorted(n for n in names if n.startswith(("optimizer", "pytorch_model_fsdp"))
                  and (folder / n).is_dir())
    if fsdp:  # FSDP's sharded state dicts: a DCP folder per component
        from autopsy.ckpt.dcp import read_sub_folder

        for name in fsdp:
            part = Part.OPTIMIZER if name.startswith("optimizer") else Part.WEIGHTS
            if read_sub_folder(parts, folder / name, part) and part is Part.OPTIMIZER:
                parts.flat_optimizer = True
    if "scheduler.pt" in names:
        loaded = reader.read(folder / "scheduler.pt")
        sched.files.append(loaded)
        sched.present = True
        sched.value = unwrap(loaded.obj)
        sched.where = "scheduler.pt"
    if opt.present != sched.present:
        other = "scheduler.pt" if opt.present else "optimizer.pt"
        (opt if opt.present else sched).notes.append(
            f"present, but the Trainer will not load it: {other} is missing and the Trainer "
            "loads the optimizer and the scheduler only together")

    # grad scaler
    scaler = parts.slot(Part.GRAD_SCALER)
    scaler.expected = ["scaler.pt"]
    scaler.effect = ("the loss scale restarts at 65536 and halves on every overflow: the first "
                     "steps after the resume are skipped")
    if "scaler.pt" in names:
        loaded = reader.read(folder / "scaler.pt")
        scaler.files.append(loaded)
        scaler.present = True
        scaler.value = unwrap(loaded.obj)
        scaler.where = "scaler.pt"
    elif parts.fp16 is False:
        scaler.not_applicable = "training_args.bin says fp16=False: no grad scaler is used"
    elif parts.fp16 is None:
        scaler.not_applicable = "no scaler.pt, and nothing says the run used fp16"

    # rng: one file per rank
    ranks = sorted(int(m.group(1)) for n in names if (m := _RNG_RANK.match(n)))
    for r in ranks:
        parts.rng[r] = reader.read(folder / f"rng_state_{r}.pth")
    if "rng_state.pth" in names:
        parts.rng[None] = reader.read(folder / "rng_state.pth")
    rng = parts.slot(Part.RNG)
    rng.expected = ["rng_state.pth", "rng_state_R.pth (one per rank)"]
    rng.effect = EFFECT_RNG
    if ranks:
        parts.world_sizes.append((f"rng_state_R.pth files (highest rank {ranks[-1]})",
                                  ranks[-1] + 1))

    # data position: the Trainer replays batches, it saves none
    data = parts.slot(Part.DATA_POSITION)
    data.required = False
    data.present = True
    gs = parts.global_steps[0][1] if parts.global_steps else parts.name_step
    if args.get("ignore_data_skip") is True:
        data.present = False
        data.effect = ("ignore_data_skip=True: the resumed run starts the epoch's data from "
                       "its first batch again, so it sees those batches twice")
        data.notes.append("training_args.bin sets ignore_data_skip=True")
    else:
        data.notes.append(
            "the Trainer saves no sampler state; on resume it skips the batches already seen "
            f"this epoch (global_step {gs if gs is not None else 'N'} x gradient accumulation) "
            "with the same seeded sampler, so the data order is restored by replay")
