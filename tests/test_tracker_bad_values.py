"""One bad value costs that value, not the file, in the readers added for trackers and
hung jobs (issue 19's rule): numbers of thousands of digits, or past 64 bits."""

from __future__ import annotations

import pickle
from pathlib import Path

import autopsy


def test_a_huge_line_number_in_a_stack_dump_costs_that_frame(tmp_path: Path) -> None:
    (tmp_path / "rank0.log").write_text(
        "Thread 0x00007f1c93404b80 (most recent call first):\n"
        f'  File "/job/train.py", line {"9" * 5000} in load\n'
        '  File "/job/train.py", line 3 in <module>\n'
        "step 1 loss 2.0\nstep 2 loss 1.0\nstep 3 loss 0.5\n")
    run = autopsy.load_run(tmp_path)
    assert len(run.series("loss")) == 3
    assert not [p for p in run.problems if p.kind == "reader_error"]


def test_a_step_past_64_bits_in_an_mlflow_metric_costs_that_line(tmp_path: Path) -> None:
    run_dir = tmp_path / "mlruns" / "1" / "abc"
    (run_dir / "metrics").mkdir(parents=True)
    (run_dir / "meta.yaml").write_text("run_id: abc\nstatus: 3\nstart_time: 1\n")
    (run_dir / "metrics" / "loss").write_text(f"1 2.0 0\n2 1.0 {'9' * 30}\n3 0.5 2\n")
    run = autopsy.load_run(tmp_path)
    assert list(run.series("loss").index) == [0, 2]
    assert any(p.kind == "bad_row" and p.count == 1 for p in run.problems)


def test_huge_numbers_in_a_flight_recorder_dump_are_not_a_reader_failure(
        tmp_path: Path) -> None:
    doc = {"version": "2.10", "pg_config": {"": {"ranks": "[0, " + "7" * 6000 + "]"}},
           "pg_status": {"0": {"last_completed_collective": 2 ** 70}},
           "entries": [{"pg_id": 0, "process_group": ["0", "default_pg"],
                        "collective_seq_id": 2 ** 70, "profiling_name": "gloo:all_reduce",
                        "input_sizes": [[10]]}]}
    (tmp_path / "nccl_trace_rank_0").write_bytes(pickle.dumps(doc, protocol=2))
    run = autopsy.load_run(tmp_path)
    assert not [p for p in run.problems if p.kind == "reader_error"]
