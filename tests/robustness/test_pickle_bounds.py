"""Pickles of shared references: cost follows the file, not the tree it expands to (issue 19).

Four levels of a list holding the previous level 70 times is about 2 kB written by
``torch.save`` and 24 million elements once walked as a tree; the Trainer's arguments
held such values in keys autopsy keeps (``lr_scheduler_kwargs``, ``deepspeed``,
``fsdp``). Before the fix ``autopsy analyze`` ran for over five minutes on it.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from inputs import nested_list, training_args_bomb
from measure import run_autopsy

from autopsy.formats import unpickle

#: The issue's bounds for any pickle under 1 MB; time is a generous ceiling, not a goal.
MAX_SECONDS = 10.0
MAX_MB = 300.0


def test_to_plain_stops_at_its_budget() -> None:
    status, value = unpickle.to_plain(nested_list(4), max_nodes=1_000)
    assert status is unpickle.PlainStatus.TOO_LARGE and value is None
    status, value = unpickle.to_plain({"a": [1, 2, (3, 4)]})
    assert status is unpickle.PlainStatus.OK and value == {"a": [1, 2, [3, 4]]}
    cyclic: list = [1]
    cyclic.append(cyclic)
    assert unpickle.to_plain(cyclic)[0] is unpickle.PlainStatus.NOT_PLAIN


@pytest.mark.parametrize("fmt", ["json", "text"])
def test_shared_reference_training_args_is_bounded(tmp_path: Path, fmt: str) -> None:
    bomb = training_args_bomb(tmp_path / "run")
    assert bomb.stat().st_size < 1 << 20
    got = run_autopsy("analyze", tmp_path / "run", "--format", fmt, timeout=120)
    assert got.rc == 0, got.stderr
    assert "Traceback" not in got.stderr
    assert got.wall_s < MAX_SECONDS, f"{got.wall_s:.1f} s"
    assert got.peak_mb < MAX_MB, f"{got.peak_mb:.0f} MB"
    if fmt == "json":
        report = json.loads(got.stdout)
        problems = [p for p in report["problems"] if p["kind"] == "value_too_large"]
        assert problems and "deepspeed" in problems[0]["what"]
        config = report["run"]["config"]
        assert config["learning_rate"]["value"] == 1e-3
        assert "deepspeed" not in config and "fsdp" not in config
