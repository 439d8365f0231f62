"""W&B run folders, written by wandb itself in offline mode (``autopsy.readers.wandb_run``).

Each run is made in a child process by the real library (``wandb.init(mode="offline")``,
``wandb.log``, ``run.finish``), so the ``.wandb`` record logs are exactly what W&B writes;
the reader never imports wandb. A run that goes NaN or diverges at a known step is found at
that step from the W&B folder alone.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from repo_paths import REPO

import autopsy
from autopsy.api import diagnose
from autopsy.model import Family

_SCRIPT = textwrap.dedent("""
    import json, math, os, sys
    os.environ["WANDB_MODE"] = "offline"
    os.environ["WANDB_SILENT"] = "true"
    import wandb
    spec = json.loads(sys.stdin.read())
    run = wandb.init(project="autopsy-tests", dir=spec["dir"], config=spec["config"],
                     id=spec.get("id"), resume=spec.get("resume"))
    for row in spec["rows"]:
        step = row.pop("_at", None)
        row = {k: (float("nan") if v == "nan" else v) for k, v in row.items()}
        if step is None:
            wandb.log(row)
        else:
            wandb.log(row, step=step)
    for line in spec.get("prints", []):
        print(line, flush=True)
    if spec.get("raise"):
        raise RuntimeError(spec["raise"])
    run.finish(exit_code=spec.get("exit_code", 0))
""")


def _make(root: Path, rows: list[dict], *, config: dict | None = None, **extra: object) -> Path:
    """A W&B offline run under ``root`` made by wandb itself; returns ``root``."""
    spec = {"dir": str(root), "rows": rows, "config": config or {}, **extra}
    done = subprocess.run([sys.executable, "-c", _SCRIPT], input=json.dumps(spec),
                          capture_output=True, text=True, timeout=120)
    if not extra.get("raise"):
        assert done.returncode == 0, done.stderr[-2000:]
    assert list(root.glob("wandb/*run-*/run-*.wandb")), done.stderr[-2000:]
    return root


def _series(run: autopsy.Run, tag: str) -> list[tuple[int, float]]:
    s = run.series(tag)
    return [(int(k), float(v)) for k, v in s.items()]


def test_wandb_is_installed() -> None:
    import wandb  # noqa: F401  (the test extra installs it: these tests must not skip)


def test_nan_loss_found_at_its_step_with_config_and_wall_times(tmp_path: Path) -> None:
    rows = [{"train/loss": 2.0 / (1 + s) if s < 30 else "nan", "train/grad_norm": 1.0 + s / 100,
             "train/learning_rate": 3e-4, "_at": s} for s in range(40)]
    run = autopsy.load_run(_make(tmp_path, rows, config={"learning_rate": 3e-4,
                                                         "per_device_train_batch_size": 8}))
    loss = _series(run, "loss")
    assert [s for s, _ in loss] == list(range(40))
    assert loss[5][1] == pytest.approx(2.0 / 6)
    assert run.config["learning_rate"] == 3e-4
    assert run.config["per_device_train_batch_size"] == 8
    assert run.scalars["wall_time"].notna().all()
    d = diagnose(run)
    assert d.verdict.family is Family.NAN_INF and d.verdict.step == 30


def test_diverging_loss_found_where_it_turns(tmp_path: Path) -> None:
    rows = []
    for s in range(100):
        loss = 3.0 - 2.0 * s / 60 if s <= 60 else 1.0 + 0.15 * (s - 60)
        rows.append({"loss": loss, "lr": 0.05, "_at": s})
    d = diagnose(autopsy.load_run(_make(tmp_path, rows)))
    assert d.verdict.family is Family.DIVERGING
    assert d.verdict.step is not None and 58 <= d.verdict.step <= 64


def test_trainers_global_step_is_the_step(tmp_path: Path) -> None:
    # the HF Trainer's W&B callback: one wandb.log per logging step, train/global_step in it
    rows = [{"train/loss": 1.0 / (1 + i), "train/global_step": 10 * (i + 1),
             "train/epoch": i / 10} for i in range(12)]
    run = autopsy.load_run(_make(tmp_path, rows))
    assert [s for s, _ in _series(run, "loss")] == [10 * (i + 1) for i in range(12)]


def test_exit_code_is_an_event_and_a_traceback_in_the_console_is_read(tmp_path: Path) -> None:
    rows = [{"loss": 1.0 / (1 + s), "_at": s} for s in range(10)]
    root = _make(tmp_path, rows, **{"raise": "something broke in the data loader"})
    run = autopsy.load_run(root)
    exits = run.events[run.events["kind"] == "exit"]
    assert exits["details"].iloc[0]["exitcode"] == 1
    assert (run.events["kind"] == "traceback").any()  # from files/output.log
    d = diagnose(run)
    assert d.verdict.family is Family.CRASH
    assert "something broke in the data loader" in d.verdict.message


def test_console_records_are_read_when_output_log_is_gone(tmp_path: Path) -> None:
    rows = [{"loss": 1.0 / (1 + s), "_at": s} for s in range(10)]
    root = _make(tmp_path, rows, **{"raise": "something broke in the data loader"})
    for log in root.glob("wandb/*run-*/files/output.log"):
        log.unlink()
    run = autopsy.load_run(root)
    tb = run.events[run.events["kind"] == "traceback"]
    assert len(tb) and tb["source"].astype(str).str.endswith(".wandb").all()
    assert "something broke" in diagnose(run).verdict.message


def test_a_truncated_log_keeps_what_came_before(tmp_path: Path) -> None:
    rows = [{"loss": 1.0 / (1 + s), "_at": s} for s in range(200)]
    root = _make(tmp_path, rows)
    (log,) = root.glob("wandb/*run-*/run-*.wandb")
    data = log.read_bytes()
    cut = tmp_path / "cut"
    shutil.copytree(root, cut, symlinks=True)
    (cut_log,) = cut.glob("wandb/offline-run-*/run-*.wandb")
    cut_log.write_bytes(data[: len(data) // 2])
    run = autopsy.load_run(cut)
    steps = [s for s, _ in _series(run, "loss")]
    assert 20 < len(steps) < 200 and steps == list(range(len(steps)))
    kinds = {p.kind for p in run.problems}
    assert "truncated" in kinds and "no_exit" not in kinds


def test_a_corrupt_block_costs_that_block(tmp_path: Path) -> None:
    rows = [{"loss": 1.0 / (1 + s), "extra": "x" * 400, "_at": s} for s in range(400)]
    root = _make(tmp_path, rows)
    (log,) = root.glob("wandb/offline-run-*/run-*.wandb")
    data = bytearray(log.read_bytes())
    assert len(data) > 3 * 32768
    data[32768 + 5000] ^= 0xFF  # one byte inside the second block
    log.write_bytes(bytes(data))
    run = autopsy.load_run(root)
    steps = [s for s, _ in _series(run, "loss")]
    assert 300 < len(steps) < 400 and steps[0] == 0 and steps[-1] == 399
    assert any(p.kind == "corrupt_record" for p in run.problems)


def test_the_newest_of_several_runs_is_read_and_the_others_named(tmp_path: Path) -> None:
    _make(tmp_path, [{"loss": 5.0, "_at": s} for s in range(5)])
    _make(tmp_path, [{"loss": 1.0 / (1 + s), "_at": s} for s in range(7)])
    run = autopsy.load_run(tmp_path)
    assert len(_series(run, "loss")) == 7
    (other,) = [p for p in run.problems if p.kind == "other_runs"]
    assert "1 other W&B run" in other.what


def test_a_resumed_run_is_one_run_in_segments(tmp_path: Path) -> None:
    _make(tmp_path, [{"loss": 2.0 - s / 10, "_at": s} for s in range(10)], id="resumed1",
          resume="allow")
    _make(tmp_path, [{"loss": 1.0 - s / 100, "_at": s} for s in range(10, 20)], id="resumed1",
          resume="allow")
    run = autopsy.load_run(tmp_path)
    assert not [p for p in run.problems if p.kind == "other_runs"]
    assert [s for s, _ in _series(run, "loss")] == list(range(20))


def test_debug_logs_are_claimed_and_bad_files_are_problems(tmp_path: Path) -> None:
    root = _make(tmp_path, [{"loss": 1.0 / (1 + s), "_at": s} for s in range(10)],
                 prints=["epoch 1 done"])
    run = autopsy.load_run(root)
    readers = {s.path.rsplit("/", 1)[-1]: s.reader for s in run.sources}
    assert readers["debug-internal.log"] == "wandb" and readers["output.log"] == "ranklogs"
    # a header and nothing else (a run killed before W&B flushed a record): one problem
    empty = tmp_path / "empty" / "wandb" / "offline-run-20260101_000000-aaaa"
    empty.mkdir(parents=True)
    (empty / "run-aaaa.wandb").write_bytes(b":W&B\xe1\xbe\x00")
    (empty / "train.log").write_text("step 1 loss 2.5\nstep 2 loss 2.4\n")
    run = autopsy.load_run(tmp_path / "empty")
    assert any(p.kind == "no_exit" for p in run.problems)
    # a file named .wandb that is not one is not sniffed
    (empty / "run-bbbb.wandb").write_bytes(b"not a wandb file at all")
    run = autopsy.load_run(tmp_path / "empty")
    assert any(str(p).endswith("run-bbbb.wandb") for p in run.unread)


def test_a_synced_runs_files_without_the_record_log(tmp_path: Path) -> None:
    # published files of a synced run (tests/fixtures/wandb_files/SOURCE.md)
    files = REPO / "tests" / "fixtures" / "wandb_files"
    assert (files / "files" / "config.yaml").is_file(), "missing fixture"
    run = autopsy.load_run(files)
    assert (run.config["learning_rate"], run.config["batch_size"], run.config["model"]) == (
        0.001, 32, "DenseNet121")
    assert run.series("loss").to_dict() == pytest.approx({9: 0.44260069727897644})
    assert run.series("eval_loss").to_dict() == pytest.approx({9: 0.36824649572372437})
    # beside a record log they are not read: the log holds the same, point by point
    root = _make(tmp_path, [{"loss": 1.0 / (1 + s), "_at": s} for s in range(5)],
                 config={"learning_rate": 0.5})
    (run_dir,) = root.glob("wandb/offline-run-*")
    shutil.copytree(files / "files", run_dir / "files", dirs_exist_ok=True)
    run = autopsy.load_run(root)
    assert run.config["learning_rate"] == 0.5 and len(run.series("loss")) == 5


def test_the_fast_item_path_reads_what_the_general_parser_reads(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from autopsy.readers import wandb_run

    rows = [{"train/loss": 2.0 / (1 + s) if s != 7 else "nan", "train/global_step": 5 * s,
             "nested": {"acc": s / 10}, "big": 1e300, "note": "text", "_at": s}
            for s in range(30)]
    root = _make(tmp_path, rows)
    fast = autopsy.load_run(root).scalars
    monkeypatch.setattr(wandb_run, "_fast_items", lambda *a: None)
    slow = autopsy.load_run(root).scalars
    cols = ["tag", "step", "value", "wall_time"]
    assert len(fast) == len(slow) > 60
    assert fast[cols].astype(str).equals(slow[cols].astype(str))
