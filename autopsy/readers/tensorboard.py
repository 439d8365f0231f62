"""TensorBoard event files: every scalar, restarts kept as segments.

Discovery calls :func:`read_group` with all event files under one run root.
Files are grouped into *streams*: the files of one directory are one stream, and
directories whose tag sets overlap and whose wall-time ranges do not (one starts
after the other ended, as Hugging Face Trainer's new ``runs/<date>_<host>/`` per
relaunch) are chained into one stream, ordered by first wall time. Directories
written at the same time (Keras ``train/`` and ``validation/``) stay separate.

Within a stream, files are ordered by first wall time then name, and a new
*segment* starts wherever, for some tag, the step goes back: below the last step
of that tag in the current segment inside one file, or to at most it at the start
of a new file (a relaunch may repeat the last logged step). Segments count from 0
per stream; nothing before a restart is dropped.

Configuration: hparams ``session_start_info`` values, and text summaries under
:data:`TEXT_CONFIG_MAX` bytes (key = the tag as written); a text that is a JSON
object also gives one value per top-level scalar key (Hugging Face Trainer logs its
arguments that way). Bad content becomes a :class:`Problem`, never an exception.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from autopsy.formats.event_scalars import EventScalars, read_event_scalars
from autopsy.formats.tfrecord import MAX_RECORD, looks_like_event_file
from autopsy.model.config import ConfigValue
from autopsy.model.problem import Problem
from autopsy.readers.base import RunPart, head
from autopsy.readers.progress import report
from autopsy.readers.registry import Format

if TYPE_CHECKING:  # pragma: no cover
    import numpy as np

NAME = "tensorboard"
FORMATS = (
    Format("tensorboard", "TensorBoard event files (every scalar, restarts as segments)",
           ("scalars", "config"), "runs/<date>/events.out.tfevents.*"),
)

#: Largest text summary (bytes) kept as a configuration value.
TEXT_CONFIG_MAX = 4096
#: Largest text summary (bytes) parsed as a JSON object of configuration values.
TEXT_JSON_MAX = 1 << 20


def sniff(path: Path) -> bool:
    """Whether ``path`` is a TensorBoard event file (by name, else by its first record)."""
    if "tfevents" in path.name:
        return True
    return looks_like_event_file(head(path))


def read(path: Path, rel: str) -> RunPart:
    """Read one event file; every row gets ``source = rel``."""
    return read_group([path], [rel])


@dataclass
class _File:
    """One event file's scalars and where it sits."""

    path: Path
    rel: str
    data: EventScalars
    first_wall: float = math.inf
    last_wall: float = -math.inf
    tags: set[str] = field(default_factory=set)


def _problems(rel: str, size: int, d: EventScalars) -> list[Problem]:
    """Translate framing and decoding trouble into problems."""
    fr = d.framing
    out: list[Problem] = []
    if size == 0:
        return [Problem(rel, "empty event file", kind="empty")]
    if fr.records == 0 or (d.events == 0 and d.bad_events):
        what = "not a TensorBoard event file (no valid TFRecord Event found)"
        return [Problem(rel, what, kind="not_an_event_file")]
    used = f"{len(d):,} scalars from {d.events:,} events"
    corrupt = fr.bad_data_crc + fr.bad_length_crc
    if corrupt:
        what = f"{corrupt:,} corrupt record(s) skipped (CRC mismatch)"
        if fr.bad_length_crc:
            what += f"; {fr.skipped_bytes:,} bytes skipped to resynchronise"
        out.append(Problem(rel, what, used, kind="corrupt_record", count=corrupt))
    if d.bad_events:
        what = f"{d.bad_events:,} record(s) are not TensorBoard Events (skipped)"
        out.append(Problem(rel, what, used, kind="bad_record", count=d.bad_events))
    if d.oversized_count:
        first = "; ".join(f"{what} at byte {offset:,} ({length:,} bytes)"
                          for offset, length, what in d.oversized[:3])
        what = (f"{d.oversized_count:,} record(s) longer than {MAX_RECORD:,} bytes, more than "
                f"any real writer puts in what autopsy reads, skipped unread: {first}")
        out.append(Problem(rel, what, used, kind="record_too_large", count=d.oversized_count))
    if fr.truncated_at is not None:
        what = (f"truncated last record at byte {fr.truncated_at:,} "
                f"({fr.truncated_bytes:,} bytes; the writer probably died)")
        out.append(Problem(rel, what, f"{fr.records:,} complete records before it",
                           kind="truncated"))
    return out


def _config(rel: str, d: EventScalars) -> list[ConfigValue]:
    out = [ConfigValue(k, v, rel) for k, v in d.hparams]
    for tag, text in d.texts:
        size = len(text.encode("utf-8", "replace"))
        if size < TEXT_CONFIG_MAX:
            out.append(ConfigValue(tag, text, rel))
        if size < TEXT_JSON_MAX and text.lstrip().startswith("{"):
            try:
                obj = json.loads(text)
            except ValueError:
                continue
            if isinstance(obj, dict):
                out.extend(
                    ConfigValue(str(k), v, rel)
                    for k, v in obj.items()
                    if v is None or isinstance(v, (str, int, float, bool))
                )
    return out


def _drop_non_scalar_tags(d: EventScalars) -> None:
    """Drop rows of tags whose summary metadata names a plugin other than scalars."""
    import numpy as np

    bad = [i for i, t in enumerate(d.tags) if d.plugins.get(t, "scalars") != "scalars"]
    if not bad or not len(d):
        return
    keep = ~np.isin(d.tag_code, np.array(bad, dtype=d.tag_code.dtype))
    d.step, d.value, d.wall_time = d.step[keep], d.value[keep], d.wall_time[keep]
    d.tag_code = d.tag_code[keep]


def _load(path: Path, rel: str, part: RunPart) -> _File | None:
    try:
        size = path.stat().st_size
        data = read_event_scalars(path)
    except OSError as exc:
        part.problems.append(Problem(rel, f"cannot read: {exc.strerror or exc}", kind="unreadable"))
        return None
    part.problems.extend(_problems(rel, size, data))
    part.config.extend(_config(rel, data))
    _drop_non_scalar_tags(data)
    f = _File(path, rel, data)
    if len(data):
        import numpy as np

        with np.errstate(invalid="ignore"):
            first, last = np.fmin.reduce(data.wall_time), np.fmax.reduce(data.wall_time)
        if math.isfinite(first):
            f.first_wall, f.last_wall = float(first), float(last)
        used = np.bincount(data.tag_code, minlength=len(data.tags))
        f.tags = {t for t, k in zip(data.tags, used.tolist(), strict=True) if k}
    return f


def _streams(files: list[_File]) -> list[list[_File]]:
    """Group files into streams (see the module docstring), each in reading order."""
    by_dir: dict[Path, list[_File]] = {}
    for f in files:
        by_dir.setdefault(f.path.parent, []).append(f)
    dirs = []
    for d, fs in by_dir.items():
        fs.sort(key=lambda f: (f.first_wall, f.path.name))
        start = min(f.first_wall for f in fs)
        end = max(f.last_wall for f in fs)
        tags = set().union(*(f.tags for f in fs))
        dirs.append((start, str(d), end, tags, fs))
    dirs.sort(key=lambda x: (x[0], x[1]))
    streams: list[dict[str, Any]] = []
    for start, _, end, tags, fs in dirs:
        target = None
        for s in streams:
            if s["tags"] & tags and s["end"] < start and (
                target is None or s["end"] > target["end"]
            ):
                target = s
        if target is None:
            streams.append({"tags": set(tags), "end": end, "files": list(fs)})
        else:
            target["tags"] |= tags
            target["end"] = max(target["end"], end)
            target["files"].extend(fs)
    return [s["files"] for s in streams]


def _segments(step: np.ndarray, code: np.ndarray, file_no: np.ndarray | None) -> np.ndarray | int:
    """Segment number per row of one stream (0 when there is no restart)."""
    import numpy as np

    n = len(step)
    if n < 2:
        return 0
    key = code.astype(np.int16) if int(code.max(initial=0)) < 32767 else code
    order = np.argsort(key, kind="stable")
    s = step[order]
    same = key[order]
    same = same[1:] == same[:-1]
    back = s[1:] < s[:-1]
    if file_no is not None:
        fo = file_no[order]
        back |= (s[1:] == s[:-1]) & (fo[1:] != fo[:-1])
    flag = same & back
    del s, same, back
    if not flag.any():
        return 0
    cur = order[1:][flag]
    prev = order[:-1][flag]
    by_cur = np.argsort(cur, kind="stable")
    starts = []
    seg_start = 0
    for i, p in zip(cur[by_cur].tolist(), prev[by_cur].tolist(), strict=True):
        if p >= seg_start:
            starts.append(i)
            seg_start = i
    if not starts:
        return 0
    marks = np.zeros(n, dtype=np.int64)
    marks[np.array(starts)] = 1
    return np.cumsum(marks)


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


def read_group(paths: list[Path], rels: list[str]) -> RunPart:
    """Read all event files of one run root into one :class:`RunPart`.

    ``rels[i]`` is the path of ``paths[i]`` relative to the run root (the rows'
    ``source``). See the module docstring for streams, segments and config.
    """
    import numpy as np
    import pandas as pd

    from autopsy.model.scalars import concat_scalars, make_scalars

    if len(paths) != len(rels):
        raise ValueError("paths and rels must have the same length")
    part = RunPart()
    sizes = [_size(Path(p)) for p in paths]
    total, done = sum(sizes), 0
    files = []
    for p, r, size in zip(paths, rels, sizes, strict=True):
        loaded = _load(Path(p), r, part)
        done += size
        report("reading event files", done, total)
        if loaded:
            files.append(loaded)
    all_tags: dict[str, int] = {}
    for f in files:
        for t in f.data.tags:
            all_tags.setdefault(t, len(all_tags))
    categories = list(all_tags)
    file_index: dict[str, int] = {}
    for f in files:
        file_index.setdefault(f.rel, len(file_index))
    rels_cat = list(file_index)
    frames = []
    for stream in _streams(files):
        parts = [f for f in stream if len(f.data)]
        if not parts:
            continue
        steps, values, walls, codes, fnos = [], [], [], [], []
        for f in parts:
            d = f.data
            remap = np.array([all_tags[t] for t in d.tags], dtype=np.int32)
            same = bool(np.array_equal(remap, np.arange(len(remap))))
            steps.append(d.step)
            values.append(d.value)
            walls.append(d.wall_time)
            codes.append(d.tag_code if same else remap[d.tag_code])
            fnos.append(file_index[f.rel])
        one = len(parts) == 1
        step = steps[0] if one else np.concatenate(steps)
        code = codes[0] if one else np.concatenate(codes)
        file_no = None if one else np.repeat(
            np.array(fnos, dtype=np.int32), [len(s) for s in steps]
        )
        segment = _segments(step, code, file_no)
        source: Any = (
            parts[0].rel if one
            else pd.Categorical.from_codes(file_no, categories=rels_cat)
        )
        frames.append(make_scalars(
            step,
            pd.Categorical.from_codes(code, categories=categories),
            values[0] if one else np.concatenate(values),
            wall_time=walls[0] if one else np.concatenate(walls),
            rank=None,
            segment=segment,
            source=source,
        ))
    part.scalars = concat_scalars(frames)
    return part

