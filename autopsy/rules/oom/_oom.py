"""Shared helpers of the OOM rules: the earliest OOM, its traceback and its phase."""

from __future__ import annotations

import pandas as pd

#: Phase by traceback frames, tested in order: (phase, function names, path parts).
PHASES: tuple[tuple[str, frozenset[str], tuple[str, ...]], ...] = (
    ("backward", frozenset({"backward", "_engine_run_backward"}), ("/autograd/",)),
    ("optimizer step", frozenset(), ("/torch/optim/",)),
    ("evaluation", frozenset({"evaluate", "eval", "evaluation_loop", "validate",
                              "prediction_step", "validation_step"}), ()),
)


def phase_of(frames: list[dict]) -> str:
    """The training phase a traceback was in (forward unless a frame says otherwise)."""
    for phase, functions, parts in PHASES:
        for fr in frames:
            fn, path = str(fr.get("function", "")), str(fr.get("file", ""))
            if fn in functions or any(p in path for p in parts):
                return phase
            if phase == "optimizer step" and fn == "step" and "optim" in path:
                return phase
    return "forward"


def traceback_for(events: pd.DataFrame, oom: pd.Series) -> pd.Series | None:
    """The traceback row of the same rank and source nearest before an OOM line."""
    same = events[(events["kind"].astype(str) == "traceback")
                  & (events["source"].astype(str) == str(oom["source"]))]
    same = same[same["rank"].isna() if pd.isna(oom["rank"]) else same["rank"] == oom["rank"]]
    if pd.notna(oom["line"]):
        same = same[same["line"] <= oom["line"]]
    return None if same.empty else same.sort_values("line").iloc[-1]
