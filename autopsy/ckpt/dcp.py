"""The torch.distributed.checkpoint layout: ``.metadata`` plus ``__R_K.distcp`` files.

The ``.metadata`` pickle (read with the restricted unpickler) lists every saved key
(``model.weight``, ``optimizer.state.weight.exp_avg``, ``scheduler.last_epoch``,
``step``...) with tensor sizes, and where each item's bytes are
(``relative_path``, ``offset``, ``length``). The audit checks that every file
named exists and is long enough, sorts the keys into components by their first
segment, and takes the world size from the ``__R_`` rank prefixes. Non-tensor
values (the scheduler's counters) live inside the ``.distcp`` files and are not
read, so the step and LR consistency checks do not apply to this layout.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from autopsy.ckpt.components import Part
from autopsy.ckpt.parts import Parts
from autopsy.ckpt.statedicts import unwrap
from autopsy.formats.tensorinfo import checked_numel

_DISTCP = re.compile(r"^__(\d+)_(\d+)\.distcp$")


@dataclass(frozen=True)
class ShapeOnly:
    """A tensor known only by its saved size (its bytes are in a ``.distcp`` file)."""

    dtype: str
    shape: tuple[int, ...]
    file: str
    data_offset: int | None = None
    nbytes: int = 0

    @property
    def numel(self) -> int:
        """Number of elements (shapes come from :func:`_size`, so it is bounded)."""
        return checked_numel(self.shape) or 0


def _part_of(fqn: str) -> Part:
    head = fqn.split(".", 1)[0].lower()
    if head.startswith("optim"):
        return Part.OPTIMIZER
    if "sched" in head:
        return Part.SCHEDULER
    if "scaler" in head:
        return Part.GRAD_SCALER
    if "rng" in head or "random" in head:
        return Part.RNG
    if "data" in head or "sampler" in head or "loader" in head:
        return Part.DATA_POSITION
    if head in ("step", "global_step", "epoch", "iteration", "trainer_state", "train_state"):
        return Part.TRAINER_STATE
    if head in ("args", "config", "hparams"):
        return Part.TRAINING_ARGS
    return Part.WEIGHTS


def _size(meta: Any) -> tuple[int, ...] | None:
    state = unwrap(meta)
    if not isinstance(state, dict):
        return None
    size = state.get("size")
    args = getattr(size, "args", None)
    if args and isinstance(args[0], (tuple, list)):
        shape = tuple(int(d) for d in args[0] if isinstance(d, int))
        if any(d < 0 for d in shape) or checked_numel(shape) is None:
            return None  # no tensor has this shape: damaged or hostile .metadata
        return shape
    return None


def gather(parts: Parts, folder: Path) -> None:
    """Fill ``parts`` from a DCP folder."""
    meta_file = parts.reader.read(folder / ".metadata")
    names = sorted(p.name for p in folder.iterdir())
    ranks = sorted({int(m.group(1)) for n in names if (m := _DISTCP.match(n))})
    if ranks:
        parts.world_sizes.append((f"__R_K.distcp files (highest rank {ranks[-1]})",
                                  ranks[-1] + 1))
    meta = unwrap(meta_file.obj)
    keys: dict[str, Any] = {}
    if isinstance(meta, dict) and isinstance(meta.get("state_dict_metadata"), dict):
        keys = {str(k): v for k, v in meta["state_dict_metadata"].items()}
    for part in Part:
        slot = parts.slot(part)
        slot.files.append(meta_file)
        slot.expected = [f".metadata keys '{part.value}...'"]
    if meta_file.error is None and not keys:
        meta_file.problems.append(".metadata lists no saved keys")
    found: dict[Part, list[str]] = {}
    for fqn, item in keys.items():
        part = _part_of(fqn)
        found.setdefault(part, []).append(fqn)
        shape = _size(item)
        if shape is None:
            continue
        info = ShapeOnly("float32", shape, str(folder / ".metadata"))
        if part is Part.WEIGHTS:
            parts.weight_tensors.append((fqn, info))
        elif part is Part.OPTIMIZER and fqn.rsplit(".", 1)[-1] in ("exp_avg", "exp_avg_sq"):
            parts.moment_tensors.append((fqn, info))
    for part, fqns in found.items():
        slot = parts.slot(part)
        slot.present = True
        slot.where = f".metadata: {len(fqns)} key(s) under {fqns[0].split('.', 1)[0]}"
    for part in (Part.RNG, Part.DATA_POSITION, Part.TRAINER_STATE, Part.TRAINING_ARGS):
        parts.slot(part).required = False
    if Part.GRAD_SCALER not in found:
        parts.slot(Part.GRAD_SCALER).not_applicable = "no scaler key; needed only for fp16"
    if Part.TRAINING_ARGS not in found:
        parts.slot(Part.TRAINING_ARGS).not_applicable = "the app state holds no arguments"
    for part, effect in (
        (Part.OPTIMIZER, "the optimizer restarts: Adam's moments are rebuilt from zero"),
        (Part.SCHEDULER, "the LR schedule restarts from its first step (warmup again)"),
        (Part.RNG, "fresh RNG: dropout masks and shuffles differ from the original run"),
        (Part.DATA_POSITION, "no data position: the loader restarts the epoch"),
        (Part.TRAINER_STATE, "no step counter: a resume starts at step 0"),
    ):
        parts.slot(part).effect = effect
    _check_storage(parts, folder, meta)


def read_sub_folder(parts: Parts, folder: Path, part: Part) -> bool:
    """A DCP folder holding one component (an HF FSDP ``optimizer_0/`` or
    ``pytorch_model_fsdp_0/``): its ``.metadata`` read, its files checked; whether found."""
    if not (folder / ".metadata").is_file():
        return False
    loaded = parts.reader.read(folder / ".metadata")
    slot = parts.slot(part)
    slot.files.append(loaded)
    slot.present = True
    slot.where = f"{folder.name}/ (torch.distributed.checkpoint)"
    meta = unwrap(loaded.obj)
    _check_storage(parts, folder, meta, part)
    return True


def _check_storage(parts: Parts, folder: Path, meta: Any, part: Part = Part.WEIGHTS) -> None:
    """Every ``.distcp`` file the metadata names exists and holds the bytes it says."""
    if not isinstance(meta, dict) or not isinstance(meta.get("storage_data"), dict):
        return
    need: dict[str, int] = {}
    for info in meta["storage_data"].values():
        state = unwrap(info)
        if not isinstance(state, dict):
            continue
        rel = state.get("relative_path")
        offset, length = state.get("offset"), state.get("length")
        if isinstance(rel, str) and isinstance(offset, int) and isinstance(length, int):
            need[rel] = max(need.get(rel, 0), offset + length)
    for rel, end in sorted(need.items()):
        path = folder / rel
        try:
            size = path.stat().st_size
        except OSError:
            parts.missing_files.append((part, rel,
                                        f".metadata names {rel}, which does not exist"))
            continue
        if size < end:
            parts.missing_files.append(
                (part, rel, f"{rel} is {size:,} bytes but .metadata needs {end:,} "
                            "(truncated)"))
