"""Which folders under a fleet root are runs.

A folder is a run when a reader recognises a file directly in it (an event file, a
``trainer_state.json``, a rank log, a ``metrics.csv``...), when it holds a folder that only
runs hold (``runs/``, ``lightning_logs/``, ``wandb/``, ``mlruns/``, ``checkpoint-N/``, a
torchrun ``attempt_N/``...), or when it holds files and no folder at all (a leaf: a
console log saved under any name is read by ``analyze`` from its content, as here). A run
is not searched further: its subfolders are its own. Other folders are walked down to
:data:`MAX_DEPTH` levels. A root that is itself a run is one run.
"""

from __future__ import annotations

import os
from pathlib import Path

from autopsy.readers.discover import SKIP_DIRS
from autopsy.readers.registry import reader_modules

#: Folders only a run holds, by name.
RUN_FOLDERS = frozenset({"runs", "logs", "lightning_logs", "wandb", "mlruns", "tb",
                         "tensorboard", "tb_logs", "tblogs", "events"})
#: ... and by the start of their name.
RUN_FOLDER_PREFIXES = ("checkpoint-", "checkpoint_", "version_", "attempt_", "global_step")
#: Levels walked below a root looking for runs (a run deeper than this is not found).
MAX_DEPTH = 6
#: Files sniffed per folder when deciding whether it is a run (a folder of a million
#: files is judged by its first ones, in name order).
MAX_SNIFFED = 64


def is_run(folder: Path) -> bool:
    """Whether ``folder`` is a run (see the module docstring)."""
    try:
        entries = sorted(os.scandir(folder), key=lambda e: e.name)
    except OSError:
        return False
    files = []
    subdirs = 0
    for entry in entries:
        try:
            if entry.is_dir():
                if entry.name in RUN_FOLDERS or entry.name.startswith(RUN_FOLDER_PREFIXES):
                    return True
                subdirs += entry.name not in SKIP_DIRS
            elif entry.is_file() and not entry.name.startswith("."):
                files.append(Path(entry.path))
        except OSError:
            continue
    if files and not subdirs:
        return True
    modules = reader_modules()
    for path in files[:MAX_SNIFFED]:
        for module in modules:
            try:
                if module.sniff(path):
                    return True
            except Exception:  # a sniff never takes discovery down
                continue
    return False


def find_runs(roots: list[Path], max_depth: int = MAX_DEPTH) -> list[tuple[Path, Path]]:
    """``(root, run folder)`` of every run under ``roots``, in path order."""
    found: list[tuple[Path, Path]] = []
    for root in roots:
        if is_run(root):
            found.append((root, root))
            continue
        stack = [(root, 0)]
        while stack:
            folder, depth = stack.pop()
            try:
                subdirs = sorted(e.path for e in os.scandir(folder)
                                 if e.is_dir(follow_symlinks=False)
                                 and e.name not in SKIP_DIRS)
            except OSError:
                continue
            for sub in reversed(subdirs):
                path = Path(sub)
                if is_run(path):
                    found.append((root, path))
                elif depth + 1 < max_depth:
                    stack.append((path, depth + 1))
    found.sort(key=lambda rp: (str(rp[0]), str(rp[1])))
    return found
