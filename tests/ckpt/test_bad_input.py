"""Damaged and odd inputs give statuses and findings, never a traceback or a hang."""

from __future__ import annotations

import json
import os
import pickle
import random
from pathlib import Path
from typing import Any

import builders
import pytest

from autopsy.ckpt import audit_path
from autopsy.errors import NothingReadable


def _status(path: Path, **kwargs: Any) -> dict[str, str]:
    audit = audit_path(path, **kwargs).picked
    return {c.name: c.status.value for c in audit.components}


def test_garbage_in_every_file_of_a_trainer_folder(tmp_path: Path) -> None:
    folder = tmp_path / "checkpoint-10"
    folder.mkdir()
    rnd = random.Random(0)
    (folder / "optimizer.pt").write_bytes(bytes(rnd.randrange(256) for _ in range(4096)))
    (folder / "scheduler.pt").write_bytes(pickle.dumps([1, 2, 3]))
    (folder / "training_args.bin").write_bytes(pickle.dumps(7))
    (folder / "rng_state.pth").write_bytes(b"")
    (folder / "trainer_state.json").write_text("{not json")
    (folder / "model.safetensors").write_bytes(b"\xff" * 8 + b"{}")
    report = audit_path(folder, scan_values=True)
    status = {c.name: c.status.value for c in report.picked.components}
    assert not report.resumable
    assert status["optimizer"] == status["trainer_state"] == status["weights"] == "corrupt"
    assert status["rng"] == "corrupt"
    assert report.picked.problems


@pytest.mark.parametrize("state", [
    [], {"global_step": "abc"}, {"global_step": 1e300}, {"global_step": None},
    {"global_step": -5, "log_history": "x"},
])
def test_odd_trainer_state_values(hf_run: builders.Built, tmp_path: Path,
                                  state: Any) -> None:
    built = builders.copy_built(hf_run, tmp_path / "run")
    (built.path / "trainer_state.json").write_text(json.dumps(state))
    audit_path(built.run_dir)  # no exception
    audit_path(built.path, world_size=3, scan_values=True)


@pytest.mark.parametrize("optimizer", [
    {"state": [], "param_groups": "x"},
    {"state": {0: {"step": "seven", "exp_avg": 1}}, "param_groups": [{"params": [0],
                                                                       "lr": "big"}]},
    {"state": {}, "param_groups": [{"params": None, "betas": (0.9, 0.99)}]},
    {"state": {0: None}, "param_groups": [None, {"params": [0, [1]]}]},
])
def test_odd_optimizer_and_scheduler_values(tmp_path: Path, optimizer: dict[str, Any]) -> None:
    torch = pytest.importorskip("torch")
    path = tmp_path / "ckpt.pt"
    torch.save({"model": {"w": torch.zeros(2)}, "optimizer": optimizer, "step": 3,
                "scheduler": {"last_epoch": "x", "_step_count": None, "base_lrs": 5,
                              "_last_lr": ["a"]}}, path)
    report = audit_path(path, world_size=2, scan_values=True)
    assert report.picked.component("optimizer") is not None


def test_fifo_and_symlink_loop_do_not_hang(tmp_path: Path) -> None:
    run = tmp_path / "run"
    folder = run / "checkpoint-3"
    folder.mkdir(parents=True)
    os.mkfifo(folder / "optimizer.pt")
    (folder / "trainer_state.json").write_text(json.dumps({"global_step": 3}))
    (run / "loop").symlink_to(run, target_is_directory=True)
    status = _status(run)
    assert status["optimizer"] == "corrupt"


def test_fifos_a_run_dir_search_meets_do_not_block(tmp_path: Path) -> None:
    # A loose FIFO named like a checkpoint file is sniffed for its first bytes, and a
    # DeepSpeed "latest" FIFO is read for its tag: both opened, they would block forever.
    run = tmp_path / "run"
    run.mkdir()
    os.mkfifo(run / "model.pt")
    with pytest.raises(NothingReadable, match="no checkpoint found"):
        audit_path(run)
    ds = tmp_path / "ds"
    (ds / "global_step5").mkdir(parents=True)
    os.mkfifo(ds / "latest")
    states = ds / "global_step5" / "mp_rank_00_model_states.pt"
    states.write_bytes(pickle.dumps({"module": {}}, protocol=2))
    assert Path(audit_path(ds).picked.path).name == "global_step5"


def test_nested_too_deep_pickle_is_a_problem(tmp_path: Path) -> None:
    obj: Any = "leaf"
    for _ in range(300):
        obj = [obj]
    path = tmp_path / "deep.pkl"
    path.write_bytes(pickle.dumps({"step": 1, "x": obj}, protocol=4))
    report = audit_path(path)  # found and unreadable: not resumable, with the reason
    assert not report.resumable and report.picked.components
    assert any("could be read" in p and "deep" in p for p in report.problems)
    assert {f.code for f in report.picked.findings} == {"CKPT020"}


def test_an_unexpected_failure_is_a_finding_not_a_crash(tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    torch = pytest.importorskip("torch")
    path = tmp_path / "ckpt.pt"
    torch.save({"model": {"w": torch.zeros(2)}, "step": 1}, path)
    from autopsy.ckpt import audit as audit_module

    def broken(*_: Any) -> None:
        raise RuntimeError("boom")

    monkeypatch.setattr(audit_module, "_gather", broken)
    report = audit_path(path)
    assert not report.resumable
    assert "boom" in report.picked.findings[0].message


def test_containers_shared_through_the_memo_are_walked_once(tmp_path: Path) -> None:
    # A 2 kB file: each list holds the one below ten times, twelve deep. Walked path by
    # path that is 10**12 visits; each shared container is walked once instead.
    torch = pytest.importorskip("torch")
    nested: Any = [torch.zeros(1)]
    for _ in range(12):
        nested = [nested] * 10
    shared = {"x": 1}
    for _ in range(7):
        shared = {str(i): shared for i in range(100)}
    path = tmp_path / "dag.pt"
    torch.save({"model": nested, "extra": shared,
                "optimizer": {"state": {0: {"exp_avg": nested}}, "param_groups": []}}, path)
    assert path.stat().st_size < 64 << 10
    audit = audit_path(path, scan_values=True).picked
    status = {c.name: c.status.value for c in audit.components}
    assert status["weights"] == status["optimizer"] == "ok"


def test_a_fifo_in_a_checkpoint_is_named_for_what_it_is(tmp_path) -> None:
    import os

    from autopsy.api import audit_checkpoint

    ckpt = tmp_path / "checkpoint-3"
    ckpt.mkdir()
    os.mkfifo(ckpt / "optimizer.pt")
    (ckpt / "trainer_state.json").write_text('{"global_step": 3, "log_history": []}')
    report = audit_checkpoint(tmp_path)
    opt = next(c for c in report.picked.components if c.name == "optimizer")
    assert opt.status.value == "corrupt"
    assert any("not a regular file" in p for p in report.picked.problems)


def test_fifty_thousand_overlapping_safetensors_entries_are_one_problem(tmp_path: Path) -> None:
    # a 3 MB header whose 50,000 entries all point at the same 4 bytes (issue 19): one
    # counted problem with examples, not a line per pair (the report was 99 MB)
    import json
    import struct

    from autopsy.formats.safetensors import MAX_LISTED, read_safetensors_meta

    n = 50_000
    header = json.dumps({f"t{i}": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]}
                         for i in range(n)}).encode()
    path = tmp_path / "model.safetensors"
    path.write_bytes(struct.pack("<Q", len(header)) + header + b"\0" * 4)
    meta = read_safetensors_meta(path)
    overlaps = [p for p in meta.problems if "overlap" in p]
    assert len(overlaps) == 1 and overlaps[0].startswith(f"{n - 1:,} pairs of tensors overlap")
    assert overlaps[0].count(" overlap (bytes") == MAX_LISTED
    report = audit_path(path)
    assert not report.resumable
    assert sum(len(p) for c in report.checkpoints for p in c.problems) < 10_000
