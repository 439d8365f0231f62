"""PyTorch Flight Recorder dumps: one rank's ring of recent collectives, parsed safely.

``torch.distributed`` writes a dump per rank when a collective times out (NCCL's watchdog)
or when asked (``torch._C._distributed_c10d._dump_fr_trace``): a pickle written by the C++
pickler (protocol 2, plain dicts, lists, tuples, strings and numbers) named
``<TORCH_FR_DUMP_TEMP_FILE><rank>`` (default ``nccl_trace_rank_<rank>``), or its JSON form
(``_dump_fr_trace_json``). It holds ``version``, ``pg_config`` (each process group's name,
description and ranks), ``pg_status`` (per group: the last collective enqueued, started and
completed) and ``entries``, each with ``pg_id``, ``process_group`` (name, description),
``collective_seq_id`` (``seq_id`` before torch 2.4), ``p2p_seq_id``, ``is_p2p``,
``profiling_name`` (``nccl:all_reduce``), input/output sizes and dtypes, ``state``
(``scheduled``, ``started``, ``completed``), times, ``timeout_ms`` and the Python ``frames``
of the call.

Pickles go through autopsy's restricted unpickler, never ``pickle.load``: a dump that names
any global (a real one names none) is refused as unsafe. Everything here is a parse; the
matching across ranks is in :mod:`autopsy.readers.flight_recorder`.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

#: The first bytes of the two forms.
PICKLE_HEAD = b"\x80\x02}"
JSON_KEYS = (b'"comm_lib_version"', b'"entries"', b'"pg_config"', b'"pg_status"', b'"version"')
#: The largest dump read (256 MiB: a ring of 20,000 entries with deep stacks is tens of MB).
MAX_DUMP_BYTES = 256 << 20
#: Dump versions written by the torch releases autopsy was checked against (2.2 to 2.13).
KNOWN_VERSIONS = frozenset({"1.0", "1.1", "1.5", "1.6", "2.0", "2.1", "2.2", "2.3", "2.4",
                            "2.5", "2.6", "2.7", "2.8", "2.9", "2.10"})
_RANK = re.compile(r"(?<!\d)(\d{1,9})(?:\.json|\.pkl|\.pickle)?$")


class DumpError(ValueError):
    """A dump that cannot be used (unsafe, truncated, not a dump)."""

    def __init__(self, what: str, kind: str) -> None:
        super().__init__(what)
        self.kind = kind


@dataclass(frozen=True)
class Entry:
    """One collective (or p2p op) in a rank's ring."""

    pg: str  # the process group's name ("0", or the name given at creation)
    pg_desc: str
    seq: int | None  # collective sequence number in its group (None: a p2p op)
    op: str  # "all_reduce", "broadcast", ... (profiling name without the backend)
    backend: str  # "nccl", "gloo", ...
    sizes: tuple[tuple[int, ...], ...]
    dtypes: tuple[str, ...]
    state: str
    created_ns: int | None
    timeout_ms: int | None
    frames: tuple[tuple[str, str, int], ...]  # (function, file, line), innermost first

    @property
    def numel(self) -> int:
        """Elements of the first input (0 when it has none)."""
        if not self.sizes:
            return 0
        n = 1
        for d in self.sizes[0]:
            n *= d
        return n

    def user_frame(self) -> tuple[str, str, int] | None:
        """The innermost frame outside torch itself: the training code's call site."""
        for func, file, line in self.frames:
            if "/torch/" not in file and "\\torch\\" not in file:
                return func, file, line
        return None


@dataclass
class Dump:
    """One rank's dump."""

    rank: int
    version: str
    groups: dict[str, tuple[int, ...]] = field(default_factory=dict)  # pg name -> ranks
    status: dict[str, dict[str, int]] = field(default_factory=dict)  # pg id -> last_*
    pg_ids: dict[str, str] = field(default_factory=dict)  # pg name -> pg id (for status)
    entries: list[Entry] = field(default_factory=list)
    form: str = "pickle"


def rank_of(name: str) -> int | None:
    """The rank a dump's file name ends with (torch appends it to the prefix)."""
    m = _RANK.search(name)
    return int(m.group(1)) if m else None


def looks_like_dump(head: bytes) -> str | None:
    """``"pickle"`` or ``"json"`` when the first bytes are a dump's, else None."""
    if head.startswith(PICKLE_HEAD) and b"version" in head[:32]:
        return "pickle"
    text = head.lstrip()
    if text.startswith(b'{"') and any(text[1:].startswith(k) for k in JSON_KEYS):
        return "json"
    return None


def read_dump(path: Path, rank: int, form: str) -> Dump:
    """Parse one dump. Raises :class:`DumpError`."""
    try:
        size = path.stat().st_size
    except OSError as exc:
        raise DumpError(f"cannot read: {exc.strerror}", "unreadable") from exc
    if size > MAX_DUMP_BYTES:
        raise DumpError(f"{size:,} bytes, over the {MAX_DUMP_BYTES >> 20} MiB a dump may be",
                        "too_large")
    if form == "json":
        try:
            doc = json.loads(path.read_bytes())
        except (OSError, ValueError, RecursionError) as exc:
            raise DumpError(f"not JSON ({exc})", "invalid_json") from exc
    else:
        doc = _unpickle(path)
    if not isinstance(doc, dict) or not isinstance(doc.get("entries", []), list):
        raise DumpError("not a Flight Recorder dump (no entries)", "not_a_dump")
    dump = Dump(rank=rank, version=str(doc.get("version", "")), form=form)
    for name, cfg in (doc.get("pg_config") or {}).items():
        ranks = cfg.get("ranks") if isinstance(cfg, dict) else None
        dump.groups[str(name)] = _ranks(ranks)
    for pg_id, st in (doc.get("pg_status") or {}).items():
        if isinstance(st, dict):
            dump.status[str(pg_id)] = {k: int(v) for k, v in st.items()
                                       if isinstance(v, int) and not isinstance(v, bool)}
    for raw in doc.get("entries") or []:
        entry = _entry(raw, dump)
        if entry is not None:
            dump.entries.append(entry)
    return dump


def _unpickle(path: Path) -> Any:
    from autopsy.formats.unpickle import scan
    from autopsy.formats.unpickle.errors import PickleTruncated, UnpickleError

    try:
        got = scan(path, max_bytes=MAX_DUMP_BYTES)
    except PickleTruncated as exc:
        raise DumpError("the pickle is cut short (a dump interrupted while written)",
                        "truncated") from exc
    except UnpickleError as exc:
        raise DumpError(f"not a readable pickle: {exc}", "corrupt_record") from exc
    if got.globals:
        names = ", ".join(got.globals[:3])
        raise DumpError(f"the pickle names globals ({names}); a Flight Recorder dump names "
                        "none: not read", "unsafe_pickle")
    return got.obj


def _ranks(value: Any) -> tuple[int, ...]:
    """``"[0, 1, 2]"`` (as torch writes it) or a list."""
    if isinstance(value, str):
        return tuple(int(x) for x in re.findall(r"\d{1,9}", value))
    if isinstance(value, (list, tuple)):
        return tuple(int(x) for x in value if isinstance(x, int) and 0 <= x < 1 << 31)
    return ()


def _int(value: Any) -> int | None:
    """An int of a dump's field, when it is one a real dump could hold (64-bit)."""
    if isinstance(value, int) and not isinstance(value, bool) and -(1 << 63) <= value < 1 << 63:
        return value
    return None


def _entry(raw: Any, dump: Dump) -> Entry | None:
    if not isinstance(raw, dict):
        return None
    group = raw.get("process_group") or ("", "")
    name = str(group[0]) if isinstance(group, (list, tuple)) and group else str(group)
    desc = str(group[1]) if isinstance(group, (list, tuple)) and len(group) > 1 else ""
    pg_id = raw.get("pg_id")
    if pg_id is not None:
        dump.pg_ids.setdefault(name, str(pg_id))
    p2p = bool(raw.get("is_p2p"))
    seq = _int(raw.get("collective_seq_id", raw.get("seq_id")))
    profiling = str(raw.get("profiling_name") or "")
    backend, _, op = profiling.partition(":")
    if not op:
        backend, op = "", profiling
    sizes = tuple(tuple(int(d) for d in s if isinstance(d, int)) for s in
                  raw.get("input_sizes") or [] if isinstance(s, (list, tuple)))
    dtypes = tuple(str(d) for d in raw.get("input_dtypes") or [])
    frames = tuple((str(f.get("name", "")), str(f.get("filename", "")), int(f.get("line") or 0))
                   for f in raw.get("frames") or [] if isinstance(f, dict))
    return Entry(pg=name, pg_desc=desc, seq=None if p2p else seq, op=op, backend=backend,
                 sizes=sizes, dtypes=dtypes, state=str(raw.get("state") or ""),
                 created_ns=_int(raw.get("time_created_ns")),
                 timeout_ms=_int(raw.get("timeout_ms")), frames=frames)
