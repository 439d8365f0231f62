"""The record a module beside ``make.py`` registers its runs with (its ``SPECS`` tuple)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class Spec:
    """One sample run of a module's ``SPECS``, for make.py's registry.

    ``train(output_dir, launch, params)`` makes the run (it may start several
    launches itself); ``check(run_dir, params)`` asserts the situation happened
    and returns the label; ``conclusion(label)`` is the README's last column;
    ``crashes``: the training process is expected to exit non-zero.
    """

    name: str
    situation: str
    how: str
    train: Callable[[str, int, Any], None]
    check: Callable[[Path, Any], dict[str, Any]]
    conclusion: Callable[[dict[str, Any]], str]
    crashes: bool = False
