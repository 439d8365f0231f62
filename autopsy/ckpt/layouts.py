"""Checkpoint layouts: recognise one, and find every checkpoint under a run or output dir.

Recognition uses names and, for single files, the first bytes only; nothing is
unpickled here. Layouts:

* ``hf_trainer``: a Trainer ``checkpoint-N/`` (``trainer_state.json``, ``optimizer.pt``,
  ``scheduler.pt``, ``rng_state*.pth``, weights, ``training_args.bin``);
* ``accelerate``: an ``Accelerator.save_state`` folder (``optimizer.bin``,
  ``scheduler.bin``, ``random_states_R.pkl``, ``sampler.bin``...);
* ``deepspeed``: a ``global_stepN/`` folder (``mp_rank_XX_model_states.pt``,
  ``*_optim_states.pt``), or its parent holding ``latest``;
* ``dcp``: a ``torch.distributed.checkpoint`` folder (``.metadata`` plus ``*.distcp``);
* ``lightning``: a Lightning ``.ckpt`` file;
* ``torch``: any other ``torch.save`` / pickle file (``.pt``, ``.pth``, ``.bin``, ``.pkl``,
  ``.tar``);
* ``safetensors``: a lone ``.safetensors`` file, or a weights-only folder (``save_pretrained``
  output, sharded with its index, or a LoRA adapter): weights only.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from enum import Enum
from pathlib import Path

from autopsy.formats.ckpt_open import open_checkpoint
from autopsy.formats.ckpterrors import CheckpointFormatError


class Layout(str, Enum):
    """The checkpoint layouts autopsy knows."""

    HF_TRAINER = "hf_trainer"
    ACCELERATE = "accelerate"
    DEEPSPEED = "deepspeed"
    DCP = "dcp"
    LIGHTNING = "lightning"
    TORCH = "torch"
    SAFETENSORS = "safetensors"


HF_MARKERS: frozenset[str] = frozenset({
    "trainer_state.json", "optimizer.pt", "scheduler.pt", "scaler.pt", "rng_state.pth",
    "training_args.bin",
})
ACCEL_MARKERS: frozenset[str] = frozenset({
    "optimizer.bin", "scheduler.bin", "sampler.bin", "dl_state_dict.bin",
})
WEIGHT_NAMES: frozenset[str] = frozenset({
    "model.safetensors", "pytorch_model.bin", "adapter_model.safetensors", "adapter_model.bin",
    "model.safetensors.index.json", "pytorch_model.bin.index.json",
})
TORCH_SUFFIXES: tuple[str, ...] = (".pt", ".pth", ".bin", ".pkl", ".tar", ".ckpt", ".pickle")

_HF_DIR = re.compile(r"^checkpoint-(\d+)$")
_DS_DIR = re.compile(r"^global_step(\d+)$")
_NUMBER = re.compile(r"(\d+)")
_STEP_IN_NAME = re.compile(r"(?:step|iter|iteration|global_step)[=_-]?(\d+)", re.IGNORECASE)
_RNG_FILE = re.compile(r"^(?:rng_state(?:_\d+)?\.pth|random_states_\d+\.pkl)$")

#: How deep below the given folder checkpoints are searched for.
MAX_DEPTH = 4
#: Entries listed per folder at most (a folder of millions of files is not a run dir).
MAX_ENTRIES = 20_000


@dataclass(frozen=True)
class CheckpointRef:
    """One checkpoint found: where, which layout, and the step its name says."""

    path: Path
    layout: Layout
    step: int | None
    mtime: float = 0.0

    @property
    def order(self) -> tuple[int, int, float, str]:
        """Sort key, oldest first: named step, then modification time, then name."""
        has = 1 if self.step is not None else 0
        return (has, self.step if self.step is not None else -1, self.mtime, self.path.name)


def _names(folder: Path) -> list[str]:
    try:
        with os.scandir(folder) as it:
            out = []
            for entry in it:
                out.append(entry.name)
                if len(out) >= MAX_ENTRIES:
                    break
            return out
    except OSError:
        return []


#: A checkpoint named inside a longer path or message: HF ``checkpoint-500``, DeepSpeed
#: ``global_step500``, Megatron ``iter_0000500``, Lightning ``epoch=3-step=1200.ckpt``
#: (at most 18 digits: a longer run of digits is no step, and ``int`` refuses thousands).
_STEP_IN_PATH = re.compile(r"(?:checkpoint|global_step|step|iteration|iter)[=_-]?(\d{1,18})(?!\d)",
                           re.IGNORECASE)


def step_in_path(text: str) -> int | None:
    """The step of the innermost checkpoint name in a path or an error message
    (``/out/checkpoint-32500``, ``ckpts/global_step1200/mp_rank_00_model_states.pt``), or
    None. Unlike :func:`step_from_name` it never falls back to a bare number."""
    found = _STEP_IN_PATH.findall(text)
    return int(found[-1]) if found else None


def step_from_name(name: str) -> int | None:
    """The step a checkpoint's name carries (``checkpoint-500``, ``global_step500``,
    ``epoch=2-step=300.ckpt``, ``ckpt_1000.pt``), or None."""
    for pattern in (_HF_DIR, _DS_DIR):
        m = pattern.match(name)
        if m:
            return int(m.group(1))
    m = _STEP_IN_NAME.search(name)
    if m:
        return int(m.group(1))
    stem = name.split(".")[0]
    numbers = _NUMBER.findall(stem)
    return int(numbers[-1]) if numbers else None


def _head(path: Path, n: int = 8) -> bytes:
    """The first ``n`` bytes of a regular file; b"" for anything else (a FIFO would block)."""
    try:
        fh, _size = open_checkpoint(os.fspath(path))
        with fh:
            return fh.read(n)
    except (CheckpointFormatError, OSError):
        return b""


def detect_file(path: Path) -> Layout | None:
    """The layout of a single checkpoint file, by name and first bytes."""
    name = path.name.lower()
    if name.endswith(".safetensors"):
        return Layout.SAFETENSORS
    if name.endswith(".ckpt"):
        return Layout.LIGHTNING
    if name.endswith(TORCH_SUFFIXES):
        return Layout.TORCH
    head = _head(path)
    if head.startswith(b"PK\x03\x04") or head[:1] == b"\x80":
        return Layout.TORCH
    return None


def detect_dir(folder: Path) -> Layout | None:
    """The layout of a checkpoint folder, or None when it is not one (a run dir, say)."""
    names = set(_names(folder))
    if ".metadata" in names and any(n.endswith(".distcp") for n in names):
        return Layout.DCP
    if _DS_DIR.match(folder.name) and any(n.endswith(("model_states.pt", "optim_states.pt"))
                                         for n in names):
        return Layout.DEEPSPEED
    has_hf_sub = any(_HF_DIR.match(n) for n in names)
    if "trainer_state.json" in names and (_HF_DIR.match(folder.name) or not has_hf_sub):
        return Layout.HF_TRAINER
    if has_hf_sub:
        return None
    if names & ACCEL_MARKERS or any(n.startswith("random_states_") for n in names):
        return Layout.ACCELERATE
    if _HF_DIR.match(folder.name) and (names & (HF_MARKERS | WEIGHT_NAMES)
                                       or any(_RNG_FILE.match(n) for n in names)
                                       or any(_DS_DIR.match(n) for n in names)):
        return Layout.HF_TRAINER
    if "latest" in names and any(_DS_DIR.match(n) for n in names):
        return Layout.DEEPSPEED
    if names & HF_MARKERS and not any(n.startswith("checkpoint") for n in names):
        return Layout.HF_TRAINER
    if names & WEIGHT_NAMES and not any(n.startswith(("checkpoint", "global_step"))
                                        for n in names):
        return Layout.SAFETENSORS  # a weights-only folder (save_pretrained, a LoRA adapter)
    return None


def detect(path: Path) -> Layout | None:
    """The layout of ``path`` (a file or a folder), or None."""
    return detect_dir(path) if path.is_dir() else detect_file(path)


def _mtime(path: Path) -> float:
    try:
        return path.stat().st_mtime
    except OSError:
        return 0.0


def _ref(path: Path, layout: Layout) -> CheckpointRef:
    return CheckpointRef(path, layout, step_from_name(path.name), _mtime(path))


def read_latest_tag(folder: Path) -> str | None:
    """The tag in a DeepSpeed ``latest`` file (``global_step500``), or None."""
    try:
        fh, _size = open_checkpoint(os.fspath(folder / "latest"))
        with fh:
            text = fh.read(256).decode("utf-8", "replace").strip()
    except (CheckpointFormatError, OSError):
        return None
    return text or None


def find_checkpoints(root: Path) -> list[CheckpointRef]:
    """Every checkpoint at or under ``root``, oldest first.

    ``root`` itself is one when it is a checkpoint file or folder. Otherwise its
    folders are searched (``MAX_DEPTH`` levels, symlinked folders once, and only those
    inside ``root``: a link to ``/`` is not a search of the system) and loose
    checkpoint files are taken in folders that are not checkpoints themselves.
    Weights-only files beside ``checkpoint-N/`` folders (the final model an HF
    output dir holds) are not checkpoints a resume would pick, and are skipped.
    """
    if root.is_file():
        layout = detect_file(root)
        return [_ref(root, layout)] if layout is not None else []
    layout = detect_dir(root)
    if layout is not None and not (layout is Layout.DEEPSPEED and (root / "latest").exists()):
        return [_ref(root, layout)]
    from autopsy.readers.discover import _inside

    found: list[CheckpointRef] = []
    seen: set[tuple[int, int]] = set()
    stack: list[tuple[Path, int]] = [(root, 0)]
    try:
        base = root.resolve()
    except (OSError, RuntimeError):
        base = root.absolute()
    while stack:
        folder, depth = stack.pop()
        try:
            st = folder.stat()
        except OSError:
            continue
        if (st.st_dev, st.st_ino) in seen:
            continue
        seen.add((st.st_dev, st.st_ino))
        names = sorted(_names(folder))
        has_sub_ckpt = any(_HF_DIR.match(n) or _DS_DIR.match(n) for n in names)
        for name in names:
            child = folder / name
            if name.startswith(".") or name in ("__pycache__", "runs", "wandb", "logs"):
                continue
            if child.is_dir():
                if child.is_symlink() and not _inside(child, base):
                    continue  # a folder linked from outside the run is not searched
                sub = detect_dir(child)
                if sub is Layout.DEEPSPEED and (child / "latest").exists():
                    stack.append((child, depth + 1))
                elif sub is not None:
                    found.append(_ref(child, sub))
                elif depth + 1 < MAX_DEPTH:
                    stack.append((child, depth + 1))
            elif not has_sub_ckpt:
                kind = detect_file(child) if _is_ckpt_file_name(name) else None
                if kind in (Layout.TORCH, Layout.LIGHTNING) and not _looks_pickled(child):
                    kind = None  # a data file named .bin (nanoGPT's train.bin), not a save
                if kind is not None:
                    found.append(_ref(child, kind))
    return sorted(found, key=lambda r: r.order)


def _looks_pickled(path: Path) -> bool:
    """A torch zip, or a pickle of protocol 2 or later (legacy torch files included)."""
    head = _head(path, 4)
    return head.startswith(b"PK\x03\x04") or head[:1] == b"\x80"


_SHARD = re.compile(r"-\d{5}-of-\d{5}\.")


def _is_ckpt_file_name(name: str) -> bool:
    low = name.lower()
    if low in ("training_args.bin",) or low.endswith(".index.json") or _SHARD.search(low):
        return False
    return low.endswith((".safetensors", *TORCH_SUFFIXES))


def pick_newest(refs: list[CheckpointRef], root: Path) -> CheckpointRef:
    """The checkpoint a resume would pick: DeepSpeed's ``latest`` tag when the folder has
    one, else the highest step in the name (as ``get_last_checkpoint``), else the newest file.
    """
    tag = read_latest_tag(root) if root.is_dir() else None
    if tag is not None:
        for ref in refs:
            if ref.path.name == tag and ref.path.parent == root:
                return ref
    return max(refs, key=lambda r: r.order)


def part_of_folder(path: Path) -> Path | None:
    """The checkpoint folder ``path`` is one component file of (``checkpoint-8/optimizer.pt``,
    an accelerate ``random_states_0.pkl``...), or None for a standalone file."""
    if not path.is_file():
        return None
    name = path.name
    known = name in HF_MARKERS or name in ACCEL_MARKERS or name in WEIGHT_NAMES \
        or bool(_RNG_FILE.match(name)) or name.endswith(("model_states.pt", "optim_states.pt"))
    if not known:
        return None
    layout = detect_dir(path.parent)
    if layout in (Layout.HF_TRAINER, Layout.ACCELERATE, Layout.DEEPSPEED):
        return path.parent
    return None
