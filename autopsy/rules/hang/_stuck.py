"""Shared reading of a distributed hang: who timed out where, who did not.

The hang rules must agree on one explanation per run, so the classification is
done once here (:func:`classify`) and each rule reports only its own kind.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from autopsy.model.run import Run
from autopsy.rules.crash._failures import shared_rank_status
from autopsy.signals.ranks import event_roles
from autopsy.signals.stacks import group_ranks, phase, rank_stacks

#: Event kinds that mean "this rank waited in a collective and gave up".
TIMEOUT_KINDS: frozenset[str] = frozenset({"nccl_timeout", "collective_timeout", "heartbeat_stuck"})
#: Innermost torch functions that mean a rank left its training loop and waits at its end.
BARRIER_FUNCS: frozenset[str] = frozenset({"barrier", "monitored_barrier"})
#: Root-class kinds on another rank that make the timeouts a mere cascade (other rules own them).
FOREIGN_ROOT_KINDS: frozenset[str] = frozenset({"oom", "host_kill", "nan_loss"})


@dataclass(frozen=True)
class Stuck:
    """Where one rank timed out."""

    rank: int
    step: int | None
    kind: str
    seq: int | None
    last_completed: int | None
    op: str | None
    numel: int | None
    func: str | None
    site: str | None
    source: str | None
    line: int | None


@dataclass
class Hang:
    """The classification of a run's timeouts (``kind`` picks the rule that reports it)."""

    kind: str  # "laggard" | "timeout" | "uneven" | "mismatch" | "none"
    stuck: dict[int, Stuck] = field(default_factory=dict)
    culprits: tuple[int, ...] = ()
    step: int | None = None
    how: list[str] = field(default_factory=list)
    numbers: dict[str, Any] = field(default_factory=dict)


def _int(value: Any) -> int | None:
    try:
        return None if value is None or pd.isna(value) else int(value)
    except (TypeError, ValueError):
        return None


def last_attempt(events: pd.DataFrame) -> pd.DataFrame:
    """The events of the last launcher attempt (a restarted job is judged on its last try)."""
    if events.empty:
        return events
    attempts = events["details"].map(lambda d: d.get("attempt", 0) if isinstance(d, dict) else 0)
    return events[attempts == attempts.max()]


def stuck_ranks(events: pd.DataFrame) -> dict[int, Stuck]:
    """Each rank's first timeout, with the collective and call site from its traceback."""
    out: dict[int, Stuck] = {}
    ranked = events[events["rank"].notna()]
    for rank, rows in ranked.groupby("rank", sort=True):
        kinds = rows["kind"].astype(str)
        timeouts = rows[kinds.isin(TIMEOUT_KINDS)]
        if timeouts.empty:
            continue
        first = timeouts.iloc[0]
        merged: dict[str, Any] = {}
        for d in timeouts["details"]:
            for key, value in (d or {}).items():
                merged.setdefault(key, value)
        tracebacks = rows[kinds == "traceback"]
        func = site = None
        for d in tracebacks["details"]:
            frames = (d or {}).get("frames") or []
            if frames:
                func = str(frames[-1].get("function"))
            user = (d or {}).get("user_frame")
            if user:
                site = f"{user.get('file')}:{user.get('line')}"
            if func or site:
                break
        out[int(rank)] = Stuck(
            rank=int(rank), step=_int(timeouts["step"].max()), kind=str(first["kind"]),
            seq=_int(merged.get("SeqNum")), last_completed=_int(merged.get("last_completed")),
            op=merged.get("OpType") or merged.get("op"), numel=_int(merged.get("NumelIn")),
            func=func, site=site, source=first["source"], line=_int(first["line"]),
        )
    return out


def _odd_ones(groups: dict[Any, list[int]]) -> tuple[Any, list[int]] | None:
    """The majority key and the ranks outside it, when one group holds a strict majority."""
    if len(groups) < 2:
        return None
    sizes = Counter({k: len(v) for k, v in groups.items()})
    (top, n), (_, n2) = sizes.most_common(2)
    if n <= n2:
        return None
    return top, sorted(r for k, v in groups.items() if k != top for r in v)


def classify(run: Run, ctx: Any = None) -> Hang:
    """Classify the run's collective timeouts; ``kind`` is ``"none"`` when no hang rule applies.

    With ``ctx`` (a :class:`~autopsy.rules.context.RuleContext`), computed once per engine
    run for every hang rule."""
    if ctx is not None:
        return ctx.cached("hang.classify", lambda: _classify(run, ctx))  # type: ignore
    return _classify(run, None)


def _classify(run: Run, ctx: Any) -> Hang:
    events = last_attempt(run.events)
    if events.empty:
        return Hang("none")
    kinds = events["kind"].astype(str)
    if kinds.isin({"rendezvous_timeout", "collective_mismatch"}).any():
        return Hang("none")  # HANG004 / HANG003 own those
    roles = event_roles(events)
    if (roles == "root").any():
        return Hang("none")  # a rank failed on its own; the timeouts are its cascade
    stuck = stuck_ranks(events)
    if not stuck:
        return Hang("none")
    status = shared_rank_status(run, ctx)
    steps = {int(r): int(s) for r, s in status["last_step"].dropna().items()}
    hang = Hang("timeout", stuck=stuck, culprits=tuple(sorted(stuck)))

    def after(ranks: list[int]) -> int | None:
        known = [steps[r] for r in ranks if r in steps]
        return min(known) + 1 if known else None

    by_numel: dict[tuple[int | None, int], list[int]] = {}
    for s in stuck.values():
        if s.numel is not None:
            by_numel.setdefault((s.seq, s.numel), []).append(s.rank)
    seqs = {k[0] for k in by_numel}
    if len(seqs) == 1 and (odd := _odd_ones(by_numel)):
        top, ranks = odd
        hang.kind, hang.culprits, hang.step = "mismatch", tuple(ranks), after(ranks)
        hang.how.append(f"SeqNum {top[0]}: rank(s) {ranks} entered it with NumelIn "
                        f"{[stuck[r].numel for r in ranks]}, the others with {top[1]}")
        hang.numbers = {"seq": top[0], "numel_majority": top[1]}
        return hang

    places: dict[tuple[Any, ...], list[int]] = {}
    for s in stuck.values():
        if s.func or s.site:
            places.setdefault((s.func, s.site), []).append(s.rank)
    if (odd := _odd_ones(places)) is not None:
        top, ranks = odd
        funcs = {stuck[r].func for r in ranks}
        where = f"{stuck[ranks[0]].func} at {stuck[ranks[0]].site}"
        hang.culprits, hang.step = tuple(ranks), after(ranks)
        hang.numbers = {"others_in": f"{top[0]} at {top[1]}", "culprit_in": where}
        if funcs <= BARRIER_FUNCS:
            hang.kind = "uneven"
            hang.how.append(f"rank(s) {ranks} timed out in {where} (it left its loop) while "
                            f"the others wait in {top[0]} at {top[1]}")
        else:
            hang.kind = "mismatch"
            hang.how.append(f"rank(s) {ranks} stayed in {where} while the others had moved "
                            f"past it to {top[0]} at {top[1]}")
        return hang

    _laggard(hang, events, status, steps)
    return hang


def _laggard(hang: Hang, events: pd.DataFrame, status: pd.DataFrame,
             steps: dict[int, int]) -> None:
    """Find the rank the timed-out ranks waited for, by every clue the logs give."""
    stuck = hang.stuck
    found: list[int] = []
    desync = events[events["kind"].astype(str) == "desync_report"]
    for d in desync["details"]:
        lag = [int(r) for r in (d or {}).get("lagging_ranks") or []]
        if lag and not found:
            found = lag
            hang.how.append(f"the desync report names rank(s) {lag} as lagging")
    quiet = sorted(int(r) for r in status.index if int(r) not in stuck)
    if quiet and len(quiet) < len(status.index):
        if not found:
            found = quiet
        hang.how.append(f"rank(s) {quiet} logged no timeout while {sorted(stuck)} did")
    done = {r: s.last_completed if s.last_completed is not None else s.seq
            for r, s in stuck.items() if (s.last_completed or s.seq) is not None}
    if len(set(done.values())) > 1:
        low = min(done.values())
        lows = sorted(r for r, v in done.items() if v == low)
        if not found:
            found = lows
        hang.how.append(f"rank(s) {lows} are furthest behind in the collective sequence ({low})")
    stacks = rank_stacks(events)
    if len(stacks) >= 2:
        groups = group_ranks(stacks)
        if len(groups) >= 2 and len(groups[0]) > len(groups[1]):
            odd = sorted(r for g in groups[1:] for r in g)
            where = phase(stacks[odd[0]])
            hang.how.append(f"the stack dumps show rank(s) {odd} in {where} "
                            f"({stacks[odd[0]].where()}) while rank(s) {groups[0]} are in "
                            f"{phase(stacks[groups[0][0]])}")
            hang.numbers["phase"] = where
            if not found:
                found = odd
    if len(steps) > 1 and len(set(steps.values())) > 1:
        low = min(steps.values())
        lows = sorted(r for r, v in steps.items() if v == low)
        if len(lows) < len(steps):
            if not found:
                found = lows
            hang.how.append(f"rank(s) {lows} stopped logging at step {low}, the others at "
                            f"{max(steps.values())}")
    if not found:
        return
    hang.culprits = tuple(found)
    known = [steps[r] for r in found if r in steps]
    hang.step = min(known) + 1 if known else None
    ended = {str(status.at[r, "ended"]) for r in found if r in status.index}
    times = pd.to_numeric(status["last_time"], errors="coerce")
    lag_t = times.reindex(found).max()
    other_t = times.reindex(sorted(stuck)).min()
    alive = pd.notna(lag_t) and pd.notna(other_t) and lag_t > other_t and "oom" not in ended
    hang.kind = "straggler" if alive and ended <= {"ok", "exited", "terminated"} else "dead"
    hang.numbers = {"ended": sorted(ended)}
