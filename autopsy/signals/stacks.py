"""Where each rank stopped, from its stack dumps: groups of ranks and the phase of each.

A hung job's ranks mostly wait in the same place (a collective); the one that is elsewhere
(loading data, saving a checkpoint, evaluating on rank 0 only) is the one the others wait
for. :func:`rank_stacks` takes each rank's main-thread stack from its ``stack_dump`` events
(py-spy's ``MainThread``, faulthandler's thread whose outermost frame is ``<module>``; the
last dump of a rank wins), normalised so two writers agree: each frame is its function's
last name component, the file's base name and the line (addresses and directories dropped).
:func:`group_ranks` groups ranks by that signature, and :func:`phase` names the phase of a
stack from its frames (:data:`PHASES`, outermost context first).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import pandas as pd

#: Phases, each a name and a pattern over ``function file`` of a frame, in the order they
#: are tested from the outermost frame in: the first context found names the phase.
PHASES: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("init/rendezvous", re.compile(
        r"(?i)\b(init_process_group|rendezvous|_store_based_barrier|_create_c10d_store|"
        r"TCPStore|new_group|init_device_mesh)\b")),
    ("checkpoint save", re.compile(
        r"(?i)(\b(save_checkpoint|save_model|save_state|_save_checkpoint|save_pretrained|"
        r"save_file)\b|serialization\.py|distributed/checkpoint)")),
    ("checkpoint load", re.compile(
        r"(?i)\b(load_checkpoint|load_state|_load_from_checkpoint|from_pretrained)\b")),
    ("evaluation", re.compile(
        r"(?i)\b(evaluate|evaluation_loop|_evaluate|validation_step|validate|eval_step|"
        r"prediction_step|predict)\b")),
    ("data loading", re.compile(
        r"(?i)(__getitem__|__getitems__|_next_data|collate|utils/data/|\bfetch\b|"
        r"_get_data|_try_get_data)")),
    ("optimizer step", re.compile(r"(?i)(torch/optim/|\bclip_grad_norm_\b|optimizer_step)")),
    ("backward", re.compile(r"(?i)(torch/autograd/|\bbackward\b|_engine_run_backward)")),
    ("forward", re.compile(r"(?i)\b(forward|_call_impl|_wrapped_call_impl)\b")),
)
#: torch.distributed calls that are a collective (the innermost one names what a rank waits in).
COLLECTIVES = frozenset({
    "all_reduce", "broadcast", "all_gather", "all_gather_into_tensor", "reduce_scatter",
    "reduce_scatter_tensor", "barrier", "monitored_barrier", "all_to_all", "all_to_all_single",
    "reduce", "gather", "scatter", "send", "recv", "isend", "irecv", "broadcast_object_list",
    "all_gather_object", "wait"})


@dataclass(frozen=True)
class RankStack:
    """One rank's main-thread stack."""

    rank: int
    frames: tuple[tuple[str, str, int], ...]  # (function, file base name, line), innermost first
    full: tuple[dict[str, Any], ...]  # the frames as dumped
    tool: str
    source: str

    @property
    def signature(self) -> tuple[tuple[str, str, int], ...]:
        """What two ranks must share to be in the same place."""
        return self.frames

    def where(self) -> str:
        """The innermost frame outside the libraries, else the innermost."""
        for f in self.full:
            if not _library(str(f.get("file", ""))):
                return f"{f.get('function')} at {f.get('file')}:{f.get('line')}"
        f = self.full[0] if self.full else {}
        return f"{f.get('function', '?')} at {f.get('file', '?')}:{f.get('line', '?')}"


def _library(file: str) -> bool:
    return any(x in file for x in ("site-packages", "dist-packages", "/torch/", "torch/",
                                   "/lib/python", "<frozen"))


def _norm(frame: dict[str, Any]) -> tuple[str, str, int]:
    func = str(frame.get("function", "")).split(".")[-1]
    file = re.split(r"[\\/]", str(frame.get("file", "")))[-1]
    try:
        line = int(frame.get("line") or 0)
    except (TypeError, ValueError):
        line = 0
    return func, file, line


def rank_stacks(events: pd.DataFrame) -> dict[int, RankStack]:
    """Each rank's main-thread stack (its last dump), by rank."""
    if events.empty:
        return {}
    rows = events[(events["kind"].astype(str) == "stack_dump") & events["rank"].notna()]
    out: dict[int, RankStack] = {}
    for _, row in rows.iterrows():
        d = row["details"] if isinstance(row["details"], dict) else {}
        if not d.get("main"):
            continue
        full = tuple(f for f in d.get("frames") or [] if isinstance(f, dict))
        if not full:
            continue
        rank = int(row["rank"])
        out[rank] = RankStack(rank, tuple(_norm(f) for f in full), full,
                              str(d.get("tool", "")), str(row["source"]))
    return out


def group_ranks(stacks: dict[int, RankStack]) -> list[list[int]]:
    """Ranks grouped by stack signature, the largest group first."""
    groups: dict[tuple[tuple[str, str, int], ...], list[int]] = {}
    for rank, s in sorted(stacks.items()):
        groups.setdefault(s.signature, []).append(rank)
    return sorted(groups.values(), key=lambda g: (-len(g), g[0]))


def phase(stack: RankStack) -> str:
    """The phase a stack is in: its context (outermost first) and the collective it waits
    in, e.g. ``"data loading"``, ``"checkpoint save"``, ``"a collective (all_reduce)"``,
    ``"evaluation, in all_reduce"``."""
    context = None
    texts = [f"{f.get('function', '')} {f.get('file', '')}" for f in reversed(stack.full)]
    for name, pattern in PHASES:
        if any(pattern.search(t) for t in texts):
            context = name
            break
    collective = next((func for func, file, _ in stack.frames
                       if func in COLLECTIVES and "distributed" in " ".join(
                           str(f.get("file", "")) for f in stack.full)), None)
    if context and collective and context not in ("init/rendezvous",):
        return f"{context}, in {collective}"
    if context:
        return context
    if collective:
        return f"a collective ({collective})"
    return "the training code"
