"""Hostile pickles are reported and never run; benign globals are not flagged; the audit
writes nothing; ``--scan-values`` finds NaN moments."""

from __future__ import annotations

import os
from pathlib import Path

import builders
import pytest

from autopsy.ckpt import CheckpointAudit, audit_path


def _codes(audit: CheckpointAudit) -> set[str]:
    return {f.code for f in audit.findings}


def _tree(root: Path) -> dict[str, tuple[int, int]]:
    """Every path under ``root`` with its size and mtime (ns)."""
    out = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            p = Path(dirpath) / name
            st = p.stat()
            out[str(p.relative_to(root))] = (st.st_size, st.st_mtime_ns)
    return out


@pytest.mark.parametrize(("name", "target", "component"), [
    ("training_args.bin", "os.system", "training_args"),
    ("rng_state.pth", "builtins.exec", "rng"),
    ("optimizer.pt", "os.system", "optimizer"),
])
def test_hostile_pickle_is_reported_and_never_runs(hf_run: builders.Built, tmp_path: Path,
                                                   name: str, target: str,
                                                   component: str) -> None:
    marker = tmp_path / "PWNED"
    built = builders.copy_built(hf_run, tmp_path / "run")
    built = builders.hostile_pickle(built, name, target=target, marker=marker)
    assert built.detail["global_name"] in builders.pickle_globals(built.file(name))
    report = audit_path(built.run_dir, scan_values=True)
    audit = report.picked
    assert not marker.exists()
    comp = audit.component(component)
    assert comp is not None and comp.status.value == "unsafe"
    assert not audit.resumable and "CKPT030" in _codes(audit)
    finding = next(f for f in audit.findings if f.code == "CKPT030")
    assert finding.cause == "unsafe_pickle" and name in finding.message
    assert built.detail["global_name"] in finding.message
    assert report.newest_resumable is not None  # the older checkpoint is untouched


class _Payload:
    """Pickles as a call of os.system that would create the marker."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self) -> tuple[object, tuple[str]]:
        return os.system, (f"touch {self.marker}",)


def test_hostile_raw_pickle_and_legacy_torch_file(tmp_path: Path) -> None:
    torch = pytest.importorskip("torch")
    marker = tmp_path / "PWNED"
    legacy = tmp_path / "legacy.pt"
    torch.save({"model": {"w": torch.zeros(2)}, "step": 3, "hook": _Payload(marker)}, legacy,
               _use_new_zipfile_serialization=False)
    audit = audit_path(legacy).picked
    assert not marker.exists() and "CKPT030" in _codes(audit) and not audit.resumable
    assert any("system" in f.message for f in audit.findings if f.code == "CKPT030")
    raw = tmp_path / "raw.pkl"
    import pickle

    raw.write_bytes(builders.splice_payload(pickle.dumps({"step": 1}, protocol=2),
                                            "builtins.exec", marker))
    audit = audit_path(raw).picked
    assert not marker.exists() and "CKPT030" in _codes(audit)


def test_benign_globals_are_not_flagged(hf_run: builders.Built, dcp_ckpt: builders.Built,
                                        accelerate_ckpt: builders.Built) -> None:
    # numpy arrays in rng_state.pth, TrainingArguments, DCP's torch.serialization._get_layout
    for path in (hf_run.path, dcp_ckpt.path, accelerate_ckpt.path):
        audit = audit_path(path).picked
        assert "CKPT030" not in _codes(audit), path
        assert all(c.status.value != "unsafe" for c in audit.components)


def test_the_audit_writes_nothing(hf_run: builders.Built, tmp_path: Path) -> None:
    built = builders.copy_built(hf_run, tmp_path / "run")
    before = _tree(built.run_dir)
    audit_path(built.run_dir)
    audit_path(built.path, scan_values=True, world_size=2)
    assert _tree(built.run_dir) == before


def test_nan_moments_found_with_scan_values(hf_run: builders.Built, tmp_path: Path) -> None:
    built = builders.nan_moments(builders.copy_built(hf_run, tmp_path / "run"))
    assert audit_path(built.path).picked.resumable  # metadata alone cannot see it
    report = audit_path(built.run_dir, scan_values=True)
    audit = report.picked
    assert not audit.resumable
    assert audit.component("optimizer").status.value == "corrupt"
    finding = next(f for f in audit.findings if f.code == "CKPT031")
    assert finding.cause == "nonfinite_state"
    key = built.detail["key"]
    assert any(e.key == key and e.numbers["nan"] == 1 for e in finding.evidence)
    assert "every resume" in finding.message
    assert report.newest_resumable is not None


def test_near_miss_finite_values_pass_the_scan(hf_run: builders.Built) -> None:
    audit = audit_path(hf_run.path, scan_values=True).picked
    assert audit.resumable and "CKPT031" not in _codes(audit)
    assert any("finite" in e for e in audit.component("optimizer").evidence)
    assert any("finite" in e for e in audit.component("weights").evidence)


def test_nan_in_a_plain_dict_and_in_lightning(plain_stateful: builders.Built,
                                              lightning_ckpt: builders.Built,
                                              tmp_path: Path) -> None:
    for built in (plain_stateful, lightning_ckpt):
        broken = builders.nan_moments(builders.copy_built(built, tmp_path / built.layout))
        audit = audit_path(broken.path, scan_values=True).picked
        assert "CKPT031" in _codes(audit), built.layout
        finding = next(f for f in audit.findings if f.code == "CKPT031")
        assert any(e.key == broken.detail["key"] for e in finding.evidence)


@pytest.mark.parametrize("opcode", builders.OPCODES)
@pytest.mark.parametrize("container", ["zip", "legacy"])
def test_payload_by_every_opcode_in_zip_and_legacy_files(tmp_path: Path, opcode: str,
                                                         container: str) -> None:
    torch = pytest.importorskip("torch")
    marker = tmp_path / "PWNED"
    folder = tmp_path / "ckpt"
    folder.mkdir()
    path = folder / "checkpoint.pt"
    torch.save({"model": {"w": torch.ones(3)}, "step": 2}, path,
               _use_new_zipfile_serialization=container == "zip")
    built = builders.Built(path=path, layout="plain_torch", global_step=2, files=(path.name,))
    builders.hostile_pickle(built, path.name, target="os.system", marker=marker, opcode=opcode)
    report = audit_path(path, scan_values=True)
    assert not marker.exists()
    assert "CKPT030" in _codes(report.picked) and not report.resumable
    assert any("system" in f.message for f in report.picked.findings)


@pytest.mark.parametrize("protocol", range(6))
@pytest.mark.parametrize("target", sorted(builders.DANGEROUS))
def test_payload_in_every_pickle_protocol(tmp_path: Path, protocol: int, target: str) -> None:
    import pickle

    marker = tmp_path / "PWNED"
    path = tmp_path / "state.pkl"
    nested = {"model": {"w": [1.0, 2.0]}, "step": 5, "deep": [[{"x": (1, 2)}]]}
    path.write_bytes(builders.splice_payload(pickle.dumps(nested, protocol=protocol), target,
                                             marker))
    audit = audit_path(path).picked
    assert not marker.exists()
    # a function no denylist names is unverifiable (CKPT032), the others dangerous
    assert ("CKPT032" if target == "uuid._get_command_stdout" else "CKPT030") in _codes(audit)
    assert ".".join(builders.DANGEROUS[target]) in " ".join(f.message for f in audit.findings)


#: (target, mask, opcode) of the payloads a denylist let through: a dotted name resolved
#: through a trusted module, a standard-library function that runs a command, and calls
#: masked by bytes that make the parse fail after them.
_EVASIONS = [
    ("torch.os.system", "none", "stack_global"),
    ("torch.os.system", "none", "reduce"),
    ("uuid._get_command_stdout", "none", "reduce"),
    ("os.system", "bad_opcode", "reduce"),
    ("os.system", "build_on_list", "reduce"),
    ("os.system", "ordered_dict_build", "reduce"),
    ("uuid._get_command_stdout", "bad_opcode", "stack_global"),
]


def _torch_load_runs_it(path: Path, marker: Path) -> bool:
    """Whether torch.load(weights_only=False) runs the payload (in a child process; the
    payload only creates ``marker`` in the test's temp folder)."""
    import subprocess
    import sys

    subprocess.run([sys.executable, "-c", "import sys, torch\ntry:\n    torch.load(sys.argv[1], "
                    "weights_only=False)\nexcept Exception:\n    pass\n", str(path)],
                   check=False, capture_output=True, timeout=120)
    return marker.exists()


@pytest.mark.parametrize(("target", "mask", "opcode"), _EVASIONS)
@pytest.mark.parametrize("name", ["optimizer.pt", "training_args.bin"])
def test_payloads_a_denylist_misses_are_never_called_safe(
        hf_run: builders.Built, tmp_path: Path, name: str, target: str, mask: str,
        opcode: str) -> None:
    marker = tmp_path / "PWNED"
    built = builders.copy_built(hf_run, tmp_path / "run")
    built = builders.hostile_pickle(built, name, target=target, marker=marker, mask=mask,
                                    opcode=opcode)
    audit = audit_path(built.run_dir).picked
    assert not marker.exists()  # autopsy ran nothing
    assert not audit.resumable
    assert _codes(audit) & {"CKPT030", "CKPT032"}
    shown = " ".join(f.message for f in audit.findings if f.code in ("CKPT030", "CKPT032"))
    assert ".".join(builders.DANGEROUS[target]) in shown
    if mask != "none":  # the parse fails after the call: unreadable, and still reported
        assert "CKPT020" in _codes(audit)
    if target == "torch.os.system":  # an attribute path to os: dangerous, not just unknown
        assert "CKPT030" in _codes(audit)
    # the payload is real: torch.load(weights_only=False) runs it
    assert _torch_load_runs_it(built.file(name), marker)


def test_globals_real_checkpoints_hold_are_not_flagged(hf_run: builders.Built) -> None:
    audit = audit_path(hf_run.run_dir).picked
    assert not _codes(audit) & {"CKPT030", "CKPT032"}


def test_a_class_of_the_users_own_is_unverifiable_not_dangerous(hf_run: builders.Built,
                                                               tmp_path: Path) -> None:
    import torch

    built = builders.copy_built(hf_run, tmp_path / "run")
    path = built.file("training_args.bin")
    args = torch.load(path, weights_only=False)  # the Trainer's own file
    torch.save({"args": args, "extra": _UserConfig(3)}, path)
    audit = audit_path(built.run_dir).picked
    assert "CKPT032" in _codes(audit) and "CKPT030" not in _codes(audit)
    finding = next(f for f in audit.findings if f.code == "CKPT032")
    assert "_UserConfig" in finding.message and finding.cause == "unsafe_pickle"


class _UserConfig:
    """A class of the test module's own, pickled by reference."""

    def __init__(self, depth: int) -> None:
        self.depth = depth


def test_an_unreadable_single_file_still_names_the_payload(tmp_path: Path) -> None:
    import pickle

    marker = tmp_path / "PWNED"
    path = tmp_path / "state.pkl"
    path.write_bytes(builders.splice_payload(pickle.dumps({"step": 5}, protocol=4),
                                             "os.system", marker, mask="bad_opcode"))
    report = audit_path(path)  # unreadable, and the global before the failure is named
    assert not report.resumable
    note = " ".join(report.problems)
    assert "posix.system" in note and "never did" in note
    assert {"CKPT020", "CKPT030"} <= {f.code for f in report.picked.findings}
    assert not marker.exists()


def _megatron_checkpoint(path: Path, scheduler: bool) -> None:
    """A ``model_optim_rng.pt`` with the keys Megatron-LM's ``save_checkpoint`` writes (args,
    checkpoint_version, iteration, model, optimizer, opt_param_scheduler, rng_state), the
    scheduler's state as ``OptimizerParamScheduler.state_dict()`` returns it."""
    import argparse
    import random

    import numpy as np
    import torch

    model = torch.nn.Linear(4, 4)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    for _ in range(3):
        opt.zero_grad()
        model(torch.randn(2, 4)).sum().backward()
        opt.step()
    state = {
        "args": argparse.Namespace(lr=1e-3, train_iters=1000, micro_batch_size=2),
        "checkpoint_version": 3.0, "iteration": 3, "model": model.state_dict(),
        "optimizer": opt.state_dict(),
        "rng_state": [{"random_rng_state": random.getstate(),
                       "np_rng_state": np.random.get_state(),
                       "torch_rng_state": torch.get_rng_state(), "cuda_rng_state": None,
                       "rng_tracker_states": {}}],
    }
    if scheduler:
        state["opt_param_scheduler"] = {
            "max_lr": 1e-3, "lr_warmup_steps": 100, "num_steps": 3, "lr_decay_style": "cosine",
            "lr_decay_steps": 1000, "min_lr": 1e-5, "start_wd": 0.01, "end_wd": 0.01,
            "wd_incr_style": "constant", "wd_incr_steps": 1000}
    path.parent.mkdir(parents=True, exist_ok=True)
    torch.save(state, path)


def test_megatron_scheduler_state_is_read(tmp_path: Path) -> None:
    path = tmp_path / "iter_0000003" / "mp_rank_00" / "model_optim_rng.pt"
    _megatron_checkpoint(path, scheduler=True)
    audit = audit_path(path).picked
    sched = audit.component("scheduler")
    assert sched is not None and sched.status.value == "ok"
    assert any("opt_param_scheduler" in e for e in sched.evidence)
    assert audit.resumable and "CKPT032" not in _codes(audit)  # argparse.Namespace is fine
    _megatron_checkpoint(path, scheduler=False)
    # without the key a plain torch.save dict may simply have no scheduler
    assert audit_path(path).picked.component("scheduler").status.value == "not_applicable"


def test_a_build_into_an_ordered_dict_keeps_the_unsafe_finding(tmp_path: Path) -> None:
    """``os.system`` called, then an OrderedDict whose BUILD state is ``{"items": 0}``
    (issue 19): the audit once failed on ``.items()`` ("'int' object is not callable,
    please report this input") and the unsafe global was lost."""
    import zipfile

    payload = (b"\x80\x02cos\nsystem\nX\x04\x00\x00\x00trueR0"
               b"ccollections\nOrderedDict\n)R}X\x05\x00\x00\x00itemsK\x00sb.")
    path = tmp_path / "model.pt"
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr("archive/data.pkl", payload)
        zf.writestr("archive/version", "3\n")
    audit = audit_path(path).picked
    assert "CKPT030" in _codes(audit)
    assert "CKPT020" not in _codes(audit)
    assert not audit.resumable
