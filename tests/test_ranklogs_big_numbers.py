"""Numbers too large for a step or a rank (a corrupt or hostile log) cost the value, not the
file: the reader used to fail on the whole file with OverflowError."""

from __future__ import annotations

from pathlib import Path

from autopsy.readers import ranklogs

BIG = "9" * 23


def test_huge_steps_and_ranks_cost_their_value(tmp_path: Path) -> None:
    log = tmp_path / "train.log"
    log.write_text(
        f"FloatingPointError: Loss became infinite or NaN at iteration={BIG}!\n"
        f"step {BIG} RuntimeError: CUDA out of memory. Tried to allocate 2.00 GiB\n"
        f"srun: error: node1: task {BIG}: Killed\n"
        f"[rank{BIG}]:step 1 loss 2.0\n"
        f"step {BIG} loss 1.0\n"
        "step 2 loss 0.5\n", encoding="utf-8")
    part = ranklogs.read(log, "train.log")
    assert part.scalars["step"].tolist() == [1, 2]  # the 23-digit step is skipped
    assert part.scalars["rank"].isna().all()  # the 23-digit rank is none
    kinds = part.events["kind"].astype(str).tolist()
    assert {"nan_loss", "oom", "host_kill"} <= set(kinds)
    assert part.events.loc[part.events["kind"] == "nan_loss", "step"].isna().all()
    assert [(p.kind, p.count) for p in part.problems] == [("bad_value", 1)]
    huge_rank_file = tmp_path / f"rank{BIG}.log"
    huge_rank_file.write_text("step 1 loss 2.0\n", encoding="utf-8")
    part = ranklogs.read(huge_rank_file, huge_rank_file.name)
    assert part.scalars["rank"].isna().all() and part.scalars["step"].tolist() == [1]


def test_numbers_of_thousands_of_digits_cost_their_line(tmp_path: Path) -> None:
    # int() refuses strings of more than 4300 digits (ValueError): each such line is skipped
    # and counted, the rest of the file is read
    huge = "9" * 6000
    log = tmp_path / "train.log"
    log.write_text(
        "step 1 loss 2.0\n"
        f"step {huge} loss 1.0\n"
        f"====> Epoch: {huge}, cost 14.01 s\n"
        f"[Train][Epoch {huge}/2][Iter: 0/10]lr: 0.1, loss: 1.0, batch_cost: 1.0s\n"
        f"NVRM: Xid (PCI:0000:3b:00): {huge}, pid=1, name=python, GPU has fallen off the bus.\n"
        f"slurmstepd: error: Detected {huge} oom-kill event(s) in StepId=1.0. Some of your "
        "processes may have been killed by the cgroup out-of-memory handler.\n"
        "step 2 loss 0.5\n", encoding="utf-8")
    part = ranklogs.read(log, "train.log")
    assert part.scalars[part.scalars["tag"] == "loss"]["step"].tolist() == [1, 2]
    assert [(p.kind, p.count) for p in part.problems] == [("bad_value", 5)]
