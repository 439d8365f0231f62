"""Rank-log fixtures: what a correct reader must find in real-format logs.

Each folder under ``tests/fixtures/ranklogs/`` is one situation (NCCL watchdog timeouts in
several PyTorch eras, CUDA and host OOM, torchelastic summaries, DeepSpeed/apex overflows,
Megatron/fairseq/HF Trainer metric lines, srun/mpirun/pdsh layouts, messy bytes). Its logs are
copied, without ``expected.json``, to a temporary folder and read with
:func:`autopsy.load_run`; ``run.events`` and ``run.scalars`` are then checked against the
folder's ``expected.json``. Every check of a fixture runs and all misses are reported together.

``expected.json`` (all keys optional except ``description``; see the fixtures' README.md):

- ``events``: ``[{kind, rank?, source?, line?, step?, details?}]`` - some event has all the
  listed fields; ``details`` is a subset match, numbers within a relative 1e-6, ``rank: null``
  means "rank unknown".
- ``events_with_message``: ``[{kind, rank?, source?, contains}]`` - some such event has
  ``contains`` in its message or in the JSON of its details.
- ``event_counts``: ``{kind: n}`` - exactly ``n`` events of that kind.
- ``ranks_with_kind``: ``{kind: [ranks]}`` - the non-null ranks having that kind, exactly.
- ``no_events_of_kind``: ``[kind]`` - none at all.
- ``scalars``: ``[{raw_tag, step, value, rank?, source?, segment?}]`` - present; ``value`` may
  be ``"nan"``, ``"inf"``, ``"-inf"``.
- ``absent_scalars``: ``[{raw_tag, step, rank?, source?}]`` - not present.
- ``scalar_counts``: ``{raw_tag: n}`` - exactly ``n`` points with that raw tag.

``source`` is relative to the fixture folder; ``line`` is 1-based and counts ``\\n`` only.
"""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

FIXTURES = Path(__file__).parent / "fixtures" / "ranklogs"
CASES = sorted(p.name for p in FIXTURES.iterdir() if (p / "expected.json").is_file())
_SPECIAL = {"nan": math.nan, "inf": math.inf, "-inf": -math.inf}


def _expected(name: str) -> dict[str, Any]:
    return json.loads((FIXTURES / name / "expected.json").read_text(encoding="utf-8"))


def _load(name: str, tmp_path: Path) -> Any:
    """Copy the fixture's logs (not expected.json) and read them with ``load_run``."""
    from autopsy import load_run

    dst = tmp_path / name
    shutil.copytree(FIXTURES / name, dst, ignore=shutil.ignore_patterns("expected.json"))
    return load_run(dst)


def _number(value: Any) -> float | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, str) and value.lower() in _SPECIAL:
        return _SPECIAL[value.lower()]
    return None


def _same(want: Any, got: Any) -> bool:
    """Equal, with numbers within a relative 1e-6 and NaN equal to NaN."""
    a, b = _number(want), _number(got)
    if a is not None and b is not None:
        if math.isnan(a) or math.isnan(b):
            return math.isnan(a) and math.isnan(b)
        return math.isclose(a, b, rel_tol=1e-6, abs_tol=1e-12)
    if isinstance(want, list) and isinstance(got, (list, tuple)):
        return len(want) == len(got) and all(_same(x, y) for x, y in zip(want, got, strict=True))
    if isinstance(want, dict) and isinstance(got, dict):
        return all(k in got and _same(v, got[k]) for k, v in want.items())
    return bool(want == got)


def _details(value: Any) -> dict[str, Any]:
    if isinstance(value, dict):
        return value
    if isinstance(value, str):
        try:
            loaded = json.loads(value)
        except ValueError:
            return {}
        return loaded if isinstance(loaded, dict) else {}
    return {}


def _records(frame: pd.DataFrame) -> list[dict[str, Any]]:
    """Rows as plain dicts: NA as None (a NaN ``value`` stays NaN), details as dict."""
    rows = []
    for row in frame.to_dict("records"):
        out = {}
        for key, value in row.items():
            if key == "details":
                out[key] = _details(value)
            elif key == "value":
                out[key] = float(value)
            elif value is None or (not isinstance(value, (list, dict)) and pd.isna(value)):
                out[key] = None
            elif key in ("kind", "source", "raw_tag", "tag", "message"):
                out[key] = str(getattr(value, "value", value))
            elif key in ("rank", "line", "step", "segment"):
                out[key] = int(value)
            else:
                out[key] = value
        rows.append(out)
    return rows


def _event_matches(want: dict[str, Any], got: dict[str, Any]) -> bool:
    for key in ("kind", "rank", "source", "line", "step"):
        if key in want and not _same(want[key], got.get(key)):
            return False
    want_details = want.get("details", {})
    have = got.get("details") or {}
    return all(k in have and _same(v, have[k]) for k, v in want_details.items())


def _scalar_matches(want: dict[str, Any], got: dict[str, Any], with_value: bool) -> bool:
    for key in ("raw_tag", "step", "rank", "source", "segment"):
        if key in want and not _same(want[key], got.get(key)):
            return False
    return not with_value or _same(want["value"], got.get("value"))


def _near(want: dict[str, Any], rows: list[dict[str, Any]], keys: tuple[str, ...]) -> str:
    """The closest candidates, to make a miss readable."""
    close = [r for r in rows if all(_same(want[k], r.get(k)) for k in keys if k in want)]
    if not close:
        return "none of that kind"
    shown = [{k: r.get(k) for k in ("rank", "source", "line", "step", "value", "details")
              if k in r} for r in close[:3]]
    return f"{len(close)} candidate(s), e.g. {shown}"


def check_events(exp: dict[str, Any], events: list[dict[str, Any]]) -> list[str]:
    """Every miss against the event expectations of one fixture."""
    misses = []
    for want in exp.get("events", []):
        if not any(_event_matches(want, got) for got in events):
            misses.append(f"missing event {want}: {_near(want, events, ('kind',))}")
    for want in exp.get("events_with_message", []):
        text = want["contains"]
        if not any(
            _event_matches({k: v for k, v in want.items() if k != "contains"}, got)
            and (text in (got.get("message") or "") or text in json.dumps(got.get("details")))
            for got in events
        ):
            misses.append(f"no {want['kind']} event mentioning {text!r} ({want})")
    kinds = [e.get("kind") for e in events]
    for kind, count in exp.get("event_counts", {}).items():
        if kinds.count(kind) != count:
            misses.append(f"{kind}: {kinds.count(kind)} events, expected {count}")
    for kind, ranks in exp.get("ranks_with_kind", {}).items():
        have = sorted({e["rank"] for e in events if e.get("kind") == kind
                       and e.get("rank") is not None})
        if have != sorted(ranks):
            misses.append(f"ranks with {kind}: {have}, expected {sorted(ranks)}")
    for kind in exp.get("no_events_of_kind", []):
        found = [e for e in events if e.get("kind") == kind]
        if found:
            misses.append(f"unexpected {kind} events: {_near({'kind': kind}, found, ('kind',))}")
    return misses


def check_scalars(exp: dict[str, Any], scalars: list[dict[str, Any]]) -> list[str]:
    """Every miss against the scalar expectations of one fixture."""
    misses = []
    for want in exp.get("scalars", []):
        if not any(_scalar_matches(want, got, with_value=True) for got in scalars):
            near = _near(want, scalars, ("raw_tag", "source"))
            misses.append(f"missing scalar {want}: {near}")
    for want in exp.get("absent_scalars", []):
        found = [got for got in scalars if _scalar_matches(want, got, with_value=False)]
        if found:
            misses.append(f"unexpected scalar {want}: {found[:2]}")
    tags = [s.get("raw_tag") for s in scalars]
    for tag, count in exp.get("scalar_counts", {}).items():
        if tags.count(tag) != count:
            misses.append(f"raw_tag {tag!r}: {tags.count(tag)} points, expected {count}")
    return misses


@pytest.mark.parametrize("name", CASES)
def test_fixture_is_small_and_documented(name: str) -> None:
    exp = _expected(name)
    assert exp.get("description")
    files = [p for p in (FIXTURES / name).rglob("*") if p.is_file()]
    assert sum(p.stat().st_size for p in files) < 64 * 1024
    for item in exp.get("events", []) + exp.get("scalars", []):
        if "source" in item:
            assert (FIXTURES / name / item["source"]).is_file(), item["source"]


def test_sources_file_lists_formats() -> None:
    text = (FIXTURES / "SOURCES.md").read_text(encoding="utf-8")
    assert text.count("\n- ") >= 30


@pytest.mark.parametrize("name", CASES)
def test_reader_finds_expected_facts(name: str, tmp_path: Path) -> None:
    exp = _expected(name)
    run = _load(name, tmp_path)
    events = _records(run.events)
    scalars = _records(run.scalars)
    misses = check_events(exp, events) + check_scalars(exp, scalars)
    assert not misses, f"{name}: {len(misses)} miss(es)\n" + "\n".join(misses)
