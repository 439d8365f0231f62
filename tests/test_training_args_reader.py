"""training_args.bin: real Trainer output read without unpickling code; hostile files reported."""

from __future__ import annotations

import os
import pickle
from pathlib import Path
from typing import Any

import pytest
from hf_fixtures import RUN_ARGS, trainer_run

from autopsy.readers import training_args
from autopsy.readers.base import RunPart


@pytest.fixture(scope="session")
def hf_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return trainer_run(tmp_path_factory)


def config_of(part: RunPart) -> dict[str, Any]:
    return {entry.key: entry.value for entry in part.config}


class Payload:
    """Unpickled for real, creates ``marker``."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self) -> tuple[Any, ...]:
        return (os.system, (f"touch '{self.marker}'",))


def make_args(out: Path, **kwargs: Any) -> Any:
    transformers = pytest.importorskip("transformers")
    return transformers.TrainingArguments(output_dir=str(out), report_to=[], **kwargs)


def test_sniff(tmp_path: Path) -> None:
    assert training_args.sniff(tmp_path / "checkpoint-3" / "training_args.bin")
    other = tmp_path / "my_training_args.pt"
    other.write_bytes(b"\x80\x02N.")
    assert training_args.sniff(other)
    not_pickle = tmp_path / "training_args_notes.pt"
    not_pickle.write_text("notes")
    assert not training_args.sniff(not_pickle)
    optimizer = tmp_path / "optimizer.pt"
    optimizer.write_bytes(b"PK\x03\x04")
    assert not training_args.sniff(optimizer)


@pytest.mark.parametrize("copy", ["training_args.bin", "checkpoint-3/training_args.bin"])
def test_real_trainer_file(hf_run: Path, copy: str) -> None:
    part = training_args.read(hf_run / copy, copy)
    assert part.problems == []
    config = config_of(part)
    assert config["training_args_class"] == "transformers.training_args.TrainingArguments"
    for key, value in RUN_ARGS.items():
        assert config[key] == value, key
    assert config["fp16"] is False and config["bf16"] is False
    assert isinstance(config["optim"], str) and config["optim"].startswith("adamw")
    assert config["eval_strategy"] == "steps"
    assert {e.source for e in part.config} == {copy}
    assert set(training_args.MAIN_KEYS) - set(config) <= {"warmup_ratio"}  # gone in v5


@pytest.mark.parametrize("how", ["zip", "legacy", "pickle"])
def test_every_container_is_read(tmp_path: Path, how: str) -> None:
    torch = pytest.importorskip("torch")
    args = make_args(tmp_path / "out", learning_rate=2e-5, lr_scheduler_type="cosine",
                     max_grad_norm=0.0, gradient_accumulation_steps=8, bf16=False)
    path = tmp_path / "training_args.bin"
    if how == "pickle":
        path.write_bytes(pickle.dumps(args, protocol=4))
    else:
        torch.save(args, path, _use_new_zipfile_serialization=how == "zip")
    part = training_args.read(path, "training_args.bin")
    config = config_of(part)
    assert part.problems == []
    assert config["learning_rate"] == 2e-5
    assert config["lr_scheduler_type"] == "cosine"
    assert config["max_grad_norm"] == 0.0
    assert config["gradient_accumulation_steps"] == 8


def test_hostile_value_inside_real_args_is_reported_and_not_run(tmp_path: Path) -> None:
    torch = pytest.importorskip("torch")
    marker = tmp_path / "marker"
    args = make_args(tmp_path / "out", learning_rate=4e-4)
    args.evil = Payload(marker)
    path = tmp_path / "training_args.bin"
    torch.save(args, path)
    part = training_args.read(path, "checkpoint-9/training_args.bin")
    assert not marker.exists()
    unsafe = [p for p in part.problems if p.kind == "unsafe_pickle"]
    assert len(unsafe) == 1
    system = f"{os.system.__module__}.system"
    assert system in unsafe[0].what and "checkpoint-9/training_args.bin" in unsafe[0].what
    assert config_of(part)["learning_rate"] == 4e-4  # benign values still used
    torch.load(path, weights_only=False)  # control: torch's unpickler runs the payload
    assert marker.exists()


def test_hostile_file_with_nothing_else_is_reported(tmp_path: Path) -> None:
    torch = pytest.importorskip("torch")
    marker = tmp_path / "marker"
    path = tmp_path / "training_args.bin"
    torch.save(Payload(marker), path)
    part = training_args.read(path, "training_args.bin")
    assert not marker.exists()
    assert {p.kind for p in part.problems} == {"unsafe_pickle", "unexpected_structure"}
    assert part.config == []


@pytest.mark.parametrize("data,kind", [
    (b"", "truncated"),
    (b"\x80\x02}q\x00(X\x05\x00\x00\x00learn", "truncated"),
    (b"PK\x03\x04 this is not really a zip", "truncated"),
    (b"\x80\x02\xff", "invalid_pickle"),
])
def test_damaged_files_are_problems(tmp_path: Path, data: bytes, kind: str) -> None:
    path = tmp_path / "training_args.bin"
    path.write_bytes(data)
    part = training_args.read(path, "training_args.bin")
    assert [p.kind for p in part.problems] == [kind]
    assert part.config == []


def test_missing_file_is_a_problem(tmp_path: Path) -> None:
    part = training_args.read(tmp_path / "training_args.bin", "training_args.bin")
    assert [p.kind for p in part.problems] == ["unreadable"]


def test_none_is_kept_for_main_keys_only(tmp_path: Path) -> None:
    torch = pytest.importorskip("torch")
    args = make_args(tmp_path / "out")
    args.max_grad_norm = None
    path = tmp_path / "training_args.bin"
    torch.save(args, path)
    config = config_of(training_args.read(path, "training_args.bin"))
    assert "max_grad_norm" in config and config["max_grad_norm"] is None
    assert "resume_from_checkpoint" not in config  # an extra key, None in the file


class _OwnConfig:
    """A class of this test module, pickled by reference (not among what args hold)."""

    def __init__(self, depth: int) -> None:
        self.depth = depth


def test_real_args_name_nothing_unverified_and_a_users_class_is(tmp_path: Path) -> None:
    torch = pytest.importorskip("torch")
    args = make_args(tmp_path / "out", learning_rate=3e-4)
    path = tmp_path / "training_args.bin"
    torch.save(args, path)
    part = training_args.read(path, "training_args.bin")
    assert not [p for p in part.problems if p.kind in ("unsafe_pickle", "unverified_pickle")]
    args.own = _OwnConfig(2)
    torch.save(args, path)
    part = training_args.read(path, "training_args.bin")
    kinds = [p.kind for p in part.problems]
    assert kinds == ["unverified_pickle"]
    assert "_OwnConfig" in part.problems[0].what
    assert config_of(part)["learning_rate"] == 3e-4
