"""Every status of every component, on checkpoints written by the real writers."""

from __future__ import annotations

from pathlib import Path

import builders
import pytest

from autopsy.ckpt import AuditReport, CheckpointAudit, audit_path


def _status(audit: CheckpointAudit) -> dict[str, str]:
    return {c.name: c.status.value for c in audit.components}


def _codes(audit: CheckpointAudit) -> set[str]:
    return {f.code for f in audit.findings}


def _copy(built: builders.Built, tmp_path: Path, name: str = "x") -> builders.Built:
    return builders.copy_built(built, tmp_path / name)


def test_good_hf_checkpoint_is_resumable(hf_run: builders.Built) -> None:
    report = audit_path(hf_run.path)
    audit = report.picked
    assert report.resumable and audit.resumable and audit.step == hf_run.global_step
    assert _status(audit) == {
        "weights": "ok", "optimizer": "ok", "scheduler": "ok", "grad_scaler": "not_applicable",
        "rng": "ok", "data_position": "ok", "trainer_state": "ok", "training_args": "ok"}
    assert not [f for f in audit.findings if f.severity.value in ("error", "critical")]
    data = audit.component("data_position")
    assert any("skips the batches" in e for e in data.evidence)  # HF replays, saves none


@pytest.mark.parametrize(("name", "component", "code"), [
    ("optimizer.pt", "optimizer", "CKPT002"),
    ("scheduler.pt", "scheduler", "CKPT003"),
    ("model.safetensors", "weights", "CKPT001"),
])
def test_missing_file_is_missing_and_not_resumable(hf_run: builders.Built, tmp_path: Path,
                                                   name: str, component: str,
                                                   code: str) -> None:
    built = builders.remove(_copy(hf_run, tmp_path), name)
    audit = audit_path(built.path).picked
    assert _status(audit)[component] == "missing"
    assert not audit.resumable and code in _codes(audit)
    comp = audit.component(component)
    assert name in comp.files and comp.effect
    if component in ("optimizer", "scheduler"):
        assert "only when both exist" in comp.effect  # HF skips both, silently


def test_one_file_of_the_pair_present_says_the_trainer_ignores_it(hf_run: builders.Built,
                                                                  tmp_path: Path) -> None:
    built = builders.remove(_copy(hf_run, tmp_path), "scheduler.pt")
    audit = audit_path(built.path).picked
    assert any("will not load it" in e for e in audit.component("optimizer").evidence)


def _without_args(hf_multirank: builders.Built, tmp_path: Path) -> builders.Built:
    """The 4-rank copy without training_args.bin: only the file names tell the world size."""
    return builders.remove(_copy(hf_multirank, tmp_path, "multi"), "training_args.bin")


def test_world_size_disagrees_across_files(hf_multirank: builders.Built,
                                           tmp_path: Path) -> None:
    built = _copy(hf_multirank, tmp_path)
    (built.path / "rng_state_5.pth").write_bytes((built.path / "rng_state_0.pth").read_bytes())
    audit = audit_path(built.path).picked
    assert _status(audit)["rng"] == "inconsistent" and not audit.resumable
    finding = next(f for f in audit.findings if f.code == "CKPT016")
    text = " ".join(e.summary for e in finding.evidence)
    assert "training_args.bin" in text and "rng_state_R.pth" in text


def test_rng_missing_for_one_rank(hf_multirank: builders.Built, tmp_path: Path) -> None:
    full = audit_path(hf_multirank.path).picked
    assert _status(full)["rng"] == "ok" and full.world_size == 4 and full.resumable
    built = builders.remove_rank_rng(_copy(hf_multirank, tmp_path), 2)
    audit = audit_path(built.path).picked
    assert _status(audit)["rng"] == "missing" and not audit.resumable
    finding = next(f for f in audit.findings if f.code == "CKPT005")
    assert finding.ranks == (2,) and finding.cause == "rng_not_restored"
    assert "INFO" in audit.component("rng").effect


def test_last_rank_missing_needs_the_world_size(hf_multirank: builders.Built,
                                               tmp_path: Path) -> None:
    with_args = builders.remove_rank_rng(_copy(hf_multirank, tmp_path, "a"), 3)
    audit = audit_path(with_args.path).picked  # training_args.bin says 4 processes
    assert _status(audit)["rng"] == "missing"
    assert next(f for f in audit.findings if f.code == "CKPT005").ranks == (3,)
    bare = builders.remove_rank_rng(_without_args(hf_multirank, tmp_path), 3)
    assert audit_path(bare.path).picked.world_size == 3  # the files alone cannot tell
    audit = audit_path(bare.path, world_size=4).picked
    assert _status(audit)["rng"] in ("missing", "inconsistent") and not audit.resumable


def test_world_size_from_rng_files_and_from_the_option(hf_multirank: builders.Built,
                                                       tmp_path: Path) -> None:
    multi = _without_args(hf_multirank, tmp_path)
    assert audit_path(multi.path).picked.world_size == 4
    assert audit_path(multi.path, world_size=4).resumable
    bad = audit_path(multi.path, world_size=2).picked
    assert _status(bad)["rng"] == "inconsistent" and "CKPT016" in _codes(bad)
    assert not bad.resumable


def test_world_size_from_training_args(hf_run: builders.Built) -> None:
    audit = audit_path(hf_run.path).picked
    assert audit.world_size == 1
    bad = audit_path(hf_run.path, world_size=8).picked
    assert "CKPT016" in _codes(bad)
    assert any("--world-size 8" in f.message for f in bad.findings)


def test_torn_save_without_trainer_state(hf_run: builders.Built, tmp_path: Path) -> None:
    built = builders.drop_trainer_state(_copy(hf_run, tmp_path))
    audit = audit_path(built.path).picked
    assert _status(audit)["trainer_state"] == "missing" and "CKPT007" in _codes(audit)
    assert not audit.resumable


def test_trainer_state_step_disagrees_with_folder(hf_run: builders.Built,
                                                  tmp_path: Path) -> None:
    built = builders.shift_trainer_state_step(_copy(hf_run, tmp_path), delta=3)
    audit = audit_path(built.path).picked
    assert _status(audit)["trainer_state"] == "inconsistent"
    assert {"CKPT015", "CKPT011"} <= _codes(audit)  # the optimizer counted 4, not 7
    assert "CKPT012" not in _codes(audit)  # the scheduler agrees with the optimizer


def test_truncated_and_zero_length_files_are_corrupt(hf_run: builders.Built,
                                                     tmp_path: Path) -> None:
    cut = builders.truncate(_copy(hf_run, tmp_path, "a"))
    audit = audit_path(cut.path).picked
    assert _status(audit)["weights"] == "corrupt" and not audit.resumable
    assert _codes(audit) & {"CKPT007", "CKPT020"}
    empty = builders.zero_length(_copy(hf_run, tmp_path, "b"), "optimizer.pt")
    audit = audit_path(empty.path).picked
    assert _status(audit)["optimizer"] == "corrupt" and "CKPT007" in _codes(audit)


def test_sharded_index_naming_a_missing_shard(tmp_path: Path) -> None:
    built = builders.hf_sharded_weights(tmp_path / "sharded")
    shard = built.detail["shards"][-1]
    (built.path / shard).unlink()
    audit = audit_path(built.path).picked
    assert _status(audit)["weights"] == "corrupt" and "CKPT021" in _codes(audit)
    assert any(shard in p for p in audit.problems)


def test_accelerate_statuses(accelerate_ckpt: builders.Built, tmp_path: Path) -> None:
    audit = audit_path(accelerate_ckpt.path).picked
    status = _status(audit)
    assert audit.layout == "accelerate" and audit.resumable
    assert status["trainer_state"] == status["training_args"] == "not_applicable"
    assert status["optimizer"] == status["scheduler"] == status["rng"] == "ok"
    if accelerate_ckpt.detail["stateful"]:
        assert status["data_position"] == "ok"
        assert "dl_state_dict.bin" in audit.component("data_position").files
    built = builders.remove(_copy(accelerate_ckpt, tmp_path), "random_states_0.pkl")
    audit = audit_path(built.path).picked
    assert _status(audit)["rng"] == "missing" and not audit.resumable


def test_plain_dict_with_stateful_loader(plain_stateful: builders.Built) -> None:
    audit = audit_path(plain_stateful.path).picked
    status = _status(audit)
    assert audit.layout == "torch" and audit.resumable and audit.step == 4
    assert status["grad_scaler"] == "ok" and status["rng"] == "ok"
    assert status["data_position"] == "ok"
    assert "StatefulDataLoader" in " ".join(audit.component("data_position").evidence) \
        or "dataloader" in " ".join(audit.component("data_position").evidence)


def test_plain_dict_without_data_state_keeps_only_a_counter(
        plain_no_data: builders.Built) -> None:
    audit = audit_path(plain_no_data.path).picked
    data = audit.component("data_position")
    assert data.status.value == "ok" and any("only a counter" in e for e in data.evidence)
    assert _status(audit)["scheduler"] == "ok"  # found under lr_scheduler


def test_lightning_holds_no_rng(lightning_ckpt: builders.Built) -> None:
    audit = audit_path(lightning_ckpt.path).picked
    assert audit.layout == "lightning"
    rng = audit.component("rng")
    assert rng.status.value == "missing" and not rng.required
    assert audit.resumable  # a warning: Lightning never saves RNG
    assert _status(audit)["optimizer"] == _status(audit)["scheduler"] == "ok"


def test_dcp_components_from_metadata(dcp_ckpt: builders.Built) -> None:
    audit = audit_path(dcp_ckpt.path).picked
    status = _status(audit)
    assert audit.layout == "dcp" and audit.world_size == 1
    assert status["weights"] == status["optimizer"] == status["trainer_state"] == "ok"
    assert status["scheduler"] == "ok"
    assert audit.resumable  # RNG and data position are warnings: DCP apps save them at will


def test_dcp_truncated_distcp(dcp_ckpt: builders.Built, tmp_path: Path) -> None:
    built = _copy(dcp_ckpt, tmp_path)
    distcp = next(built.path.glob("*.distcp"))
    distcp.write_bytes(distcp.read_bytes()[:100])
    audit = audit_path(built.path).picked
    assert "CKPT021" in _codes(audit) and _status(audit)["weights"] == "corrupt"


def test_deepspeed_statuses(deepspeed_ckpt: builders.Built, tmp_path: Path) -> None:
    audit = audit_path(deepspeed_ckpt.path).picked
    status = _status(audit)
    assert audit.resumable and audit.step == deepspeed_ckpt.global_step
    assert status["optimizer"] == status["scheduler"] == status["trainer_state"] == "ok"
    assert status["rng"] == "missing" and not audit.component("rng").required
    built = _copy(deepspeed_ckpt, tmp_path)
    tag = built.detail["tag"]
    (built.path / tag / "zero_pp_rank_1_mp_rank_00_optim_states.pt").unlink()
    audit = audit_path(built.path, world_size=2).picked
    assert "CKPT016" in _codes(audit) and not audit.resumable


def test_newest_resumable_is_named_when_the_newest_is_not(hf_run: builders.Built,
                                                          tmp_path: Path) -> None:
    built = builders.remove(_copy(hf_run, tmp_path), "optimizer.pt")
    report: AuditReport = audit_path(built.run_dir)
    assert Path(report.picked.path).name == built.path.name and not report.resumable
    oldest = hf_run.detail["checkpoints"][0]
    assert report.newest_resumable is not None
    assert Path(report.newest_resumable.path).name == oldest
    advice = [a for f in report.picked.findings for a in f.advice]
    assert f"resume from {oldest}, the newest complete one" in advice


def test_fp16_run_needs_its_grad_scaler(hf_run: builders.Built, tmp_path: Path) -> None:
    with_scaler = builders.hf_fp16(_copy(hf_run, tmp_path, "a"), scaler=True)
    audit = audit_path(with_scaler.path).picked
    assert _status(audit)["grad_scaler"] == "ok" and audit.resumable
    without = builders.hf_fp16(_copy(hf_run, tmp_path, "b"), scaler=False)
    audit = audit_path(without.path).picked
    assert _status(audit)["grad_scaler"] == "missing" and not audit.resumable
    finding = next(f for f in audit.findings if f.code == "CKPT004")
    assert finding.cause == "grad_scaler_not_restored"
    assert "65536" in audit.component("grad_scaler").effect


def test_lora_adapter_in_a_trainer_folder_counts_as_weights(hf_run: builders.Built,
                                                            tmp_path: Path) -> None:
    built = _copy(hf_run, tmp_path)
    adapter = builders.lora_adapter(tmp_path / "adapter")
    (built.path / "model.safetensors").unlink()
    for name in ("adapter_model.safetensors", "adapter_config.json"):
        (built.path / name).write_bytes((adapter.path / name).read_bytes())
    audit = audit_path(built.path).picked
    weights = audit.component("weights")
    assert weights.status.value == "ok" and "adapter_model.safetensors" in weights.files
    # the full model's optimizer does not match an adapter's shapes: a mixed-up folder
    assert "CKPT014" in {f.code for f in audit.findings}


def test_fsdp_sharded_state_in_a_trainer_folder(hf_run: builders.Built, tmp_path: Path) -> None:
    import warnings

    torch = pytest.importorskip("torch")
    dcp = pytest.importorskip("torch.distributed.checkpoint")
    built = _copy(hf_run, tmp_path)
    for name in ("model.safetensors", "optimizer.pt"):
        (built.path / name).unlink()
    model = torch.nn.Linear(4, 2)
    opt = torch.optim.AdamW(model.parameters())
    model(torch.randn(3, 4)).sum().backward()
    opt.step()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        dcp.save({"model": model.state_dict()},
                 checkpoint_id=str(built.path / "pytorch_model_fsdp_0"))
        dcp.save({"optimizer": opt.state_dict()}, checkpoint_id=str(built.path / "optimizer_0"))
    audit = audit_path(built.path).picked
    assert _status(audit)["weights"] == _status(audit)["optimizer"] == "ok"
    assert "optimizer_0/.metadata" in audit.component("optimizer").files
    shard = next((built.path / "optimizer_0").glob("*.distcp"))
    shard.write_bytes(shard.read_bytes()[:10])
    audit = audit_path(built.path).picked
    assert _status(audit)["optimizer"] == "corrupt" and "CKPT021" in _codes(audit)


def test_stop_at_resumable_reads_back_only_to_a_good_one(hf_run: builders.Built,
                                                         tmp_path: Path) -> None:
    names = hf_run.detail["checkpoints"]
    report = audit_path(hf_run.run_dir, stop_at_resumable=True)
    assert [Path(a.path).name for a in report.checkpoints] == [names[-1]]
    built = builders.remove(_copy(hf_run, tmp_path), "scheduler.pt")
    report = audit_path(built.run_dir, stop_at_resumable=True)
    assert [Path(a.path).name for a in report.checkpoints] == names[-2:]
    assert Path(report.newest_resumable.path).name == names[-2]


def test_saved_lr_against_the_configured_hf_schedule(hf_run: builders.Built,
                                                     tmp_path: Path) -> None:
    torch = pytest.importorskip("torch")
    first = hf_run.run_dir / hf_run.detail["checkpoints"][0]
    audit = audit_path(first).picked
    assert any("matches training_args.bin's schedule" in e
               for e in audit.component("scheduler").evidence)
    built = _copy(hf_run, tmp_path)
    folder = built.run_dir / hf_run.detail["checkpoints"][0]
    args = torch.load(folder / "training_args.bin", weights_only=False)  # the Trainer's own
    args.warmup_steps = 3
    torch.save(args, folder / "training_args.bin")
    audit = audit_path(folder).picked
    assert _status(audit)["scheduler"] == "inconsistent"
    finding = next(f for f in audit.findings if f.code == "CKPT013")
    assert "training_args.bin's schedule" in finding.message and "warmup 3" in finding.message
