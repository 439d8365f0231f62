"""Device and framework failure messages that decide a verdict: Megatron-LM's check of the
gradient buckets (``found NaN in local grad norm``) is a NaN failure, not a crash; an NVIDIA
Xid line in the job log is a device failure (crash, cause ``cuda_error``). The logs follow
the real formats: Megatron's ``training_log`` iteration line and the assertion of
``param_and_grad_buffer.py`` (``Rank {global_rank}: found NaN in local grad norm in backward
pass before data-parallel communication collective. Device: {device}, node: {host}``), and
the driver's ``NVRM: Xid (PCI:<bus id>): <code>, pid=..., name=..., <text>`` kernel line."""

from __future__ import annotations

from pathlib import Path

import autopsy
from autopsy.api import diagnose
from autopsy.model import Family

_FRAMES = '''Traceback (most recent call last):
  File "/workspace/Megatron-LM/pretrain_gpt.py", line 243, in <module>
    pretrain(train_valid_test_datasets_provider,
  File "/workspace/Megatron-LM/megatron/training/training.py", line 1153, in train
    train_step(forward_step_func,
  File "/workspace/Megatron-LM/megatron/core/distributed/param_and_grad_buffer.py", line 114, \
in start_grad_sync
    assert not norm.isnan(), (
'''


def _megatron_log(error: str) -> str:
    lines = [f" iteration      {i}/  500000 | consumed samples:       {i * 512} | elapsed time "
             f"per iteration (ms): 1324.5 | learning rate: 2.999E-04 | global batch size:   512"
             f" | lm loss: {2.61 - (i - 850) * 0.01:.6E} | loss scale: 1.0 | grad norm: 0.390 |"
             f" number of skipped iterations:   0 | number of nan iterations:   0 |"
             for i in range(850, 860)]
    lines += [f"[rank13]: {line}" for line in (_FRAMES + error).splitlines()]
    return "\n".join(lines) + "\n"


def test_megatron_nan_in_local_grad_norm_is_a_nan_failure(tmp_path: Path) -> None:
    (tmp_path / "train.log").write_text(_megatron_log(
        "AssertionError: Rank 13: found NaN in local grad norm in backward pass before "
        "data-parallel communication collective. Device: 5, node: node-15-11"))
    d = diagnose(autopsy.load_run(tmp_path))
    assert (d.verdict.family, d.verdict.code) == (Family.NAN_INF, "NAN006")
    assert not [f for f in d.findings if f.family is Family.CRASH]


def test_megatron_rerun_machine_message_is_a_nan_failure(tmp_path: Path) -> None:
    (tmp_path / "train.log").write_text(_megatron_log(
        "RuntimeError: Rank 13, node node-15-11, device 5, iteration 860: Unexpected result "
        "nan (message='found NaN in local grad norm for bucket #0 in backward pass before "
        "data-parallel communication collective')"))
    assert diagnose(autopsy.load_run(tmp_path)).verdict.family is Family.NAN_INF


def test_a_plain_assertion_stays_a_crash(tmp_path: Path) -> None:
    # near miss: the same traceback with another assertion is a crash, not a NaN
    (tmp_path / "train.log").write_text(_megatron_log(
        "AssertionError: micro batch size must be divisible by the data-parallel size"))
    d = diagnose(autopsy.load_run(tmp_path))
    assert d.verdict.family is Family.CRASH


def test_an_xid_line_is_a_device_failure(tmp_path: Path) -> None:
    (tmp_path / "train.log").write_text(
        "[Mon Nov 20 03:12:44 2023] NVRM: Xid (PCI:0000:3b:00): 79, pid=28472, name=python, "
        "GPU has fallen off the bus.\n"
        "[Mon Nov 20 03:12:44 2023] NVRM: GPU at PCI:0000:3b:00: "
        "GPU-5e1a3c1d-61cb-9b77-1a0f-8d8f5b9d2c11\n")
    d = diagnose(autopsy.load_run(tmp_path))
    assert (d.verdict.family, d.verdict.cause) == (Family.CRASH, "cuda_error")
    assert "79" in d.verdict.message
    (f,) = [f for f in d.findings if f.code == d.verdict.code]
    assert any("drain the node" in a for a in f.advice)


def test_a_cuda_error_crash_says_how_to_find_the_kernel(tmp_path: Path) -> None:
    (tmp_path / "train.log").write_text(
        "Traceback (most recent call last):\n  File \"train.py\", line 9, in <module>\n"
        "    loss.backward()\nRuntimeError: CUDA error: an illegal memory access was "
        "encountered\n")
    d = diagnose(autopsy.load_run(tmp_path))
    assert (d.verdict.family, d.verdict.cause) == (Family.CRASH, "cuda_error")
    (f,) = [f for f in d.findings if f.code == d.verdict.code]
    assert any("CUDA_LAUNCH_BLOCKING=1" in a for a in f.advice)
