"""Finding and reading a folder's model weights: single files, sharded indexes, LoRA adapters."""

from __future__ import annotations

from pathlib import Path

from autopsy.ckpt.components import Part
from autopsy.ckpt.parts import Parts
from autopsy.ckpt.statedicts import WEIGHT_KEYS, first_key, is_weights, unwrap, walk_tensors

#: Index files of sharded weights.
INDEX_NAMES = ("model.safetensors.index.json", "pytorch_model.bin.index.json",
               "adapter_model.safetensors.index.json")
#: Single weight files, in order of preference (HF, PEFT, accelerate).
SINGLE_NAMES = ("model.safetensors", "adapter_model.safetensors", "pytorch_model.bin",
                "adapter_model.bin", "model.bin", "model.pt")


def read_folder_weights(parts: Parts, folder: Path, *, extra: tuple[str, ...] = ()) -> bool:
    """Fill the weights slot from ``folder``; return whether any weights were found.

    A sharded index is checked: every file it names must exist (a missing shard
    is recorded in ``parts.missing_files``). ``extra`` adds accepted file names
    (accelerate's ``model_1.safetensors``).
    """
    slot = parts.slot(Part.WEIGHTS)
    slot.expected = ["model.safetensors", "pytorch_model.bin", "adapter_model.safetensors",
                     "model.safetensors.index.json"]
    found = False
    for index_name in INDEX_NAMES:
        index_path = folder / index_name
        if not index_path.is_file():
            continue
        found = True
        index = parts.reader.read(index_path)
        slot.files.append(index)
        weight_map = index.obj.get("weight_map") if isinstance(index.obj, dict) else None
        if index.error is None and not isinstance(weight_map, dict):
            index.problems.append("index has no weight_map")
            continue
        for shard in sorted({str(v) for v in (weight_map or {}).values()}):
            shard_path = folder / shard
            if not shard_path.is_file():
                parts.missing_files.append(
                    (Part.WEIGHTS, shard, f"{index_name} names {shard}, which does not exist"))
                continue
            _read_weight_file(parts, shard_path)
    if not found:
        for name in (*SINGLE_NAMES, *extra):
            path = folder / name
            if path.is_file():
                _read_weight_file(parts, path)
                found = True
    slot.present = found
    if not slot.effect:
        slot.effect = ("the resume has no trained weights: the model starts again from its "
                       "initial (or pretrained) weights")
    return found


def _read_weight_file(parts: Parts, path: Path) -> None:
    loaded = parts.reader.read(path)
    slot = parts.slot(Part.WEIGHTS)
    slot.files.append(loaded)
    if loaded.kind == "safetensors":
        parts.weight_tensors.extend((k, v) for k, v in loaded.tensors)
        return
    obj = unwrap(loaded.obj)
    if isinstance(obj, dict) and not is_weights(obj):
        key = first_key(obj, WEIGHT_KEYS)
        if key is not None:
            obj = obj[key]
    parts.weight_tensors.extend(walk_tensors(obj))
