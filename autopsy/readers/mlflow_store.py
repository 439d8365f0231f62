"""MLflow tracking stores: the file store (``mlruns/``) and the SQLite store (``mlflow.db``).

* **File store**: ``mlruns/<experiment_id>/<run_id>/`` holds ``meta.yaml`` (run id, name,
  ``status`` 1-5, start and end times in ms), ``metrics/<key>`` (one ``timestamp value
  step`` line per point; a key with ``/`` is a nested folder), ``params/<key>`` and
  ``tags/<key>`` (one value per file). ``meta.yaml`` is read line by line (top-level
  ``key: value`` only; nothing is constructed), the other files as plain text.
* **SQLite store**: the tables ``runs``, ``metrics`` (``key, value, timestamp, step,
  is_nan``), ``params`` and ``tags``, read with the standard library's ``sqlite3`` opened
  read-only and immutable (``mode=ro&immutable=1``: no lock, no journal, nothing written
  beside the file).

A store holds many runs. ``autopsy analyze --run ID`` (a run id, a unique prefix of one, or a
run name) reads that one; otherwise the newest run that ended ``FAILED`` or ``KILLED`` is read,
else the newest run, and a problem names the choice and how many others there are. Deleted
runs are left out unless asked for. The run's metrics become scalars (``timestamp`` as wall
time; ``is_nan`` points as NaN), its params and a few tags (``mlflow.runName``,
``mlflow.user``, ``mlflow.source.name``) config. A run whose status is ``FAILED`` or
``KILLED`` gives an ``exit`` event with that status; a run still ``RUNNING`` with no end time
was killed before MLflow heard of it (or is still running): a ``no_exit`` problem.
"""

from __future__ import annotations

import math
import sqlite3
from array import array
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from autopsy.model.config import ConfigValue
from autopsy.model.events import events_frame
from autopsy.model.problem import Problem
from autopsy.readers.base import RunPart, head
from autopsy.readers.csvtable import MAX_STEP
from autopsy.readers.registry import Format
from autopsy.readers.selection import wanted

NAME = "mlflow"
FORMATS = (
    Format("mlflow_file_store", "MLflow file store: mlruns/<experiment>/<run>/ (metrics, "
           "params, tags, meta.yaml with the run's status)", ("scalars", "config", "events"),
           "mlruns/<experiment_id>/<run_id>/metrics/<key>"),
    Format("mlflow_sqlite", "MLflow SQLite tracking store (runs, metrics, params, tags), read "
           "only", ("scalars", "config", "events"), "mlflow.db"),
)

SQLITE_MAGIC = b"SQLite format 3\x00"
#: The file store's status numbers (``mlflow.entities.RunStatus``).
STATUS_NAMES = {"1": "RUNNING", "2": "SCHEDULED", "3": "FINISHED", "4": "FAILED", "5": "KILLED"}
#: Statuses of a run that did not end well: preferred when autopsy picks a run.
FAILED_STATUSES = frozenset({"FAILED", "KILLED"})
#: Tags kept as config.
TAG_KEYS = ("mlflow.runName", "mlflow.user", "mlflow.source.name", "mlflow.parentRunId")
#: How far above a metric file its run folder may be (metric keys nest a few levels).
MAX_KEY_DEPTH = 8
#: The longest param or tag value read (MLflow's own limit is 8,000 characters in the SQL
#: store; a larger file is not one MLflow wrote).
MAX_VALUE_BYTES = 8192
#: The longest metric line (``timestamp value step``: under 60 bytes; longer is not a point).
MAX_METRIC_LINE = 256
#: Rows fetched from SQLite at a time (bounded memory on a store of millions of points).
FETCH_ROWS = 50_000


def sniff(path: Path) -> bool:
    """A file of an MLflow file-store run (or an experiment's ``meta.yaml``), or a SQLite
    database with MLflow's ``runs`` and ``metrics`` tables."""
    if path.name == "meta.yaml":
        if _is_run_dir(path.parent):
            return True
        text = head(path, 2048)
        return b"artifact_location:" in text and b"experiment_id:" in text
    parts = path.parts[-MAX_KEY_DEPTH - 2:-1]
    if any(p in ("metrics", "params", "tags") for p in parts):
        return _run_dir(path) is not None
    if head(path, len(SQLITE_MAGIC)) == SQLITE_MAGIC:
        return _is_mlflow_db(path)
    return False


def _is_run_dir(directory: Path) -> bool:
    return (directory / "meta.yaml").is_file() and any(
        (directory / d).is_dir() for d in ("metrics", "params", "tags"))


def _run_dir(path: Path) -> Path | None:
    """The run folder of a file under its ``metrics/``, ``params/`` or ``tags/``."""
    p = path.parent
    for _ in range(MAX_KEY_DEPTH + 1):
        if p.name in ("metrics", "params", "tags") and _is_run_dir(p.parent):
            return p.parent
        if p.parent == p:
            return None
        p = p.parent
    return None


def _connect(path: Path) -> sqlite3.Connection:
    """Read-only, immutable: SQLite takes no lock and writes no journal beside the file."""
    return sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro&immutable=1", uri=True)


def _is_mlflow_db(path: Path) -> bool:
    try:
        with _connect(path) as con:
            names = {r[0] for r in con.execute(
                "SELECT name FROM sqlite_master WHERE type='table'")}
        return {"runs", "metrics"} <= names
    except sqlite3.Error:
        return False


@dataclass
class _Run:
    """One run of a store."""

    run_id: str
    name: str = ""
    status: str = ""
    start: float = math.nan  # ms
    end: float = math.nan
    deleted: bool = False
    folder: Path | None = None  # file store
    db: Path | None = None  # SQLite store
    rel: str = ""  # the meta.yaml or the database, relative to the run root
    metric_files: list[tuple[Path, str]] = field(default_factory=list)


def read(path: Path, rel: str) -> RunPart:
    """Read one file (:func:`read_group` with one file)."""
    return read_group([path], [rel])


def read_group(paths: list[Path], rels: list[str]) -> RunPart:
    """Pick a run of the stores these files belong to and read it."""
    part = RunPart()
    runs: dict[str, _Run] = {}
    order: list[str] = []
    for path, rel in zip(paths, rels, strict=True):
        if path.name == "meta.yaml" and _is_run_dir(path.parent):
            run = _meta(path, rel, part.problems)
            key = f"file:{path.parent}"
            if key in runs:
                run.metric_files = runs[key].metric_files
            runs[key] = run
            order.append(key)
        elif head(path, len(SQLITE_MAGIC)) == SQLITE_MAGIC:
            for run in _db_runs(path, rel, part.problems):
                runs[f"db:{path}:{run.run_id}"] = run
        else:
            folder = _run_dir(path)
            if folder is not None and path.parent.name != "params" and _is_metric(path):
                key = f"file:{folder}"
                runs.setdefault(key, _Run(run_id=folder.name, folder=folder)).metric_files \
                    .append((path, rel))
    candidates = [r for r in runs.values() if r.rel]
    if not candidates:
        return part
    chosen = _choose(candidates, part.problems)
    if chosen is None:
        return part
    if chosen.db is not None:
        _read_db_run(chosen, part)
    else:
        _read_file_run(chosen, part)
    _status(chosen, part)
    return part


def _is_metric(path: Path) -> bool:
    """A file under ``metrics/`` (not ``params/`` or ``tags/``)."""
    p = path.parent
    for _ in range(MAX_KEY_DEPTH + 1):
        if p.name == "metrics":
            return True
        if p.name in ("params", "tags") or p.parent == p:
            return False
        p = p.parent
    return False


def _choose(candidates: list[_Run], problems: list[Problem]) -> _Run | None:
    """The run asked for, else the newest failed one, else the newest; say which."""
    asked = wanted()
    if asked:
        hits = [r for r in candidates if r.run_id == asked or r.name == asked]
        hits = hits or [r for r in candidates if r.run_id.startswith(asked)]
        if len(hits) == 1:
            return hits[0]
        known = ", ".join(f"{r.run_id} ({r.name})" if r.name else r.run_id
                          for r in _newest_first(candidates)[:8])
        what = "no MLflow run matches" if not hits else f"{len(hits)} MLflow runs match"
        problems.append(Problem(candidates[0].rel, f"{what} --run {asked}: runs here are "
                                f"{known}", kind="run_not_found"))
        return None
    live = [r for r in candidates if not r.deleted] or candidates
    failed = [r for r in live if r.status in FAILED_STATUSES]
    pool = failed or live
    chosen = _newest_first(pool)[0]
    if len(live) > 1:
        why = (f"the newest of {len(failed)} that ended {'/'.join(sorted(FAILED_STATUSES))}"
               if failed else "the newest (none failed)")
        label = f"{chosen.run_id} ({chosen.name})" if chosen.name else chosen.run_id
        problems.append(Problem(
            chosen.rel, f"{len(live)} MLflow runs here: read {label}, {why}; "
            "autopsy analyze --run ID reads another", used="one run",
            kind="other_runs", count=len(live) - 1))
    return chosen


def _newest_first(runs: list[_Run]) -> list[_Run]:
    return sorted(runs, key=lambda r: (r.start if math.isfinite(r.start) else -1.0, r.run_id),
                  reverse=True)


def _yaml_scalar(text: str) -> str:
    text = text.strip()
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "'\"":
        return text[1:-1]
    return text


def _meta(path: Path, rel: str, problems: list[Problem]) -> _Run:
    """A run's ``meta.yaml``: its top-level ``key: value`` lines."""
    run = _Run(run_id=path.parent.name, folder=path.parent, rel=rel)
    try:
        raw = path.read_bytes()[:65536]
    except OSError as exc:
        problems.append(Problem(rel, f"cannot read: {exc.strerror}", kind="unreadable"))
        return run
    for line in raw.decode("utf-8", errors="replace").splitlines():
        if not line or line[0] in " -#" or ":" not in line:
            continue
        key, _, value = line.partition(":")
        value = _yaml_scalar(value)
        if key == "run_id" and value:
            run.run_id = value
        elif key == "run_name":
            run.name = value
        elif key == "status":
            run.status = STATUS_NAMES.get(value, value.upper())
        elif key in ("start_time", "end_time"):
            try:
                ms = float(value)
            except ValueError:
                continue
            if key == "start_time":
                run.start = ms
            else:
                run.end = ms
        elif key == "lifecycle_stage":
            run.deleted = value == "deleted"
    return run


def _db_runs(path: Path, rel: str, problems: list[Problem]) -> list[_Run]:
    try:
        with _connect(path) as con:
            rows = con.execute("SELECT run_uuid, name, status, start_time, end_time, "
                               "lifecycle_stage FROM runs").fetchall()
    except sqlite3.Error as exc:
        problems.append(Problem(rel, f"not a readable MLflow database: {exc}",
                                kind="unreadable"))
        return []
    out = []
    for run_id, name, status, start, end, stage in rows:
        out.append(_Run(run_id=str(run_id), name=str(name or ""), status=str(status or ""),
                        start=float(start) if start is not None else math.nan,
                        end=float(end) if end is not None else math.nan,
                        deleted=stage == "deleted", db=path, rel=rel))
    return out


class _Points:
    """Points in compact columns."""

    def __init__(self) -> None:
        self.steps = array("q")
        self.walls = array("d")
        self.values = array("d")
        self.codes = array("i")
        self.sources = array("i")
        self.names: list[str] = []
        self.code: dict[str, int] = {}
        self.rels: list[str] = []
        self.bad = 0

    def add(self, key: str, step: int, wall: float, value: float, source: int) -> None:
        code = self.code.get(key)
        if code is None:
            code = self.code[key] = len(self.names)
            self.names.append(key)
        self.steps.append(step)
        self.walls.append(wall)
        self.values.append(value)
        self.codes.append(code)
        self.sources.append(source)

    def frame(self) -> Any:
        if not self.values:
            return None
        import numpy as np
        import pandas as pd

        from autopsy.model.scalars import make_scalars

        tags = pd.Categorical.from_codes(np.frombuffer(self.codes, dtype=np.intc).copy(),
                                         categories=self.names)
        sources = pd.Categorical.from_codes(np.frombuffer(self.sources, dtype=np.intc).copy(),
                                            categories=self.rels)
        return make_scalars(np.frombuffer(self.steps, dtype=np.int64), tags,
                            np.frombuffer(self.values, dtype=np.float64),
                            wall_time=np.frombuffer(self.walls, dtype=np.float64),
                            source=sources)


def _value(text: str) -> Any:
    """A param's text as the value it was logged as: a number, a bool, else the text."""
    t = text.strip()
    if t in ("True", "False"):
        return t == "True"
    try:
        return int(t)
    except ValueError:
        pass
    try:
        return float(t)
    except ValueError:
        return t


def _read_file_run(run: _Run, part: RunPart) -> None:
    assert run.folder is not None
    points = _Points()
    for path, rel in sorted(run.metric_files, key=lambda m: m[1]):
        key = path.relative_to(run.folder / "metrics").as_posix()
        source = len(points.rels)
        points.rels.append(rel)
        try:
            with open(path, "rb") as fh:
                while True:
                    raw = fh.readline(MAX_METRIC_LINE)
                    if not raw:
                        break
                    if not raw.endswith(b"\n") and len(raw) == MAX_METRIC_LINE:
                        points.bad += 1
                        while raw and not raw.endswith(b"\n"):
                            raw = fh.readline(MAX_METRIC_LINE)
                        continue
                    cells = raw.split()
                    if not cells:
                        continue
                    try:
                        wall = float(cells[0]) / 1000.0
                        value = float(cells[1])
                        step = int(cells[2]) if len(cells) > 2 else 0
                    except (ValueError, IndexError):
                        points.bad += 1
                        continue
                    if not -MAX_STEP <= step <= MAX_STEP:  # a step no run reaches: that line
                        points.bad += 1
                        continue
                    points.add(key, step, wall, value, source)
        except OSError as exc:
            part.problems.append(Problem(rel, f"read stopped early: {exc.strerror}",
                                         used="the lines before it", kind="truncated"))
    if points.bad:
        part.problems.append(Problem(run.rel, f"{points.bad:,} metric lines are not "
                                     "'timestamp value step'", used="the other lines",
                                     kind="bad_row", count=points.bad))
    part.scalars = points.frame()
    for sub, keep in (("params", None), ("tags", TAG_KEYS)):
        folder = run.folder / sub
        if not folder.is_dir():
            continue
        for path in sorted(p for p in folder.rglob("*") if p.is_file()):
            key = path.relative_to(folder).as_posix()
            if keep is not None and key not in keep:
                continue
            try:
                raw = path.read_bytes()[:MAX_VALUE_BYTES]
            except OSError:
                continue
            text = raw.decode("utf-8", errors="replace")
            rel = f"{run.rel.rsplit('/', 1)[0]}/{sub}/{key}" if "/" in run.rel else key
            part.config.append(ConfigValue(key, _value(text) if sub == "params" else text,
                                           rel))


def _read_db_run(run: _Run, part: RunPart) -> None:
    assert run.db is not None
    points = _Points()
    points.rels.append(run.rel)
    try:
        with _connect(run.db) as con:
            cur = con.execute("SELECT key, value, timestamp, step, is_nan FROM metrics "
                              "WHERE run_uuid = ? ORDER BY key, step, timestamp", (run.run_id,))
            while True:
                rows = cur.fetchmany(FETCH_ROWS)
                if not rows:
                    break
                for key, value, ts, step, is_nan in rows:
                    try:
                        v = math.nan if is_nan else float(value)
                        wall = float(ts) / 1000.0 if ts is not None else math.nan
                        points.add(str(key), int(step or 0), wall, v, 0)
                    except (TypeError, ValueError):
                        points.bad += 1
            params = con.execute("SELECT key, value FROM params WHERE run_uuid = ?",
                                 (run.run_id,)).fetchall()
            tags = con.execute("SELECT key, value FROM tags WHERE run_uuid = ?",
                               (run.run_id,)).fetchall()
    except sqlite3.Error as exc:
        part.problems.append(Problem(run.rel, f"database read stopped: {exc}",
                                     used="the rows before it", kind="truncated"))
        params, tags = [], []
    if points.bad:
        part.problems.append(Problem(run.rel, f"{points.bad:,} metric rows are not numbers",
                                     used="the other rows", kind="bad_row", count=points.bad))
    part.scalars = points.frame()
    part.config.extend(ConfigValue(str(k), _value(str(v)[:MAX_VALUE_BYTES]), run.rel)
                       for k, v in params)
    part.config.extend(ConfigValue(str(k), str(v)[:MAX_VALUE_BYTES], run.rel)
                       for k, v in tags if k in TAG_KEYS and v is not None)


def _status(run: _Run, part: RunPart) -> None:
    """The run's status: an ``exit`` event when it failed or was killed; a problem when it
    never ended."""
    part.config.append(ConfigValue("mlflow.run_id", run.run_id, run.rel))
    part.config.append(ConfigValue("mlflow.status", run.status, run.rel))
    if run.status in FAILED_STATUSES:
        last = None
        if part.scalars is not None and len(part.scalars):
            last = int(part.scalars["step"].max())
        row = [None, run.end / 1000.0 if math.isfinite(run.end) else math.nan, last, "exit",
               f"the MLflow run {run.run_id} ended with status {run.status}", run.rel, None,
               {"status": run.status, "who": "mlflow"}]
        part.events = events_frame([row])
    elif run.status == "RUNNING" and not math.isfinite(run.end):
        part.problems.append(Problem(
            run.rel, "the run's status is still RUNNING with no end time: its process was "
            "killed before MLflow could mark it (or it is still running)",
            used="everything logged", kind="no_exit"))
