"""Pickles of shared references: cost follows the file, not the tree it expands to (issue 19).

Four levels of a list holding the previous level 70 times is about 2 kB written by
``torch.save`` and 24 million elements once walked as a tree; the Trainer's arguments
held such values in keys autopsy keeps (``lr_scheduler_kwargs``, ``deepspeed``,
``fsdp``). Before the fix ``autopsy analyze`` ran for over five minutes on it.
"""

from __future__ import annotations

import json
import sys
import types
from pathlib import Path

import pytest
from measure import run_autopsy

from autopsy.formats import unpickle

#: The issue's bounds for any pickle under 1 MB; time is a generous ceiling, not a goal.
MAX_SECONDS = 10.0
MAX_MB = 300.0


def _nested(levels: int, fan_out: int = 70) -> list:
    value: list = list(range(fan_out))
    for _ in range(levels):
        value = [value] * fan_out
    return value


def _training_args_bomb(run: Path, levels: int = 4) -> Path:
    """A torch.save'd TrainingArguments-like object whose kept keys share one huge list."""
    import torch

    package = sys.modules.setdefault("transformers_bomb", types.ModuleType("transformers_bomb"))
    module = types.ModuleType("transformers_bomb.training_args")
    sys.modules["transformers_bomb.training_args"] = module
    package.training_args = module  # type: ignore[attr-defined]

    class TrainingArguments:
        pass

    TrainingArguments.__module__ = "transformers_bomb.training_args"
    TrainingArguments.__qualname__ = "TrainingArguments"
    module.TrainingArguments = TrainingArguments  # type: ignore[attr-defined]
    shared = _nested(levels)
    args = TrainingArguments()
    args.__dict__.update(learning_rate=1e-3, output_dir="out", deepspeed=shared,
                         lr_scheduler_kwargs={"a": shared, "b": [shared, shared]},
                         fsdp=shared, max_steps=10)
    run.mkdir(parents=True)
    torch.save(args, run / "training_args.bin")
    history = [{"step": s, "loss": 2.0 - 0.1 * s} for s in range(1, 11)]
    (run / "trainer_state.json").write_text(json.dumps({"global_step": 10,
                                                        "log_history": history}))
    return run / "training_args.bin"


def test_to_plain_stops_at_its_budget() -> None:
    status, value = unpickle.to_plain(_nested(4), max_nodes=1_000)
    assert status is unpickle.PlainStatus.TOO_LARGE and value is None
    status, value = unpickle.to_plain({"a": [1, 2, (3, 4)]})
    assert status is unpickle.PlainStatus.OK and value == {"a": [1, 2, [3, 4]]}
    cyclic: list = [1]
    cyclic.append(cyclic)
    assert unpickle.to_plain(cyclic)[0] is unpickle.PlainStatus.NOT_PLAIN


@pytest.mark.parametrize("fmt", ["json", "text"])
def test_shared_reference_training_args_is_bounded(tmp_path: Path, fmt: str) -> None:
    bomb = _training_args_bomb(tmp_path / "run")
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
