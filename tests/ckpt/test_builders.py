"""The builders really make what they say: checked with the real readers.

torch.load (``weights_only=True`` where the file allows it), safetensors, the DCP loader and
json. Hostile files are checked with :mod:`pickletools` only, never loaded.
"""

from __future__ import annotations

import json
import math
import sys
import zipfile
from pathlib import Path
from typing import Any

import builders
import pytest
import torch
from builders import Built
from safetensors import safe_open


def _load(path: Path, weights_only: bool = True) -> Any:
    """torch.load of one of the builders' own (benign) files."""
    return torch.load(path, weights_only=weights_only, map_location="cpu")


def _safetensor_keys(path: Path) -> list[str]:
    with safe_open(str(path), framework="pt") as f:
        return sorted(f.keys())


# ------------------------------------------------------------------------------ good layouts


def test_hf_trainer_checkpoint_holds_every_file(hf_run: Built) -> None:
    assert hf_run.detail["checkpoints"] == ["checkpoint-2", "checkpoint-4"]
    assert hf_run.path.name == "checkpoint-4" and hf_run.global_step == 4
    for name in ("model.safetensors", "optimizer.pt", "scheduler.pt", "rng_state.pth",
                 "trainer_state.json", "training_args.bin"):
        assert name in hf_run.files
    assert (hf_run.run_dir / "trainer_state.json").is_file()
    state = json.loads((hf_run.path / "trainer_state.json").read_text(encoding="utf-8"))
    assert state["global_step"] == 4
    optim = _load(hf_run.path / "optimizer.pt")
    weights = _safetensor_keys(hf_run.path / "model.safetensors")
    assert len(optim["state"]) == len(optim["param_groups"][0]["params"]) + len(
        optim["param_groups"][1]["params"]) > 0
    for entry in optim["state"].values():
        assert {"exp_avg", "exp_avg_sq", "step"} <= set(entry)
        assert float(entry["step"]) == 4
    assert "transformer.wte.weight" in weights
    sched = _load(hf_run.path / "scheduler.pt")
    assert sched["last_epoch"] == 4 and sched["_step_count"] == 5


def test_hf_trainer_pickles_name_only_benign_globals(hf_run: Built) -> None:
    args = builders.pickle_globals(hf_run.path / "training_args.bin")
    assert "transformers.training_args.TrainingArguments" in args
    rng = builders.pickle_globals(hf_run.path / "rng_state.pth")
    assert any(g.startswith("numpy") for g in rng)
    assert not {"posix.system", "os.system", "builtins.exec"} & set(args + rng)


def test_rank_rng_files_are_what_the_trainer_saves_per_rank(hf_multirank: Built) -> None:
    names = [f"rng_state_{r}.pth" for r in range(4)]
    assert hf_multirank.world_size == 4
    assert set(names) <= set(hf_multirank.files) and "rng_state.pth" not in hf_multirank.files
    states = [_load(hf_multirank.path / n, weights_only=False) for n in names]
    assert all(set(s) == {"python", "numpy", "cpu"} for s in states)
    assert len({bytes(s["cpu"].numpy()) for s in states}) == 4  # each rank its own generator
    args = _load(hf_multirank.path / "training_args.bin", weights_only=False)
    assert args.distributed_state.num_processes == 4  # what rank 0 of a 4-process job saves


def test_sharded_weights_index_names_existing_shards(tmp_path: Path) -> None:
    built = builders.hf_sharded_weights(tmp_path / "sharded")
    index = json.loads((built.path / "model.safetensors.index.json").read_text("utf-8"))
    shards = sorted(set(index["weight_map"].values()))
    assert len(shards) >= 2 and shards == built.detail["shards"]
    keys = [k for shard in shards for k in _safetensor_keys(built.path / shard)]
    assert sorted(keys) == sorted(index["weight_map"])


def test_lora_adapter_has_the_documented_layout(tmp_path: Path) -> None:
    built = builders.lora_adapter(tmp_path / "adapter", r=4)
    config = json.loads((built.path / "adapter_config.json").read_text("utf-8"))
    assert config["peft_type"] == "LORA" and config["r"] == 4
    with safe_open(str(built.path / "adapter_model.safetensors"), framework="pt") as f:
        a = f.get_tensor("base_model.model.transformer.h.0.attn.c_attn.lora_A.weight")
        b = f.get_tensor("base_model.model.transformer.h.0.attn.c_attn.lora_B.weight")
    assert a.shape == (4, 32) and b.shape == (96, 4)


def test_plain_checkpoint_with_stateful_loader_state(plain_stateful: Built) -> None:
    obj = _load(plain_stateful.path, weights_only=False)  # numpy RNG state inside
    assert {"model", "optimizer", "scheduler", "scaler", "step", "epoch", "rng",
            "dataloader"} <= set(obj)
    assert obj["step"] == 4 and obj["scheduler"]["last_epoch"] == 4
    assert obj["dataloader"]["_num_yielded"] == 4
    assert obj["scaler"]["scale"] > 0 and "_growth_tracker" in obj["scaler"]
    assert float(obj["optimizer"]["state"][0]["step"]) == 4


def test_plain_checkpoint_without_data_position(plain_no_data: Built) -> None:
    obj = _load(plain_no_data.path, weights_only=False)
    assert {"state_dict", "lr_scheduler", "optimizer"} <= set(obj)
    assert not {"model", "scheduler", "dataloader", "sampler"} & set(obj)


@pytest.mark.parametrize("torchdata", [True, False])
def test_stateful_loader_state_has_the_documented_keys(
    torchdata: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    if not torchdata:  # the fallback built from the documented layout
        monkeypatch.setitem(sys.modules, "torchdata.stateful_dataloader", None)
    state = builders.stateful_loader_state(3)
    assert state["_num_yielded"] == 3
    assert state["_sampler_iter_state"]["samples_yielded"] == 24


def test_safetensors_weights(tmp_path: Path) -> None:
    built = builders.safetensors_weights(tmp_path / "w")
    assert _safetensor_keys(built.path) == built.detail["tensors"]


def test_accelerate_save_state(accelerate_ckpt: Built) -> None:
    assert {"model.safetensors", "optimizer.bin", "scheduler.bin",
            "random_states_0.pkl"} <= set(accelerate_ckpt.files)
    optim = _load(accelerate_ckpt.path / "optimizer.bin")
    assert all(float(s["step"]) == 4 for s in optim["state"].values())
    assert _load(accelerate_ckpt.path / "scheduler.bin")["last_epoch"] == 4
    if accelerate_ckpt.detail["stateful"]:
        assert _load(accelerate_ckpt.path / "dl_state_dict.bin",
                     weights_only=False)["_num_yielded"] == 4
    rng = builders.pickle_globals(accelerate_ckpt.path / "random_states_0.pkl")
    assert rng and not {"posix.system", "builtins.exec"} & set(rng)


def test_deepspeed_layout(deepspeed_ckpt: Built) -> None:
    assert (deepspeed_ckpt.path / "latest").read_text() == "global_step4"
    folder = deepspeed_ckpt.path / "global_step4"
    model = _load(folder / "mp_rank_00_model_states.pt", weights_only=False)
    assert model["global_steps"] == 4 and model["optimizer"] is None
    assert {"module", "buffer_names", "lr_scheduler", "ds_config", "ds_version"} <= set(model)
    numel = sum(v.numel() for v in model["module"].values())
    parts = []
    for rank in range(2):
        path = folder / f"zero_pp_rank_{rank}_mp_rank_00_optim_states.pt"
        assert "deepspeed.runtime.fp16.loss_scaler.LossScaler" in builders.pickle_globals(path)
        with builders._fake_module("deepspeed.runtime.fp16.loss_scaler",
                                   LossScaler=type("LossScaler", (), {})):
            osd = _load(path, weights_only=False)["optimizer_state_dict"]
        assert osd["zero_stage"] == 2 and osd["partition_count"] == [2]
        parts.append(osd["single_partition_of_fp32_groups"][0].numel())
        assert osd["base_optimizer_state"]["state"][0]["exp_avg_sq"].numel() == parts[-1]
    assert numel <= sum(parts) < numel + 2


def test_dcp_folder_loads_back(dcp_ckpt: Built) -> None:
    import torch.distributed.checkpoint as dcp

    assert {".metadata", "__0_0.distcp"} <= set(dcp_ckpt.files)
    model = builders.tiny_mlp()
    state = {"model": model.state_dict(), "step": 0, "lr_scheduler": {"last_epoch": 0}}
    with pytest.warns(UserWarning):
        dcp.load(state, checkpoint_id=str(dcp_ckpt.path))
    assert state["step"] == 4 and state["lr_scheduler"]["last_epoch"] == 4


def test_lightning_layout(lightning_ckpt: Built) -> None:
    obj = _load(lightning_ckpt.path, weights_only=False)
    assert obj["global_step"] == 4 and obj["pytorch-lightning_version"]
    assert {"state_dict", "optimizer_states", "lr_schedulers", "loops", "callbacks",
            "epoch"} <= set(obj)
    assert all(k.startswith("model.") for k in obj["state_dict"])
    assert obj["lr_schedulers"][0]["last_epoch"] == 4


# ----------------------------------------------------------------------------------- defects


@pytest.mark.parametrize(("name", "component"), [
    ("optimizer.pt", "optimizer"), ("scheduler.pt", "scheduler"),
])
def test_remove_a_component(hf_run: Built, tmp_path: Path, name: str, component: str) -> None:
    built = builders.remove(builders.copy_built(hf_run, tmp_path / "run"), name)
    assert built.broken == component and name not in built.files
    assert not (built.path / name).exists() and (hf_run.path / name).exists()


def test_remove_one_rank_rng(hf_multirank: Built, tmp_path: Path) -> None:
    built = builders.remove_rank_rng(builders.copy_built(hf_multirank, tmp_path / "r"), 2)
    assert built.broken == "rng" and built.detail["rank"] == 2
    present = sorted(p.name for p in built.path.glob("rng_state_*.pth"))
    assert present == ["rng_state_0.pth", "rng_state_1.pth", "rng_state_3.pth"]


def test_truncated_safetensors_no_longer_loads(hf_run: Built, tmp_path: Path) -> None:
    built = builders.truncate(builders.copy_built(hf_run, tmp_path / "t"))
    path = built.path / "model.safetensors"
    assert built.broken == "weights"
    assert path.stat().st_size == built.detail["kept"] == built.detail["size"] // 2
    with pytest.raises(Exception):  # noqa: B017 (safetensors raises its own error type)
        _safetensor_keys(path)


def test_truncated_torch_zip_no_longer_loads(plain_stateful: Built, tmp_path: Path) -> None:
    built = builders.truncate(builders.copy_built(plain_stateful, tmp_path / "t"))
    assert not zipfile.is_zipfile(built.path)
    with pytest.raises((RuntimeError, OSError)):  # torch: "Invalid argument" on this cut
        _load(built.path, weights_only=False)


def test_zero_length_file(hf_run: Built, tmp_path: Path) -> None:
    built = builders.zero_length(builders.copy_built(hf_run, tmp_path / "z"), "optimizer.pt")
    assert (built.path / "optimizer.pt").stat().st_size == 0 and built.broken == "optimizer"


@pytest.mark.parametrize("fixture", ["hf_run", "accelerate_ckpt", "plain_stateful"])
def test_nan_is_really_in_exp_avg_sq(fixture: str, request: pytest.FixtureRequest,
                                     tmp_path: Path) -> None:
    good: Built = request.getfixturevalue(fixture)
    built = builders.nan_moments(builders.copy_built(good, tmp_path / "n"), index=3)
    obj = _load(built.file(built.detail["file"]), weights_only=False)
    holder = obj if "state" in obj else obj["optimizer"]
    flat = holder["state"][0]["exp_avg_sq"].view(-1)
    assert math.isnan(float(flat[3])) and int(torch.isnan(flat).sum()) == 1
    assert built.detail["key"].endswith("state.0.exp_avg_sq") and built.broken == "optimizer"
    exp_avg = holder["state"][0]["exp_avg"]
    assert bool(torch.isfinite(exp_avg).all())


@pytest.mark.parametrize(("name", "target", "component"), [
    ("training_args.bin", "os.system", "training_args"),
    ("rng_state.pth", "builtins.exec", "rng"),
])
def test_hostile_pickle_in_a_torch_zip(hf_run: Built, tmp_path: Path, name: str, target: str,
                                       component: str) -> None:
    marker = tmp_path / "PWNED"
    built = builders.hostile_pickle(builders.copy_built(hf_run, tmp_path / "h"), name,
                                    target=target, marker=marker)
    found = builders.pickle_globals(built.path / name)
    dotted = ".".join(builders.DANGEROUS[target])
    assert found[0] == dotted == built.detail["global_name"]  # runs before the real object
    original = builders.pickle_globals(hf_run.path / name)
    assert found[1:] == original  # the file still builds its own object after the call
    assert built.broken == component and zipfile.is_zipfile(built.path / name)
    assert not marker.exists()


@pytest.mark.parametrize("opcode", builders.OPCODES)
def test_every_payload_opcode_names_its_global(hf_run: Built, tmp_path: Path,
                                               opcode: str) -> None:
    built = builders.hostile_pickle(builders.copy_built(hf_run, tmp_path / "h"),
                                    "rng_state.pth", marker=tmp_path / "PWNED", opcode=opcode)
    assert builders.pickle_globals(built.path / "rng_state.pth")[0] == "posix.system"
    assert built.detail["opcode"] == opcode and not (tmp_path / "PWNED").exists()


def test_hostile_legacy_torch_file(tmp_path: Path) -> None:
    marker = tmp_path / "PWNED"
    good = builders.plain_checkpoint(tmp_path / "legacy", legacy=True)
    assert not zipfile.is_zipfile(good.path)
    assert _load(good.path, weights_only=False)["step"] == 4  # a real legacy torch file
    built = builders.hostile_pickle(good, good.path.name, marker=marker)
    found = builders.pickle_globals(built.path)  # in the first pickle: the magic number's
    assert found[0] == "posix.system" and built.broken == "weights"
    assert "torch._utils._rebuild_tensor_v2" in found  # the later pickles are read too
    assert not marker.exists()


def test_hostile_raw_pickle(accelerate_ckpt: Built, tmp_path: Path) -> None:
    marker = tmp_path / "PWNED"
    built = builders.hostile_pickle(builders.copy_built(accelerate_ckpt, tmp_path / "a"),
                                    "random_states_0.pkl", marker=marker)
    found = builders.pickle_globals(built.path / "random_states_0.pkl")
    assert found[0] == "posix.system" and built.broken == "rng"
    assert str(marker) in (built.path / "random_states_0.pkl").read_bytes().decode("latin-1")
    assert not marker.exists()


def test_trainer_state_defects(hf_run: Built, tmp_path: Path) -> None:
    torn = builders.drop_trainer_state(builders.copy_built(hf_run, tmp_path / "torn"))
    assert not (torn.path / "trainer_state.json").exists() and torn.broken == "trainer_state"
    shifted = builders.shift_trainer_state_step(builders.copy_built(hf_run, tmp_path / "s"), 3)
    state = json.loads((shifted.path / "trainer_state.json").read_text("utf-8"))
    assert state["global_step"] == 7 != int(shifted.path.name.split("-")[1])


def test_fp16_checkpoint_with_and_without_its_scaler(hf_run: Built, tmp_path: Path) -> None:
    with_scaler = builders.hf_fp16(builders.copy_built(hf_run, tmp_path / "a"))
    args = _load(with_scaler.path / "training_args.bin", weights_only=False)
    assert args.fp16 is True and with_scaler.broken is None
    scaler = _load(with_scaler.path / "scaler.pt")
    assert scaler["scale"] > 0 and {"growth_factor", "_growth_tracker"} <= set(scaler)
    without = builders.hf_fp16(builders.copy_built(hf_run, tmp_path / "b"), scaler=False)
    assert without.broken == "grad_scaler" and not (without.path / "scaler.pt").exists()
    assert _load(without.path / "training_args.bin", weights_only=False).fp16 is True
