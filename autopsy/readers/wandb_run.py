"""Weights & Biases run folders: the ``.wandb`` record log of an offline or synced run.

Every W&B run (``wandb/offline-run-<date>-<id>/`` or ``wandb/run-<date>-<id>/``) writes
``run-<id>.wandb``: LevelDB-framed protobuf ``Record`` messages
(:mod:`autopsy.formats.leveldblog`), read here with the wire-format reader, without
importing wandb (heavy, and its internal reader is not an API). From it:

* **history** rows (``wandb.log``) become scalars. The step is the row's
  ``train/global_step``, ``trainer/global_step`` or ``global_step`` (what the HF Trainer's and
  Lightning's loggers put in every row, and what their checkpoints count) when every row
  has one, else W&B's ``_step``; ``_timestamp`` is the wall time; other keys starting with
  ``_`` are W&B's own. A value is a number (``NaN`` and ``Infinity`` included); media,
  tables and histograms are skipped.
* **config** and the run record (``run_id``, ``project``, ``host``, the config logged at
  ``wandb.init``) become run config; keys of ``wandb-metadata.json`` (``gpu``,
  ``gpu_count``, ``host``, ``program``) too.
* a synced run's ``files/config.yaml`` and ``files/wandb-summary.json`` repeat what the
  record log holds; they are read only when the folder has no record log (a run's files
  downloaded from W&B): the config's scalar ``value:`` lines, and the summary's numbers as
  one point each at its ``_step``.
* the **exit** record gives an ``exit`` event with the run's exit code (W&B writes 1 when
  the script died of an exception); a run without one was killed or is still being
  written, which is a recorded problem; a **preempting** record is a ``signal`` event.
* **console** output recorded in the log goes through the text-log reader and its event
  vocabulary, unless the run folder has ``files/output.log`` (then that file is read as
  a log, and the records would repeat it).

A folder may hold several runs (a sweep, reruns): the run ``--run ID`` names (its id or a
unique prefix) is read, else the newest run (by its start time), and the others are named
in a problem; the files of one run id written by several
processes (``resume="allow"``) are its segments, in time order. W&B's own debug logs
(``debug.log``, ``debug-internal.log``, ``debug-core.log``) are claimed and not read.
"""

from __future__ import annotations

import json
import math
import os
import struct
import tempfile
from array import array
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from autopsy.formats.leveldblog import IDENT, LogDamage, NotALevelDBLog, records
from autopsy.formats.protowire import FIXED64, LEN, VARINT, WireError, fields, varint
from autopsy.model.config import ConfigValue
from autopsy.model.events import events_frame
from autopsy.model.problem import Problem
from autopsy.readers.base import RunPart, head
from autopsy.readers.csvtable import MAX_STEP
from autopsy.readers.registry import Format
from autopsy.readers.selection import wanted

NAME = "wandb"
FORMATS = (
    Format("wandb_run", "Weights & Biases run folders: the .wandb record log of an offline "
           "or synced run (history, config, console output, exit code)",
           ("scalars", "config", "events"), "wandb/offline-run-<date>-<id>/run-<id>.wandb"),
)

#: W&B's own logs, claimed so the text-log reader does not take their lines for training's.
DEBUG_LOGS = frozenset({"debug.log", "debug-internal.log", "debug-core.log"})
#: History keys that are the trainer's own step (HF Trainer, Lightning, many loops).
STEP_KEYS = ("train/global_step", "trainer/global_step", "global_step")
#: Keys of ``wandb-metadata.json`` kept as config.
METADATA_KEYS = ("host", "gpu", "gpu_count", "cuda", "python", "program", "os")
#: The longest JSON text read as a number (64 bytes: ``-1.2345678901234567e+308`` is 24;
#: a longer value is a string, a list or a media payload, never parsed).
MAX_NUMBER_JSON = 64
#: Records scanned at the start of a file for its run record before giving up (the writers
#: put it among the first few).
RUN_RECORD_SCAN = 64

# Record (wandb_internal.proto) fields read here
_HISTORY, _OUTPUT, _CONFIG, _OUTPUT_RAW, _RUN, _EXIT, _PREEMPTING = 2, 4, 5, 13, 17, 18, 23


def sniff(path: Path) -> bool:
    """A ``.wandb`` record log (by its header), one of W&B's own files in a ``wandb`` folder
    (its debug logs, ``wandb-metadata.json``), or a synced run's ``files/config.yaml`` and
    ``files/wandb-summary.json`` (by their first bytes)."""
    if path.suffix == ".wandb":
        return head(path, len(IDENT)) == IDENT
    if path.name in DEBUG_LOGS or path.name == "wandb-metadata.json":
        return "wandb" in path.parts[:-1]
    if path.name == "config.yaml":
        return head(path, 64).lstrip().startswith((b"_wandb:", b"wandb_version:"))
    if path.name == "wandb-summary.json":
        return head(path, 8).lstrip().startswith(b"{")
    return False


@dataclass
class _Header:
    """What identifies a record log: its run id and start time."""

    run_id: str = ""
    start: float = math.nan


@dataclass
class _History:
    """The points of one file, in compact columns, by history row."""

    rows_wandb: array = field(default_factory=lambda: array("q"))
    rows_own: array = field(default_factory=lambda: array("q"))  # -1: the row had none
    rows_wall: array = field(default_factory=lambda: array("d"))
    row: array = field(default_factory=lambda: array("q"))
    codes: array = field(default_factory=lambda: array("i"))
    values: array = field(default_factory=lambda: array("d"))
    names: list[str] = field(default_factory=list)
    code: dict[str, int] = field(default_factory=dict)
    decoded: dict[bytes, str] = field(default_factory=dict)  # item names, decoded once


def read(path: Path, rel: str) -> RunPart:
    """Read one file (:func:`read_group` with one file)."""
    return read_group([path], [rel])


def read_group(paths: list[Path], rels: list[str]) -> RunPart:
    """Read the newest run's record logs (segments in time order) and the metadata."""
    part = RunPart()
    logs: list[tuple[_Header, Path, str]] = []
    files: list[tuple[Path, str]] = []
    for path, rel in zip(paths, rels, strict=True):
        if path.suffix == ".wandb":
            logs.append((_header(path), path, rel))
        elif path.name == "wandb-metadata.json":
            part.config.extend(_metadata(path, rel, part.problems))
        elif path.name in ("config.yaml", "wandb-summary.json"):
            files.append((path, rel))
    if not logs:  # a synced run's files without its record log (downloaded from W&B)
        for path, rel in files:
            if path.name == "config.yaml":
                part.config.extend(_config_yaml(path, rel))
            else:
                part.scalars = _summary(path, rel, part.problems)
        return part
    runs: dict[str, list[tuple[_Header, Path, str]]] = {}
    for log in logs:
        runs.setdefault(log[0].run_id or log[2], []).append(log)

    def newest(run: list[tuple[_Header, Path, str]]) -> float:
        starts = [h.start for h, _, _ in run if math.isfinite(h.start)]
        return max(starts) if starts else max(_mtime(p) for _, p, _ in run)

    asked = wanted()
    if asked:
        hits = [k for k in runs if k == asked] or [k for k in runs if k.startswith(asked)]
        if len(hits) != 1:
            what = "no W&B run matches" if not hits else f"{len(hits)} W&B runs match"
            part.problems.append(Problem(logs[0][2], f"{what} --run {asked}: runs here are "
                                         + ", ".join(sorted(runs)[:8]), kind="run_not_found"))
            return part
        chosen_id = hits[0]
    else:
        chosen_id = max(runs, key=lambda k: newest(runs[k]))
    chosen = sorted(runs[chosen_id], key=lambda log: (
        log[0].start if math.isfinite(log[0].start) else _mtime(log[1]), log[2]))
    others = sorted(k for k in runs if k != chosen_id)
    if others:
        shown = ", ".join(others[:5]) + (f" and {len(others) - 5} more" if len(others) > 5
                                         else "")
        part.problems.append(Problem(
            chosen[0][2], f"{len(others)} other W&B run(s) in this folder ({shown}): the "
            f"newest, {chosen_id}, was read; give autopsy another run's folder to read it",
            used="the newest run", kind="other_runs", count=len(others)))
    frames, events = [], []
    for segment, (_, path, rel) in enumerate(chosen):
        scalars, evs = _read_log(path, rel, segment, part)
        if scalars is not None:
            frames.append(scalars)
        events.extend(evs)
    if frames:
        import pandas as pd

        part.scalars = pd.concat(frames, ignore_index=True) if len(frames) > 1 else frames[0]
    if events:
        part.events = events_frame(events)
    return part


def _mtime(path: Path) -> float:
    try:
        return path.stat().st_mtime
    except OSError:
        return 0.0


def _text(buf: bytes, a: int, b: int) -> str:
    return buf[a:b].decode("utf-8", errors="replace")


def _header(path: Path) -> _Header:
    """The run id and start time from the run record near the start of the file."""
    got = _Header()
    try:
        with open(path, "rb") as fh:
            for n, (_, payload) in enumerate(records(fh, LogDamage())):
                if n >= RUN_RECORD_SCAN:
                    break
                for num, _, a, b in fields(payload, 0, len(payload)):
                    if num == _RUN:
                        _run_fields(payload, a, b, got, [], "")
                        return got
    except (OSError, NotALevelDBLog, WireError):
        pass
    return got


def _run_fields(buf: bytes, a: int, b: int, got: _Header, config: list[ConfigValue],
                rel: str) -> None:
    """RunRecord: run_id (1), project (3), config (4), display_name (8), host (13),
    start_time (17)."""
    for num, wire, s, e in fields(buf, a, b):
        if wire != LEN:
            continue
        if num == 1:
            got.run_id = _text(buf, s, e)
            config.append(ConfigValue("wandb.run_id", got.run_id, rel))
        elif num in (3, 8, 13):
            key = {3: "wandb.project", 8: "wandb.name", 13: "host"}[num]
            config.append(ConfigValue(key, _text(buf, s, e), rel))
        elif num == 4:
            config.extend(_config_items(buf, s, e, rel))
        elif num == 17:  # google.protobuf.Timestamp: seconds (1), nanos (2)
            secs = nanos = 0
            for tn, tw, ts, _ in fields(buf, s, e):
                if tw == VARINT:
                    v = varint(buf, ts, e)[0]
                    secs, nanos = (v, nanos) if tn == 1 else (secs, v)
            got.start = secs + nanos / 1e9


def _config_items(buf: bytes, a: int, b: int, rel: str) -> list[ConfigValue]:
    """ConfigRecord: update (1) items of key (1) or nested_key (2) and value_json (16).
    A value is W&B's ``{"value": ...}`` wrapper in synced files and plain JSON offline."""
    out = []
    for num, wire, s, e in fields(buf, a, b):
        if num != 1 or wire != LEN:
            continue
        key, nested, raw = "", [], None
        for n, w, s2, e2 in fields(buf, s, e):
            if w != LEN:
                continue
            if n == 1:
                key = _text(buf, s2, e2)
            elif n == 2:
                nested.append(_text(buf, s2, e2))
            elif n == 16:
                raw = buf[s2:e2]
        name = key or ".".join(nested)
        if not name or name.startswith("_") or raw is None:
            continue
        try:
            value = json.loads(raw)
        except (ValueError, RecursionError):
            continue
        if isinstance(value, dict) and set(value) <= {"value", "desc"} and "value" in value:
            value = value["value"]
        if isinstance(value, dict):  # a nested config: one value per scalar leaf
            out.extend(ConfigValue(f"{name}.{k}", v, rel) for k, v in value.items()
                       if isinstance(v, (int, float, str, bool)) or v is None)
        else:
            out.append(ConfigValue(name, value, rel))
    return out


def _number(buf: bytes, s: int, e: int) -> float | None:
    """A JSON number (``NaN``, ``Infinity`` too), else None; long texts are not parsed."""
    if e - s > MAX_NUMBER_JSON:
        return None
    if buf[s:s + 1] in (b'"', b"{", b"[", b"t", b"f", b"n"):
        return None
    try:
        return float(buf[s:e])
    except ValueError:
        return None


def _fast_items(buf: bytes, a: int, b: int, names: dict[bytes, str]
                ) -> tuple[list[tuple[str, float | None]], int] | None:
    """The items of a HistoryRecord, and its step's ``num`` (-1: none), in the shape W&B
    writes them (each item and each of its fields under 128 bytes: one-byte lengths; a name
    and a ``value_json``, or a number), else None (the general parser then reads the
    record). Names are decoded once per file."""
    out: list[tuple[str, float | None]] = []
    step = -1
    pos = a
    while pos < b:
        tag = buf[pos]
        if pos + 1 >= b:
            return None
        if tag == 0x12 and buf[pos + 1] < 0x80:  # step (2): HistoryStep, num (1)
            ln = buf[pos + 1]
            if ln:
                if buf[pos + 2] != 0x08:
                    return None
                step = varint(buf, pos + 3, pos + 2 + ln)[0]
            pos += 2 + ln
            continue
        if tag == 0xC2 and buf[pos + 1] == 0x0C:  # _info (200): not used
            ln, start = varint(buf, pos + 2, b)
            pos = start + ln
            continue
        if tag != 0x0A or buf[pos + 1] >= 0x80:
            return None  # not an item with a one-byte length
        end = pos + 2 + buf[pos + 1]
        i, name, value = pos + 2, b"", None
        while i < end:
            tag = buf[i]
            if tag in (0x0A, 0x12) and i + 1 < end and buf[i + 1] < 0x80:  # key, nested_key
                ln = buf[i + 1]
                name = buf[i + 2:i + 2 + ln] if not name else name + b"." + buf[i + 2:i + 2 + ln]
                i += 2 + ln
            elif tag == 0x82 and i + 2 < end and buf[i + 1] == 0x01 and buf[i + 2] < 0x80:
                ln = buf[i + 2]  # value_json (16)
                value = _number(buf, i + 3, i + 3 + ln)
                i += 3 + ln
            elif tag == 0x31 and i + 9 <= end:  # number (6), a double
                value = struct.unpack_from("<d", buf, i + 1)[0]
                i += 9
            else:
                return None
        if i != end or end > b:
            return None
        text = names.get(name)
        if text is None:
            text = names[name] = name.decode("utf-8", errors="replace")
        out.append((text, value))
        pos = end
    return out, step


def _history(buf: bytes, a: int, b: int, hist: _History) -> None:
    """HistoryRecord: item (1) of key (1) / nested_key (2) and a value (number 6, integer 5,
    value_json 16); step (2) holds num (1)."""
    wandb_step = -1
    fast = _fast_items(buf, a, b, hist.decoded)
    if fast is not None:
        items, wandb_step = fast
        _add_row(hist, items, wandb_step)
        return
    items: list[tuple[str, float | None]] = []
    for num, wire, s, e in fields(buf, a, b):
        if num == 2 and wire == LEN:
            for n, w, s2, _ in fields(buf, s, e):
                if n == 1 and w == VARINT:
                    wandb_step = varint(buf, s2, e)[0]
            continue
        if num != 1 or wire != LEN:
            continue
        key, nested, value = "", [], None
        for n, w, s2, e2 in fields(buf, s, e):
            if n == 1 and w == LEN:
                key = _text(buf, s2, e2)
            elif n == 2 and w == LEN:
                nested.append(_text(buf, s2, e2))
            elif n == 6 and w == FIXED64:
                value = struct.unpack_from("<d", buf, s2)[0]
            elif n == 5 and w == VARINT:
                z = varint(buf, s2, e2)[0]
                value = float((z >> 1) ^ -(z & 1))
            elif n == 16 and w == LEN:
                value = _number(buf, s2, e2)  # None: a string, a bool, media, a table
        items.append((key or ".".join(nested), value))  # W&B shows a nested dict as a.b
    _add_row(hist, items, wandb_step)


def _add_row(hist: _History, items: list[tuple[str, float | None]], wandb_step: int) -> None:
    """One history row from its items: ``_step``, ``_timestamp`` and the trainer's step key
    set the row; the other keys not starting with ``_`` are its points."""
    own, wall = -1, math.nan
    points: list[tuple[str, float]] = []
    for name, value in items:
        if value is None or not name:
            continue
        if name == "_step":
            wandb_step = int(value) if abs(value) <= MAX_STEP else wandb_step  # (NaN: no)
        elif name == "_timestamp":
            wall = value
        elif name in STEP_KEYS:
            if abs(value) <= MAX_STEP and own < 0:
                own = int(value)
        elif not name.startswith("_"):
            points.append((name, value))
    if not points:
        return
    row = len(hist.rows_wandb)
    hist.rows_wandb.append(wandb_step if 0 <= wandb_step <= MAX_STEP else 0)
    hist.rows_own.append(own)
    hist.rows_wall.append(wall)
    for name, value in points:
        code = hist.code.get(name)
        if code is None:
            code = hist.code[name] = len(hist.names)
            hist.names.append(name)
        hist.row.append(row)
        hist.codes.append(code)
        hist.values.append(value)


def _read_log(path: Path, rel: str, segment: int, part: RunPart) -> tuple[Any, list[list[Any]]]:
    """One record log: its scalars frame (or None) and its event rows."""
    hist = _History()
    header = _Header()
    damage = LogDamage()
    events: list[list[Any]] = []
    exit_code: int | None = None
    console_file = (path.parent / "files" / "output.log")
    take_console = not console_file.exists()
    with tempfile.TemporaryDirectory(prefix="autopsy-wandb-") as tmp:
        console = Path(tmp) / "output.log"
        out = open(console, "wb") if take_console else None
        try:
            with open(path, "rb") as fh:
                for _, payload in records(fh, damage):
                    try:
                        for num, wire, a, b in fields(payload, 0, len(payload)):
                            if wire != LEN:
                                continue
                            if num == _HISTORY:
                                _history(payload, a, b, hist)
                            elif num == _CONFIG:
                                part.config.extend(_config_items(payload, a, b, rel))
                            elif num == _RUN:
                                _run_fields(payload, a, b, header, part.config, rel)
                            elif num in (_OUTPUT, _OUTPUT_RAW) and out is not None:
                                _console(payload, a, b, out, raw=num == _OUTPUT_RAW)
                            elif num == _EXIT:
                                exit_code = _exit_code(payload, a, b)
                            elif num == _PREEMPTING:
                                events.append(_event("signal", "the run was preempted (W&B "
                                                     "preempting record)", rel,
                                                     {"why": "preempted", "who": "wandb"}))
                    except WireError:
                        damage.bad_fragments += 1
        except NotALevelDBLog as exc:
            part.problems.append(Problem(rel, f"not a W&B record log: {exc}",
                                         kind="bad_header"))
            return None, []
        except OSError as exc:
            part.problems.append(Problem(rel, f"read stopped early: {exc.strerror or exc}",
                                         used="the records before it", kind="truncated"))
        finally:
            if out is not None:
                out.close()
        _damage_problems(rel, damage, part.problems)
        if out is not None and console.stat().st_size:
            _read_console(console, rel, segment, part, events)
    scalars = _frame(hist, rel, segment)
    last = _last_step(scalars)
    if exit_code is not None:
        from autopsy.readers.ranklogs.events import KILLED_CODES

        details = {"exitcode": exit_code, "who": "wandb"}
        events.append(_event("exit", f"the W&B run ended with exit code {exit_code}", rel,
                             details, last))
        if exit_code in KILLED_CODES:
            events.append(_event("host_kill", f"exit code {exit_code}", rel,
                                 dict(details, why=f"exit code {exit_code}"), last))
    elif damage.truncated_at is None:
        part.problems.append(Problem(
            rel, "no exit record: the run was killed (no chance to write it) or was still "
            "running when the folder was copied", used="everything before", kind="no_exit"))
    return scalars, events


def _damage_problems(rel: str, damage: LogDamage, problems: list[Problem]) -> None:
    if damage.version not in (0, 1):
        problems.append(Problem(rel, f"W&B log version {damage.version}, not one autopsy "
                                "knows (0): read as version 0", kind="unknown_version"))
    if damage.truncated_at is not None:
        problems.append(Problem(
            rel, f"the file ends inside a record at byte {damage.truncated_at:,} (a killed "
            "run, or a copy made while it was written)", used="every record before it",
            kind="truncated"))
    if damage.bad_checksums:
        problems.append(Problem(
            rel, f"{damage.bad_checksums:,} record(s) fail their checksum: the rest of each "
            "32 KiB block was skipped", used="the other blocks", kind="corrupt_record",
            count=damage.bad_checksums))
    if damage.bad_fragments:
        problems.append(Problem(
            rel, f"{damage.bad_fragments:,} record(s) broken (fragments out of order or "
            "undecodable)", used="the other records", kind="corrupt_record",
            count=damage.bad_fragments))
    for at, size in damage.oversized[:3]:
        problems.append(Problem(
            rel, f"a record of {size:,} bytes at byte {at:,} is larger than autopsy reads "
            "(a media or table payload): stepped over", used="the other records",
            kind="record_too_large"))


def _exit_code(buf: bytes, a: int, b: int) -> int:
    """RunExitRecord: exit_code (1, int32)."""
    for num, wire, s, e in fields(buf, a, b):
        if num == 1 and wire == VARINT:
            v = varint(buf, s, e)[0] & 0xFFFFFFFF
            return v - (1 << 32) if v >= 1 << 31 else v
    return 0


def _console(buf: bytes, a: int, b: int, out: Any, *, raw: bool) -> None:
    """OutputRecord / OutputRawRecord: line (3); a raw record is a chunk of the terminal."""
    for num, wire, s, e in fields(buf, a, b):
        if num == 3 and wire == LEN:
            chunk = buf[s:e]
            out.write(chunk)
            if not raw and not chunk.endswith(b"\n"):
                out.write(b"\n")


def _read_console(console: Path, rel: str, segment: int, part: RunPart,
                  events: list[list[Any]]) -> None:
    """The console output through the text-log reader: its events (and problems)."""
    from autopsy.readers import ranklogs

    got = ranklogs.read(console, rel)
    part.problems.extend(p for p in got.problems if p.kind != "nothing_recognised")
    if got.events is not None and len(got.events):
        for row in got.events.itertuples(index=False):
            events.append([row.rank, row.wall_time, row.step, row.kind, row.message, rel,
                           row.line, row.details])


def _event(kind: str, message: str, rel: str, details: dict[str, Any],
           step: int | None = None) -> list[Any]:
    return [None, math.nan, step, kind, message, rel, None, details]


def _frame(hist: _History, rel: str, segment: int) -> Any:
    """The scalars of one file; its steps are the trainer's own when every row had one."""
    if not hist.values:
        return None
    import numpy as np
    import pandas as pd

    from autopsy.model.scalars import make_scalars

    own = np.frombuffer(hist.rows_own, dtype=np.int64)
    steps_by_row = own if (own >= 0).all() else np.frombuffer(hist.rows_wandb, dtype=np.int64)
    rows = np.frombuffer(hist.row, dtype=np.int64)
    tags = pd.Categorical.from_codes(np.frombuffer(hist.codes, dtype=np.intc).copy(),
                                     categories=hist.names)
    walls = np.frombuffer(hist.rows_wall, dtype=np.float64)[rows]
    return make_scalars(steps_by_row[rows], tags, np.frombuffer(hist.values, dtype=np.float64),
                        wall_time=walls, segment=segment, source=rel)


def _last_step(scalars: Any) -> int | None:
    if scalars is None or not len(scalars):
        return None
    return int(scalars["step"].max())


def _metadata(path: Path, rel: str, problems: list[Problem]) -> list[ConfigValue]:
    """``wandb-metadata.json``: the host, GPUs, program (small: read whole, capped)."""
    try:
        if os.path.getsize(path) > 1 << 20:
            return []
        doc = json.loads(path.read_bytes())
    except (OSError, ValueError, RecursionError):
        problems.append(Problem(rel, "wandb-metadata.json is not JSON", kind="invalid_json"))
        return []
    if not isinstance(doc, dict):
        return []
    return [ConfigValue(k, doc[k], rel) for k in METADATA_KEYS
            if isinstance(doc.get(k), (str, int, float))]


#: The largest ``config.yaml`` / ``wandb-summary.json`` read (a run's config and last values
#: are kilobytes; a larger file is not one W&B wrote for them).
MAX_FILE_BYTES = 4 << 20


def _config_yaml(path: Path, rel: str) -> list[ConfigValue]:
    """A synced run's ``files/config.yaml``: each top-level key's ``value:`` when it is a
    scalar on its own line (read line by line; nothing is constructed)."""
    try:
        text = path.read_bytes()[:MAX_FILE_BYTES].decode("utf-8", errors="replace")
    except OSError:
        return []
    out: list[ConfigValue] = []
    key: str | None = None
    for line in text.splitlines():
        if line and not line[0].isspace():
            name, colon, rest = line.partition(":")
            key = name.strip() if colon and not rest.strip() else None
            if key is not None and (key.startswith("_") or key == "wandb_version"):
                key = None
            continue
        stripped = line.strip()
        if key is not None and stripped.startswith("value:"):
            raw = stripped[len("value:"):].strip()
            if raw:
                out.append(ConfigValue(key, _yaml_scalar(raw), rel))
            key = None
    return out


def _yaml_scalar(raw: str) -> Any:
    """A plain YAML scalar as the value it reads as (number, bool, null, else the text)."""
    if len(raw) >= 2 and raw[0] == raw[-1] and raw[0] in "'\"":
        return raw[1:-1]
    low = raw.lower()
    if low in ("true", "false"):
        return low == "true"
    if low in ("null", "~"):
        return None
    try:
        return int(raw)
    except ValueError:
        pass
    try:
        return float(raw)
    except ValueError:
        return raw


def _summary(path: Path, rel: str, problems: list[Problem]) -> Any:
    """A synced run's ``files/wandb-summary.json``: its numbers, at its ``_step``."""
    try:
        if os.path.getsize(path) > MAX_FILE_BYTES:
            problems.append(Problem(rel, "larger than a W&B summary is", kind="too_large"))
            return None
        doc = json.loads(path.read_bytes())
    except (OSError, ValueError, RecursionError):
        problems.append(Problem(rel, "wandb-summary.json is not JSON", kind="invalid_json"))
        return None
    if not isinstance(doc, dict):
        return None
    step = doc.get("_step")
    step = int(step) if isinstance(step, (int, float)) and math.isfinite(step) else 0
    wall = doc.get("_timestamp")
    items = [(k, float(v)) for k, v in doc.items() if not k.startswith("_")
             and k not in STEP_KEYS and isinstance(v, (int, float)) and not isinstance(v, bool)]
    if not items:
        return None
    from autopsy.model.scalars import make_scalars

    return make_scalars([step] * len(items), [k for k, _ in items], [v for _, v in items],
                        wall_time=[float(wall) if isinstance(wall, (int, float)) else math.nan]
                        * len(items), source=rel)
