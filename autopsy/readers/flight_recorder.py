"""Flight Recorder dumps of a distributed job, matched across ranks into events.

Each rank's dump (:mod:`autopsy.formats.fr_dump`) is its own view; the story is in how the
views differ. Per process group, entries are matched by collective sequence number, as
PyTorch's own analyzer (``torch.distributed.flight_recorder``) does, and the reader records
what the match shows as the events the hang rules already read:

* the **stuck collective** is the highest sequence number any rank enqueued that not every
  rank completed; each rank that entered it and did not complete it (or that entered it while
  another never did: gloo marks a work that failed on its timeout completed) waits there: a
  ``nccl_timeout`` event (``collective_timeout`` for gloo and other back ends) with
  ``SeqNum``, ``OpType``, ``NumelIn``, ``last_completed`` and the call's stack
  (``user_frame``: the innermost frame outside torch);
* the ranks that **never entered** it (their last enqueued collective is older) are named in
  a ``desync_report`` event (``lagging_ranks``, their last collective), the way torch's own
  desync debug report names lagging ranks;
* at a sequence number every rank reached, **different ops, sizes or dtypes** are a
  ``collective_mismatch`` event with each rank's fingerprint (``OpType``, ``TensorShape``,
  ``TensorDtypes``);
* the ranks whose **last completed** collective is the oldest are in each event's details.

Point-to-point ops (``is_p2p``) have no collective sequence number and are not matched.
A group rank whose dump is missing, a dump that is cut short or unsafe, and dumps of several
dump versions are recorded problems; the analysis covers the ranks that have a dump.
"""

from __future__ import annotations

import math
from collections import Counter
from pathlib import Path
from typing import Any

from autopsy.formats.fr_dump import (
    KNOWN_VERSIONS,
    Dump,
    DumpError,
    Entry,
    looks_like_dump,
    rank_of,
    read_dump,
)
from autopsy.model.events import events_frame
from autopsy.model.problem import Problem
from autopsy.readers.base import RunPart, head
from autopsy.readers.registry import Format

NAME = "flight_recorder"
FORMATS = (
    Format("flight_recorder", "PyTorch Flight Recorder dumps (each rank's ring of recent "
           "collectives, pickle or JSON), matched across ranks", ("events",),
           "nccl_trace_rank_0 ... nccl_trace_rank_N (TORCH_FR_DUMP_TEMP_FILE prefix)"),
)


def sniff(path: Path) -> bool:
    """A file whose name ends with a rank and whose first bytes are a dump's."""
    return rank_of(path.name) is not None and looks_like_dump(head(path)) is not None


def read(path: Path, rel: str) -> RunPart:
    """Read one dump (:func:`read_group` with one file)."""
    return read_group([path], [rel])


def read_group(paths: list[Path], rels: list[str]) -> RunPart:
    """Read every rank's dump and match them."""
    part = RunPart()
    dumps: dict[int, tuple[Dump, str]] = {}
    for path, rel in sorted(zip(paths, rels, strict=True), key=lambda pr: pr[1]):
        rank = rank_of(path.name)
        form = looks_like_dump(head(path))
        if rank is None or form is None:
            continue
        if rank in dumps:
            if dumps[rank][0].form == "pickle" or form == "json":
                continue  # the pickle and the JSON of one rank: the pickle has the stacks
        try:
            dumps[rank] = (read_dump(path, rank, form), rel)
        except DumpError as exc:
            part.problems.append(Problem(rel, f"Flight Recorder dump: {exc}", kind=exc.kind))
    if not dumps:
        return part
    versions = Counter(d.version for d, _ in dumps.values())
    if len(versions) > 1:
        part.problems.append(Problem(
            dumps[min(dumps)][1], "Flight Recorder dumps of several versions ("
            + ", ".join(f"{v or '?'}: {n} rank(s)" for v, n in sorted(versions.items()))
            + "): ranks ran different torch builds", kind="mixed_versions"))
    unknown = sorted(v for v in versions if v not in KNOWN_VERSIONS)
    if unknown:
        part.problems.append(Problem(
            dumps[min(dumps)][1], f"Flight Recorder dump version {', '.join(unknown)} is newer "
            "than autopsy knows: read with the fields it knows", kind="unknown_version"))
    rows: list[list[Any]] = []
    for pg in sorted({e.pg for d, _ in dumps.values() for e in d.entries}):
        rows.extend(_match_group(pg, dumps, part.problems))
    if rows:
        part.events = events_frame(rows)
    return part


def _last_completed(dump: Dump, pg: str, mine: list[Entry]) -> int | None:
    """The last collective this rank completed in ``pg``: the group status, else the
    newest entry whose state says so."""
    status = dump.status.get(dump.pg_ids.get(pg, ""), {})
    if "last_completed_collective" in status:
        return status["last_completed_collective"]
    done = [e.seq for e in mine if e.state == "completed" and e.seq is not None]
    return max(done) if done else None


def _match_group(pg: str, dumps: dict[int, tuple[Dump, str]],
                 problems: list[Problem]) -> list[list[Any]]:
    """The events of one process group."""
    per_rank: dict[int, list[Entry]] = {}
    members: set[int] = set()
    for rank, (dump, _) in dumps.items():
        mine = [e for e in dump.entries if e.pg == pg and e.seq is not None]
        # the config is keyed by the group's name; torch 2.13 keys the default group "" while
        # its entries say "0": a dump with one group config means that group
        members.update(dump.groups.get(pg) or (next(iter(dump.groups.values()))
                                               if len(dump.groups) == 1 else ()))
        if mine:
            per_rank[rank] = sorted(mine, key=lambda e: e.seq or 0)
    if not per_rank:
        return []
    some_rel = dumps[min(per_rank)][1]
    missing = sorted(members - set(dumps))
    if missing:
        problems.append(Problem(
            some_rel, f"no Flight Recorder dump of rank(s) {_short(missing)} of process group "
            f"{pg} ({len(members)} ranks): matched over the {len(per_rank)} that have one",
            kind="missing_dump", count=len(missing)))
    last_enq = {r: entries[-1].seq or 0 for r, entries in per_rank.items()}
    done = {r: _last_completed(dumps[r][0], pg, per_rank[r]) for r in per_rank}
    rows: list[list[Any]] = []
    # a mismatch at the newest sequence number every rank reached
    common = min(last_enq.values())
    by_seq = {r: {e.seq: e for e in entries} for r, entries in per_rank.items()}
    prints = {r: by_seq[r].get(common) for r in per_rank}
    if all(p is not None for p in prints.values()) and len(
            {(p.op, p.sizes, p.dtypes) for p in prints.values() if p is not None}) > 1:
        rows.append(_mismatch(pg, common, prints, dumps))
    stuck = max(last_enq.values())
    behind = sorted(r for r in per_rank if last_enq[r] < stuck)
    # with a member that never entered, no rank can have finished the collective well (gloo
    # marks a work that failed on its timeout completed): every rank in it was waiting
    waiting = sorted(r for r in per_rank if last_enq[r] == stuck
                     and (behind or done[r] is None or done[r] < stuck))
    if not waiting and not behind:
        return rows
    oldest = min((v for v in done.values() if v is not None), default=None)
    oldest_ranks = sorted(r for r, v in done.items() if v is not None and v == oldest)
    holder = min(r for r in per_rank if last_enq[r] == stuck)
    op = by_seq[holder][stuck].op
    for r in waiting:
        e = by_seq[r][stuck]
        user = e.user_frame()
        details: dict[str, Any] = {
            "SeqNum": stuck, "OpType": e.op, "NumelIn": e.numel, "last_completed": done[r],
            "last_enqueued": last_enq[r], "pg": pg, "backend": e.backend,
            "timeout_ms": e.timeout_ms, "from": "flight_recorder",
            "frames": [{"function": f, "file": fi, "line": ln} for f, fi, ln in e.frames[:12]],
        }
        if user is not None:
            details["user_frame"] = {"function": user[0], "file": user[1], "line": user[2]}
        if oldest_ranks:
            details["oldest_completed_ranks"] = oldest_ranks
        kind = "nccl_timeout" if e.backend == "nccl" else "collective_timeout"
        where = f" at {user[1]}:{user[2]} ({user[0]})" if user else ""
        rows.append([r, _wall(e), None, kind,
                     f"rank {r} waits in collective #{stuck} ({e.op}, {e.numel} elements) of "
                     f"process group {pg}{where}; last completed #{done[r]} (Flight Recorder)",
                     dumps[r][1], None, details])
    if behind:
        lasts = {r: last_enq[r] for r in behind}
        what = ", ".join(f"rank {r} at #{v}" for r, v in sorted(lasts.items())[:8])
        rows.append([None, math.nan, None, "desync_report",
                     f"Flight Recorder: rank(s) {_short(behind)} never entered collective "
                     f"#{stuck} ({op}) of process group {pg} that rank(s) {_short(waiting)} "
                     f"wait in; their last: {what}", dumps[behind[0]][1], None,
                     {"lagging_ranks": behind, "collective": stuck, "pg": pg,
                      "last_enqueued": lasts, "from": "flight_recorder"}])
    return rows


def _mismatch(pg: str, seq: int, prints: dict[int, Entry | None],
              dumps: dict[int, tuple[Dump, str]]) -> list[Any]:
    fingerprints = [{"rank": r, "OpType": p.op, "TensorShape": [list(s) for s in p.sizes],
                     "TensorDtypes": list(p.dtypes), "SequenceNumber": seq}
                    for r, p in sorted(prints.items()) if p is not None]
    shown = "; ".join(f"rank {f['rank']}: {f['OpType']} {f['TensorShape']}"
                      for f in fingerprints[:6])
    first = min(prints)
    return [None, math.nan, None, "collective_mismatch",
            f"Flight Recorder: collective #{seq} of process group {pg} differs across ranks "
            f"({shown})", dumps[first][1], None,
            {"fingerprints": fingerprints, "pg": pg, "from": "flight_recorder"}]


def _wall(e: Entry) -> float:
    return e.created_ns / 1e9 if e.created_ns else math.nan


def _short(ranks: list[int]) -> str:
    return str(ranks) if len(ranks) <= 8 else f"[{', '.join(map(str, ranks[:8]))}, ...]"
