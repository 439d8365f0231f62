"""Layout detection, finding every checkpoint under a dir, and picking the one a resume uses."""

from __future__ import annotations

import json
import os
from pathlib import Path

import builders
import pytest

from autopsy.ckpt import audit_path
from autopsy.ckpt.layouts import Layout, detect, find_checkpoints, pick_newest, step_from_name


def test_each_real_layout_is_detected(hf_run: builders.Built, accelerate_ckpt: builders.Built,
                                      plain_stateful: builders.Built,
                                      dcp_ckpt: builders.Built,
                                      lightning_ckpt: builders.Built) -> None:
    assert detect(hf_run.path) is Layout.HF_TRAINER
    assert detect(accelerate_ckpt.path) is Layout.ACCELERATE
    assert detect(plain_stateful.path) is Layout.TORCH
    assert detect(dcp_ckpt.path) is Layout.DCP
    assert detect(lightning_ckpt.path) is Layout.LIGHTNING
    assert detect(hf_run.run_dir) is None  # an output dir holding checkpoint-N/, not one


def test_deepspeed_folder_and_its_latest_tag(deepspeed_ckpt: builders.Built) -> None:
    tag = deepspeed_ckpt.detail["tag"]
    assert detect(deepspeed_ckpt.path / tag) is Layout.DEEPSPEED
    report = audit_path(deepspeed_ckpt.path)
    assert Path(report.picked.path).name == tag
    assert report.picked.layout == "deepspeed"
    assert report.picked.world_size == deepspeed_ckpt.world_size


def test_safetensors_file_sharded_folder_and_lora_adapter(tmp_path: Path) -> None:
    single = builders.safetensors_weights(tmp_path / "st")
    sharded = builders.hf_sharded_weights(tmp_path / "sharded")
    lora = builders.lora_adapter(tmp_path / "lora")
    assert detect(single.path) is Layout.SAFETENSORS
    for built in (sharded, lora):
        refs = find_checkpoints(built.path)
        assert [r.path for r in refs] == [built.path]  # one checkpoint, not one per shard
        audit = audit_path(built.path).picked
        weights = audit.component("weights")
        assert weights is not None and weights.status.value == "ok"
        assert audit.component("optimizer").status.value == "missing"
    lora_audit = audit_path(lora.path).picked
    assert "adapter_model.safetensors" in lora_audit.component("weights").files


def test_every_checkpoint_under_a_run_dir_oldest_first(hf_run: builders.Built) -> None:
    refs = find_checkpoints(hf_run.run_dir)
    assert [r.path.name for r in refs] == hf_run.detail["checkpoints"]
    assert all(r.layout is Layout.HF_TRAINER for r in refs)
    assert pick_newest(refs, hf_run.run_dir).path == hf_run.path


def test_newest_is_by_step_number_not_by_name_or_mtime(tmp_path: Path) -> None:
    for n in (900, 1000, 80):
        folder = tmp_path / f"checkpoint-{n}"
        folder.mkdir()
        (folder / "trainer_state.json").write_text(json.dumps({"global_step": n}))
    os.utime(tmp_path / "checkpoint-80", (2e9, 2e9))  # newest mtime, lowest step
    refs = find_checkpoints(tmp_path)
    assert [r.step for r in refs] == [80, 900, 1000]
    assert pick_newest(refs, tmp_path).path.name == "checkpoint-1000"


@pytest.mark.parametrize(("name", "step"), [
    ("checkpoint-500", 500), ("global_step42", 42), ("epoch=2-step=300.ckpt", 300),
    ("ckpt_1000.pt", 1000), ("model.pt", None), ("step-7.safetensors", 7),
])
def test_step_from_name(name: str, step: int | None) -> None:
    assert step_from_name(name) == step


def test_final_model_beside_checkpoints_is_not_a_checkpoint(hf_run: builders.Built) -> None:
    assert (hf_run.run_dir / "model.safetensors").exists()
    names = [r.path.name for r in find_checkpoints(hf_run.run_dir)]
    assert "model.safetensors" not in names and "training_args.bin" not in names


def test_a_dir_without_checkpoints_finds_none(tmp_path: Path) -> None:
    (tmp_path / "train.log").write_text("step 1 loss 2.0\n")
    (tmp_path / "notes.txt").write_text("hello")
    assert find_checkpoints(tmp_path) == []


def test_data_files_named_bin_are_not_checkpoints(tmp_path: Path) -> None:
    torch = pytest.importorskip("torch")
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "train.bin").write_bytes(bytes(range(200)) * 10)  # nanoGPT tokens
    torch.save({"model": {"w": torch.zeros(2)}, "optimizer": None, "iter_num": 250},
               tmp_path / "ckpt.pt")
    refs = find_checkpoints(tmp_path)
    assert [r.path.name for r in refs] == ["ckpt.pt"]
    audit = audit_path(tmp_path).picked
    assert audit.step == 250  # nanoGPT's iter_num
