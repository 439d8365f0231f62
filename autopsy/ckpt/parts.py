"""What a layout reader hands the checks: each component's files and state, as found.

A layout module (:mod:`autopsy.ckpt.hf`, :mod:`autopsy.ckpt.accel`, ...) fills one
:class:`Parts`; the checks (:mod:`autopsy.ckpt.checks`) judge it. Nothing here
reads a file.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from autopsy.ckpt.components import Part
from autopsy.ckpt.files import FileReader, Loaded
from autopsy.ckpt.layouts import Layout


@dataclass
class Slot:
    """One component as found.

    Attributes:
        present: whether the layout found it.
        files: the files read for it.
        expected: file names (or keys) it would be in, for a ``missing`` report.
        value: its state (a dict with ``TensorInfo`` leaves), when read.
        where: where the value came from (``"optimizer.pt"``, ``"ckpt.pt: optimizer"``).
        notes: evidence lines the layout adds (``"HF Trainer skips 40 batches on resume"``).
        required: whether it is needed for an exact resume in this layout.
        effect: what a resume does without it, in this layout.
        not_applicable: why it does not apply (the status becomes ``not_applicable``).
    """

    present: bool = False
    files: list[Loaded] = field(default_factory=list)
    expected: list[str] = field(default_factory=list)
    value: Any = None
    where: str = ""
    notes: list[str] = field(default_factory=list)
    required: bool = True
    effect: str = ""
    not_applicable: str = ""
    #: Key path of ``value`` inside its file (``"optimizer."``, ``"optimizer_states.0."``).
    prefix: str = ""


@dataclass
class Parts:
    """Everything a layout found in one checkpoint.

    ``rng`` maps a rank (None for a single ``rng_state.pth``) to its file or state;
    ``world_sizes`` and ``global_steps`` are ``(source, value)`` pairs from every
    place that states one; ``weights`` holds every weight tensor as ``(key, TensorInfo)``.
    """

    layout: Layout
    root: Path
    reader: FileReader
    name_step: int | None = None
    slots: dict[Part, Slot] = field(default_factory=dict)
    weight_tensors: list[tuple[str, Any]] = field(default_factory=list)
    moment_tensors: list[tuple[str, Any]] = field(default_factory=list)
    rng: dict[int | None, Loaded | None] = field(default_factory=dict)
    world_sizes: list[tuple[str, int]] = field(default_factory=list)
    global_steps: list[tuple[str, int]] = field(default_factory=list)
    fp16: bool | None = None
    grad_accum: int | None = None
    problems: list[str] = field(default_factory=list)
    #: ``(file, what)`` integrity problems not tied to one read file (a shard named but absent).
    missing_files: list[tuple[Part, str, str]] = field(default_factory=list)
    #: The optimizer's parameters are flattened/partitioned (ZeRO): no per-parameter shapes.
    flat_optimizer: bool = False
    #: Folder-level facts for the torn-save check (a Trainer folder without trainer_state.json).
    torn: list[str] = field(default_factory=list)
    #: A weights-only save (safetensors, a bare state dict): a model export.
    weights_only: bool = False

    def slot(self, part: Part) -> Slot:
        """The slot of ``part`` (created empty on first use)."""
        if part not in self.slots:
            self.slots[part] = Slot()
        return self.slots[part]

    def all_files(self) -> list[Loaded]:
        """Every file read, each once."""
        seen: dict[Path, Loaded] = {}
        for slot in self.slots.values():
            for f in slot.files:
                seen.setdefault(f.path, f)
        for f in self.rng.values():
            if f is not None:
                seen.setdefault(f.path, f)
        return list(seen.values())

    def file_part(self) -> dict[Path, Part]:
        """Which component each file belongs to (the first that lists it)."""
        out: dict[Path, Part] = {}
        for part, slot in self.slots.items():
            for f in slot.files:
                out.setdefault(f.path, part)
        for f in self.rng.values():
            if f is not None:
                out.setdefault(f.path, Part.RNG)
        return out
