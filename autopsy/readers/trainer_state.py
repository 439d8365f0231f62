"""Hugging Face Trainer ``trainer_state.json``: the log history as scalars, the rest as config.

Every train and eval entry of ``log_history`` becomes scalar points: one per key
other than ``step`` (``raw_tag`` is the key as written: ``loss``, ``grad_norm``,
``learning_rate``, ``epoch``, ``eval_loss``, ``eval_runtime`` ...; ``step`` the
entry's step; no wall time, no rank). The final summary entry (the one with
``train_runtime``) goes to config instead (``train_loss`` as
``train_loss_mean``), as do the top-level ``global_step``, ``max_steps``,
``logging_steps``, ``eval_steps``, ``save_steps``, ``train_batch_size``,
``num_train_epochs``, ``best_metric``, ``best_model_checkpoint`` and
``best_global_step``.

Several copies (the root file and every ``checkpoint-N/`` one) are merged by
:func:`read_group`:

* copies are ranked by completeness: highest ``global_step`` first (the largest
  logged step stands in when it is missing), then the shallower path (the root
  file), then the longer history;
* a point ``(step, raw_tag, value)`` (NaN equal to NaN) found in several copies is
  kept once, attributed to the best-ranked copy holding it;
* when copies disagree on the value for the same ``(step, raw_tag)`` (a resume
  that re-did steps differently), every distinct value is kept: the best-ranked
  copy's points are segment 0, and the next copy in rank order that brings a
  differing value for that ``(step, raw_tag)`` gets segment 1, the next 2, and so
  on. The files do not record which attempt came first, so segment numbers here
  order histories by completeness, not by time.

Values may be ``NaN``/``Infinity``/``-Infinity`` literals or numeric strings
(``"nan"``, ``"inf"``, ``"0.5"``): all become floats. Other strings, lists and
objects are skipped and counted in one problem per file; ``null`` is skipped
silently. A file that is not valid JSON (torn by a crash, say) is a problem
(``invalid_json``), and what comes before the damage is still used: every
complete ``log_history`` entry and every top-level field that parsed. Parsing is
linear in the file size.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from autopsy.model.config import ConfigValue
from autopsy.model.problem import Problem
from autopsy.model.scalars import empty_scalars, make_scalars
from autopsy.readers.base import RunPart
from autopsy.readers.registry import Format

NAME = "trainer_state"
FORMATS = (
    Format("hf_trainer_state", "HF Trainer trainer_state.json (root and every checkpoint-N/)",
           ("scalars", "config"), "trainer_state.json, checkpoint-500/trainer_state.json"),
)
FILE_NAME = "trainer_state.json"

#: Top-level fields copied to config, in this order.
CONFIG_FIELDS: tuple[str, ...] = (
    "global_step", "max_steps", "logging_steps", "eval_steps", "save_steps",
    "train_batch_size", "num_train_epochs", "best_metric", "best_model_checkpoint",
    "best_global_step",
)
#: A larger step is no step (the 64-bit step column could not hold it).
MAX_STEP = 2**62
#: The key that marks the end-of-training summary entry of ``log_history``.
SUMMARY_MARKER = "train_runtime"
#: Summary keys renamed on their way to config.
SUMMARY_RENAMES: dict[str, str] = {"train_loss": "train_loss_mean"}
#: Summary keys not copied to config (they describe the entry, not the run).
SUMMARY_SKIPPED: frozenset[str] = frozenset({"step", "epoch"})


def sniff(path: Path) -> bool:
    """Whether ``path`` is a ``trainer_state.json``."""
    return path.name == FILE_NAME


def read(path: Path, rel: str) -> RunPart:
    """Read one ``trainer_state.json`` (see the module docstring)."""
    return read_group([path], [rel])


# --------------------------------------------------------------------------- one file


@dataclass
class _Copy:
    """What one file gave: its fields, its points and its problems."""

    rel: str
    fields: dict[str, Any] = field(default_factory=dict)
    steps: list[int] = field(default_factory=list)
    tags: list[str] = field(default_factory=list)
    values: list[float] = field(default_factory=list)
    summary: dict[str, Any] | None = None
    problems: list[Problem] = field(default_factory=list)

    def rank(self) -> tuple[float, int, int, str]:
        """Sort key: most complete first (see the module docstring)."""
        step = self.fields.get("global_step")
        if not isinstance(step, (int, float)) or isinstance(step, bool):
            step = max(self.steps, default=-1)
        return (-float(step), self.rel.count("/"), -len(self.steps), self.rel)


_WS = re.compile(r"[ \t\n\r]*")


def _salvage(text: str) -> dict[str, Any]:
    """Parse the top-level object of a damaged file as far as it goes.

    Returns the fields that parsed completely; ``log_history`` holds every
    complete entry before the damage, even when the array itself is cut.
    """
    decoder = json.JSONDecoder()
    fields: dict[str, Any] = {}
    pos = _WS.match(text, 0).end()
    if not text.startswith("{", pos):
        return fields
    pos += 1
    try:
        while True:
            pos = _WS.match(text, pos).end()
            if text.startswith("}", pos):
                return fields
            key, pos = decoder.raw_decode(text, pos)
            pos = _WS.match(text, pos).end()
            if not isinstance(key, str) or not text.startswith(":", pos):
                return fields
            pos = _WS.match(text, pos + 1).end()
            if key == "log_history" and text.startswith("[", pos):
                entries: list[Any] = []
                fields[key] = entries
                pos = _array_items(decoder, text, pos + 1, entries)
            else:
                fields[key], pos = decoder.raw_decode(text, pos)
            pos = _WS.match(text, pos).end()
            if text.startswith(",", pos):
                pos += 1
            elif text.startswith("}", pos):
                return fields
            else:
                return fields
    except (ValueError, IndexError, RecursionError):
        return fields


def _array_items(decoder: json.JSONDecoder, text: str, pos: int, out: list[Any]) -> int:
    """Append the array's items to ``out`` one by one; return the offset after ``]``.

    Raises ``ValueError`` where an item does not parse (``out`` keeps the rest).
    """
    pos = _WS.match(text, pos).end()
    if text.startswith("]", pos):
        return pos + 1
    while True:
        item, pos = decoder.raw_decode(text, pos)
        out.append(item)
        pos = _WS.match(text, pos).end()
        if text.startswith(",", pos):
            pos = _WS.match(text, pos + 1).end()
        elif text.startswith("]", pos):
            return pos + 1
        else:
            raise ValueError(f"expected ',' or ']' at offset {pos}")


def _load(path: Path, copy: _Copy) -> dict[str, Any] | None:
    """Parse the file into ``copy.fields``'s source dict, salvaging damage."""
    try:
        raw = path.read_bytes()
    except OSError as exc:
        copy.problems.append(Problem(copy.rel, f"cannot read: {exc.strerror}", kind="unreadable"))
        return None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        text = raw.decode("utf-8", errors="replace")
        copy.problems.append(Problem(copy.rel, f"bytes that are not UTF-8 at offset {exc.start}",
                                     used="read with replacement characters",
                                     kind="invalid_utf8"))
    if not text.strip():
        copy.problems.append(Problem(copy.rel, "empty file", kind="invalid_json"))
        return None
    try:
        data = json.loads(text)
    except RecursionError:
        copy.problems.append(Problem(copy.rel, "invalid JSON: nested too deeply to parse",
                                     kind="invalid_json"))
        return None
    except json.JSONDecodeError as exc:
        data = _salvage(text)
        history = data.get("log_history")
        n_entries = len(history) if isinstance(history, list) else 0
        truncated = exc.pos >= len(text.rstrip()) or exc.msg.startswith("Unterminated")
        where = ("the file ends before the JSON does (truncated)" if truncated
                 else f"{exc.msg} at line {exc.lineno}, column {exc.colno}")
        n_fields = len(data) - ("log_history" in data)
        copy.problems.append(Problem(
            copy.rel, f"invalid JSON: {where}",
            used=f"{n_entries:,} complete log_history entries and {n_fields} other "
                 f"top-level fields before offset {exc.pos:,}",
            kind="invalid_json"))
        return data
    if not isinstance(data, dict):
        copy.problems.append(Problem(copy.rel, f"top level is a {type(data).__name__}, "
                                     "not an object", kind="invalid_json"))
        return None
    return data


def _number(value: Any) -> float | None:
    """A log value as a float; None for null; raises ValueError if not numeric."""
    if value is None:
        return None
    if isinstance(value, (bool, int, float)):
        return float(value)
    if isinstance(value, str):
        return float(value.strip())  # "nan", "inf", "-Infinity", "0.5"
    raise ValueError


def _read_copy(path: Path, rel: str) -> _Copy:
    """Read one file into a :class:`_Copy`."""
    copy = _Copy(rel)
    data = _load(path, copy)
    if data is None:
        return copy
    return copy_from(data, copy)


def copy_from(data: dict[str, Any], copy: _Copy) -> _Copy:
    """Fill ``copy`` from a parsed trainer state (its ``log_history`` and other fields)."""
    rel = copy.rel
    history = data.pop("log_history", [])
    copy.fields = data
    if not isinstance(history, list):
        copy.problems.append(Problem(rel, "log_history is not a list", kind="invalid_json"))
        return copy
    bad: list[tuple[int, str, Any]] = []
    no_step = 0
    for entry in history:
        step = entry.get("step") if isinstance(entry, dict) else None
        if isinstance(step, float) and step.is_integer():
            step = int(step)
        if not isinstance(step, int) or isinstance(step, bool) or abs(step) > MAX_STEP:
            no_step += 1  # a step past 2**62 would not fit the step column
            continue
        if SUMMARY_MARKER in entry:
            copy.summary = entry
            continue
        for key, raw in entry.items():
            if type(raw) is float and key != "step":  # the usual case, first
                copy.steps.append(step)
                copy.tags.append(key)
                copy.values.append(raw)
                continue
            if key == "step":
                continue
            try:
                value = _number(raw)
            except (ValueError, OverflowError):
                bad.append((step, key, raw))
                continue
            if value is not None:
                copy.steps.append(step)
                copy.tags.append(key)
                copy.values.append(value)
    if bad:
        step, key, raw = bad[0]
        copy.problems.append(Problem(
            rel, f"{len(bad):,} non-numeric log values skipped (first: {key}={raw!r:.60} "
            f"at step {step})", used="the numeric values", kind="non_numeric", count=len(bad)))
    if no_step:
        copy.problems.append(Problem(
            rel, f"{no_step:,} log_history entries without an integer step skipped",
            used="the other entries", kind="malformed_entry", count=no_step))
    return copy


# --------------------------------------------------------------------------- merging


_Triple = tuple[int, str, float | None]


def _merge(copies: list[_Copy]) -> tuple[list[int], list[str], list[float], list[int], list[str]]:
    """Deduplicate the copies' points (see the module docstring); return columns.

    Linear: a copy whose points were all seen before costs one ``Counter`` over
    its points and no per-point work in Python beyond that.
    """
    if len(copies) == 1:
        only = copies[0]
        n = len(only.steps)
        return only.steps, only.tags, only.values, [0] * n, [only.rel] * n
    steps: list[int] = []
    tags: list[str] = []
    values: list[float] = []
    segments: list[int] = []
    sources: list[str] = []
    best: dict[_Triple, int] = {}  # highest multiplicity of a point in any earlier copy
    contributors: dict[tuple[int, str], int] = {}  # copies that brought points per key
    for copy in copies:
        triples: list[_Triple] = [
            (s, t, None if v != v else v)
            for s, t, v in zip(copy.steps, copy.tags, copy.values, strict=True)
        ]
        here = Counter(triples)
        if not best:  # the most complete copy: everything is new, segment 0
            steps += copy.steps
            tags += copy.tags
            values += copy.values
            segments += [0] * len(triples)
            sources += [copy.rel] * len(triples)
            best = dict(here)
            contributors = dict.fromkeys(zip(copy.steps, copy.tags, strict=True), 1)
            continue
        fresh = {(s, t) for (s, t, v), n in here.items() if n > best.get((s, t, v), 0)}
        if fresh:
            _keep_fresh(copy, triples, fresh, best, contributors,
                        (steps, tags, values, segments, sources))
        for triple, n in here.items():
            if n > best.get(triple, 0):
                best[triple] = n
    return steps, tags, values, segments, sources


def _keep_fresh(
    copy: _Copy,
    triples: list[_Triple],
    fresh: set[tuple[int, str]],
    best: dict[_Triple, int],
    contributors: dict[tuple[int, str], int],
    out: tuple[list[int], list[str], list[float], list[int], list[str]],
) -> None:
    """Append the points of ``copy`` not already kept; number their segments."""
    steps, tags, values, segments, sources = out
    segment_of: dict[tuple[int, str], int] = {}
    for key in fresh:
        segment_of[key] = contributors.get(key, 0)
        contributors[key] = segment_of[key] + 1
    used: Counter[_Triple] = Counter()
    for i, triple in enumerate(triples):
        key = (triple[0], triple[1])
        if key not in fresh:
            continue
        if used[triple] < best.get(triple, 0):
            used[triple] += 1
            continue  # the same point, already kept from a more complete copy
        steps.append(copy.steps[i])
        tags.append(copy.tags[i])
        values.append(copy.values[i])
        segments.append(segment_of[key])
        sources.append(copy.rel)


def _config(copies: list[_Copy]) -> list[ConfigValue]:
    """Config from the most complete copy that has each field, and its summary entry."""
    out: list[ConfigValue] = []
    for key in CONFIG_FIELDS:
        for copy in copies:
            value = copy.fields.get(key)
            if value is not None and not isinstance(value, (dict, list)):
                out.append(ConfigValue(key, value, copy.rel))
                break
    for copy in copies:
        if copy.summary is not None:
            for key, raw in copy.summary.items():
                if key in SUMMARY_SKIPPED:
                    continue
                try:
                    value: Any = _number(raw)
                except (ValueError, OverflowError):
                    value = raw
                if value is not None:
                    out.append(ConfigValue(SUMMARY_RENAMES.get(key, key), value, copy.rel))
            break
    return out


def read_group(paths: list[Path], rels: list[str]) -> RunPart:
    """Read every ``trainer_state.json`` of one run and merge them without duplicates.

    ``paths`` and ``rels`` are parallel lists (the root file and every
    ``checkpoint-N/`` copy). See the module docstring for the merge rules.
    """
    if len(paths) != len(rels):
        raise ValueError("paths and rels must have the same length")
    copies = sorted((_read_copy(p, r) for p, r in zip(paths, rels, strict=True)), key=_Copy.rank)
    return part_of(copies)


def part_of(copies: list[_Copy]) -> RunPart:
    """The run part of read copies (ranked, merged; see the module docstring)."""
    copies = sorted(copies, key=_Copy.rank)
    problems = [p for c in copies for p in c.problems]
    steps, tags, values, segments, sources = _merge(copies)
    if not steps:
        scalars = empty_scalars()
    elif len(copies) == 1:  # one source, one segment: broadcast them
        scalars = make_scalars(steps, tags, values, segment=0, source=sources[0])
    else:
        scalars = make_scalars(steps, tags, values, segment=segments, source=sources)
    return RunPart(scalars=scalars, config=_config(copies), problems=problems)
