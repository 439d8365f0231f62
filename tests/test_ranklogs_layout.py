"""Rank logs: rank and attempt from the path, the prefix, or the line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import autopsy
from autopsy.readers import ranklogs, trainer_state
from autopsy.readers.ranklogs.layout import inline_rank, path_info, split_prefix

TB = [
    "Traceback (most recent call last):",
    '  File "/home/u/train.py", line 70, in check_batch',
    '    raise ValueError("bad batch")',
    "ValueError: bad batch",
]


@pytest.mark.parametrize(
    ("rel", "rank", "attempt"),
    [
        ("logs/abc_x1/attempt_2/3/stdout.log", 3, 2),
        ("logs/abc_x1/attempt_0/12/stderr.log", 12, 0),
        ("rank3.log", 3, 0),
        ("job-rank-3.out", 3, 0),
        ("rank_7/train.log", 7, 0),
        ("node01.log", None, 0),
        ("slurm-123456.out", None, 0),
        ("stdout.log", None, 0),
    ],
)
def test_path_info(rel: str, rank: int | None, attempt: int) -> None:
    info = path_info(rel)
    assert (info.rank, info.attempt) == (rank, attempt)


@pytest.mark.parametrize(
    ("line", "rank", "host", "rest"),
    [
        ("[rank3]: Traceback (most recent call last):", 3, None,
         "Traceback (most recent call last):"),
        ("[default3]:step 1 loss 2.0", 3, None, "step 1 loss 2.0"),
        ("3: step 1 loss 2.0", 3, None, "step 1 loss 2.0"),
        ("[1,3]<stderr>:RuntimeError: x", 3, None, "RuntimeError: x"),
        ("node-07: RuntimeError: x", None, "node-07", "RuntimeError: x"),
        ("RuntimeError: x", None, None, "RuntimeError: x"),
        ("2024-05-01 12:00:00,123 INFO step 1", None, None, "2024-05-01 12:00:00,123 INFO step 1"),
    ],
)
def test_split_prefix(line: str, rank: int | None, host: str | None, rest: str) -> None:
    got = split_prefix(line)
    assert (got.rank, got.host, got.rest) == (rank, host, rest)


def test_inline_rank() -> None:
    assert inline_rank("[PG ID 0 PG GUID 0(default_pg) Rank 7] Watchdog caught") == 7
    assert inline_rank("[Rank 3] Watchdog caught collective operation timeout") == 3
    assert inline_rank("nothing here") is None


def _write(path: Path, lines: list[str]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n")


def test_torchrun_log_dir_tree_with_attempts(tmp_path: Path) -> None:
    base = tmp_path / "logs" / "d3c0_4h8t"
    for attempt in (0, 1):
        for rank in range(2):
            _write(base / f"attempt_{attempt}" / str(rank) / "stdout.log",
                   [f"step {s} loss {1.0 / s}" for s in range(1, 4)])
            _write(base / f"attempt_{attempt}" / str(rank) / "stderr.log",
                   TB if rank == 1 else ["all fine"])
    err = base / "attempt_1" / "1" / "error.json"
    err.write_text(json.dumps({"message": {
        "message": "ValueError: bad batch",
        "extraInfo": {"py_callstack": "\n".join(TB), "timestamp": "1700000000"}}}))
    run = autopsy.load_run(tmp_path)
    s = run.scalars
    assert sorted(s["segment"].unique().tolist()) == [0, 1]
    assert sorted(s["rank"].unique().tolist()) == [0, 1]
    ev = run.events
    tb = ev[ev["kind"] == "traceback"]
    assert tb["rank"].tolist() == [1, 1]
    assert sorted(d["attempt"] for d in tb["details"]) == [0, 1]
    assert tb["step"].isna().all()  # stderr has no metric lines of its own
    ef = ev[ev["kind"] == "error_file"]
    assert ef["rank"].tolist() == [1]
    assert ef["wall_time"].tolist() == [1700000000.0]
    assert ef["details"].iloc[0]["exception"] == "ValueError"
    assert ef["details"].iloc[0]["user_frame"]["function"] == "check_batch"


def test_interleaved_prefixes_keep_tracebacks_apart(tmp_path: Path) -> None:
    lines = [
        "[default0]:step 1 loss 2.0",
        "[default1]:step 1 loss 2.1",
        "[rank1]: Traceback (most recent call last):",
        "[rank0]: Traceback (most recent call last):",
        '[rank1]:   File "/home/u/train.py", line 9, in main',
        '[rank0]:   File "/home/u/train.py", line 5, in other',
        "[rank1]: ValueError: one",
        "[rank0]: KeyError: 'zero'",
    ]
    log = tmp_path / "train.log"
    _write(log, lines)
    part = ranklogs.read(log, "train.log")
    tb = part.events.sort_values("rank")
    assert tb["rank"].tolist() == [0, 1]
    assert [d["exception"] for d in tb["details"]] == ["KeyError", "ValueError"]
    assert [d["frames"][-1]["line"] for d in tb["details"]] == [5, 9]
    assert tb["step"].tolist() == [1, 1]
    assert tb["line"].tolist() == [4, 3]


def test_srun_labels_and_mpirun_prefixes(tmp_path: Path) -> None:
    log = tmp_path / "slurm-42.out"
    _write(log, ["0: step 5 loss 1.0", "1: step 5 loss 1.1",
                 "[1,2]<stdout>:step 5 loss 1.2", "[1,3]<stderr>:Killed"])
    part = ranklogs.read(log, "slurm-42.out")
    assert sorted(part.scalars["rank"].tolist()) == [0, 1, 2]
    assert part.events["kind"].tolist() == ["host_kill"]
    assert part.events["rank"].tolist() == [3]
    assert part.events["step"].isna().all()


def test_pdsh_host_prefix_is_recorded(tmp_path: Path) -> None:
    log = tmp_path / "pdsh.log"
    _write(log, ["gpu-node12: Killed"])
    part = ranklogs.read(log, "pdsh.log")
    assert part.events["rank"].isna().all()
    assert part.events["details"].iloc[0]["host"] == "gpu-node12"


def test_restart_inside_one_log_is_a_new_segment(tmp_path: Path) -> None:
    log = tmp_path / "stdout.log"
    _write(log, [f"step {s} loss 1.0" for s in (1, 2, 3, 4, 2, 3, 4, 5)])
    part = ranklogs.read(log, "stdout.log")
    assert part.scalars["segment"].tolist() == [0, 0, 0, 0, 1, 1, 1, 1]


def test_healthy_hf_trainer_train_log_is_read() -> None:
    root = Path(__file__).resolve().parent.parent / "sample_runs" / "healthy_hf_trainer"
    run = autopsy.load_run(root)
    # the run keeps each point once (TensorBoard's copy); the log's own points are the reader's
    s = ranklogs.read(root / "train.log", "train.log").scalars
    assert {"loss", "grad_norm", "learning_rate", "eval_loss"} <= set(s["tag"].astype(str))
    state = trainer_state.read(root / "trainer_state.json", "trainer_state.json").scalars
    log_loss = s[s["tag"] == "loss"].set_index("step")["value"]
    st_loss = state[state["tag"] == "loss"].set_index("step")["value"]
    assert log_loss.index.tolist() == st_loss.index.tolist()  # steps from the tqdm bar
    assert ((log_loss - st_loss).abs() <= 1e-3 * st_loss.abs()).all()
    assert "train.log" not in run.unread
