"""MLflow tracking stores written by mlflow itself (``autopsy.readers.mlflow_store``).

Each store is made in a child process by the real library (``mlflow.start_run``,
``log_metric``, ``log_params``, an exception inside the run, a process killed inside it),
in both back ends: the file store (``mlruns/``) and the SQLite store (``mlflow.db``). The
reader uses only the standard library (``sqlite3`` read-only) and never imports mlflow.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import autopsy
from autopsy.api import diagnose
from autopsy.model import Family

_SCRIPT = textwrap.dedent("""
    import json, os, signal, sys
    import mlflow
    spec = json.loads(sys.stdin.read())
    mlflow.set_tracking_uri(spec["uri"])
    mlflow.set_experiment("autopsy-tests")
    for r in spec["runs"]:
        run_id = None
        try:
            with mlflow.start_run(run_name=r["name"]) as run:
                run_id = run.info.run_id
                mlflow.log_params(r.get("params", {}))
                for step, row in enumerate(r["rows"]):
                    for key, value in row.items():
                        mlflow.log_metric(key, float(value), step=step)
                if r.get("kill"):
                    os.kill(os.getpid(), signal.SIGKILL)
                if r.get("raise"):
                    raise RuntimeError(r["raise"])
        except RuntimeError:
            pass
        if r.get("delete"):
            mlflow.delete_run(run_id)
""")


def _store(root: Path, backend: str, runs: list[dict]) -> str:
    """Runs made by mlflow in ``root`` (``file``: ``root/mlruns``; ``sqlite``:
    ``root/mlflow.db``); returns the tracking URI."""
    uri = (f"sqlite:///{root / 'mlflow.db'}" if backend == "sqlite"
           else (root / "mlruns").as_uri())
    killed = any(r.get("kill") for r in runs)  # a run that kills its process ends the batch
    done = subprocess.run(
        [sys.executable, "-c", _SCRIPT], input=json.dumps({"uri": uri, "runs": runs}),
        capture_output=True, text=True, timeout=180,
        env={**os.environ, "MLFLOW_ALLOW_FILE_STORE": "true"})
    assert done.returncode == 0 or killed, done.stderr[-3000:]
    return uri


GOOD = {"name": "good", "params": {"learning_rate": 3e-4, "optimizer": "adamw"},
        "rows": [{"train/loss": 2.0 / (1 + s)} for s in range(20)]}
BAD = {"name": "bad", "params": {"learning_rate": 0.1},
       "rows": [{"train/loss": 2.0 / (1 + s) if s < 12 else "nan", "lr": 0.1}
                for s in range(20)],
       "raise": "loss is nan, stopping"}


@pytest.mark.parametrize("backend", ["file", "sqlite"])
def test_the_newest_failed_run_is_read_and_its_nan_found(tmp_path: Path, backend: str) -> None:
    _store(tmp_path, backend, [GOOD, BAD, dict(GOOD, name="later-good")])
    run = autopsy.load_run(tmp_path)
    assert run.config["mlflow.status"] == "FAILED"
    assert run.config["learning_rate"] == 0.1
    loss = run.series("loss")
    assert list(loss.index) == list(range(20)) and loss.iloc[:12].notna().all()
    assert run.scalars["wall_time"].notna().all()
    (chosen,) = [p for p in run.problems if p.kind == "other_runs"]
    assert "3 MLflow runs here" in chosen.what and "(bad)" in chosen.what
    d = diagnose(run)
    assert d.verdict.family is Family.NAN_INF and d.verdict.step == 12


@pytest.mark.parametrize("backend", ["file", "sqlite"])
def test_run_picks_a_run_by_name_or_id_prefix(tmp_path: Path, backend: str) -> None:
    _store(tmp_path, backend, [GOOD, BAD])
    run = autopsy.load_run(tmp_path, run="good")
    assert run.config["mlflow.status"] == "FINISHED"
    assert run.config["optimizer"] == "adamw"
    assert diagnose(run).verdict.family is Family.HEALTHY
    prefix = str(run.config["mlflow.run_id"])[:6]
    assert autopsy.load_run(tmp_path, run=prefix).config["mlflow.run_id"] == \
        run.config["mlflow.run_id"]
    done = subprocess.run([sys.executable, "-m", "autopsy", "analyze", str(tmp_path),
                           "--run", "no-such-run"], capture_output=True, text=True)
    assert done.returncode == 2
    err = done.stderr.strip()
    assert "\n" not in err and "no MLflow run matches --run no-such-run" in err


def test_a_failed_run_without_a_nan_is_a_crash(tmp_path: Path) -> None:
    failed = {"name": "failed", "rows": [{"loss": 2.0 / (1 + s)} for s in range(15)],
              "raise": "CUDA error"}
    _store(tmp_path, "sqlite", [failed])
    d = diagnose(autopsy.load_run(tmp_path))
    assert d.verdict.family is Family.CRASH and "status FAILED" in d.verdict.message


def test_a_killed_process_leaves_running_and_a_problem(tmp_path: Path) -> None:
    _store(tmp_path, "file", [{"name": "killed", "rows": [{"loss": 1.0 / (1 + s)}
                                                          for s in range(8)], "kill": True}])
    run = autopsy.load_run(tmp_path)
    assert run.config["mlflow.status"] == "RUNNING"
    assert len(run.series("loss")) == 8
    assert any(p.kind == "no_exit" for p in run.problems)


def test_deleted_runs_are_left_out_unless_asked_for(tmp_path: Path) -> None:
    _store(tmp_path, "sqlite", [GOOD, dict(BAD, name="deleted-bad", delete=True)])
    assert autopsy.load_run(tmp_path).config["mlflow.status"] == "FINISHED"
    assert autopsy.load_run(tmp_path, run="deleted-bad").config["mlflow.status"] == "FAILED"


def test_the_sqlite_store_is_read_without_writing_beside_it(tmp_path: Path) -> None:
    _store(tmp_path, "sqlite", [GOOD, BAD])
    db = tmp_path / "mlflow.db"
    before = (sorted(p.name for p in tmp_path.iterdir()), hashlib.sha256(db.read_bytes()).digest(),
              db.stat().st_mtime_ns)
    os.chmod(tmp_path, 0o555)  # a read-only folder: any journal or lock file would fail
    try:
        run = autopsy.load_run(tmp_path)
    finally:
        os.chmod(tmp_path, 0o755)
    assert len(run.series("loss")) == 20
    assert (sorted(p.name for p in tmp_path.iterdir()), hashlib.sha256(db.read_bytes()).digest(),
            db.stat().st_mtime_ns) == before


def test_bad_metric_lines_cost_themselves_and_an_imposter_db_is_not_read(
        tmp_path: Path) -> None:
    _store(tmp_path, "file", [GOOD])
    (metric,) = tmp_path.glob("mlruns/*/*/metrics/train/loss")
    lines = metric.read_text().splitlines()
    metric.write_text("\n".join([*lines[:5], "not a metric line", *lines[5:]]) + "\n")
    (tmp_path / "other.db").write_bytes(b"SQLite format 3\x00" + b"\x00" * 200)
    run = autopsy.load_run(tmp_path)
    assert len(run.series("loss")) == 20
    assert any(p.kind == "bad_row" and p.count == 1 for p in run.problems)
    assert any(str(p).endswith("other.db") for p in run.unread)
