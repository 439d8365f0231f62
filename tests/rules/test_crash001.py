"""CRASH001 rank-exception: the earliest exception of its own class is the root."""

from __future__ import annotations

from pathlib import Path

import pytest

import autopsy
from autopsy.api import diagnose
from autopsy.model import Family, Finding
from autopsy.rules.engine import Diagnosis

ROOT = Path(__file__).resolve().parents[2]
SAMPLES = ROOT / "sample_runs"
FIXTURES = ROOT / "tests" / "fixtures" / "ranklogs"


def _diagnose(path: Path) -> Diagnosis:
    if not path.exists():
        pytest.fail(f"{path.name} is not there")
    return diagnose(autopsy.load_run(path))


def _crash(d: Diagnosis) -> list[Finding]:
    return [f for f in d.findings if f.code == "CRASH001"]


def test_fires_on_the_rank_exception_sample() -> None:
    d = _diagnose(SAMPLES / "ddp_rank_exception")
    v = d.verdict
    assert (v.code, v.family, v.cause, v.step, v.ranks) == (
        "CRASH001", Family.CRASH, "exception", 15, (2,))
    text = " ".join(e.summary for e in _crash(d)[0].evidence)
    assert "ValueError" in text and "check_batch" in text
    assert "ranks 0,1,3 then failed with Connection closed by peer" in text


def test_fires_on_srun_layout_and_says_when_torchelastic_agrees() -> None:
    d = _diagnose(FIXTURES / "layouts_srun_mpirun_pdsh")
    assert (d.verdict.code, d.verdict.ranks, d.verdict.step) == ("CRASH001", (1,), 11)
    d = _diagnose(FIXTURES / "torchrun_logdir_two_attempts")
    assert d.verdict.code == "CRASH001" and d.verdict.ranks == (1,)
    assert any("also names rank 1" in e.summary for e in _crash(d)[0].evidence)


def test_fires_on_a_single_process_traceback(tmp_path: Path) -> None:
    log = tmp_path / "train.log"
    log.write_text(
        "{'loss': 2.3, 'learning_rate': 5e-05, 'epoch': 0.1}\n"
        "Traceback (most recent call last):\n"
        '  File "/workspace/train.py", line 12, in <module>\n'
        "    main()\n"
        '  File "/workspace/train.py", line 9, in main\n'
        "    raise KeyError('input_ids')\n"
        "KeyError: 'input_ids'\n"
    )
    run = autopsy.load_run(tmp_path)
    if run.events.empty:
        pytest.fail("the text reader does not read this layout")
    found = _crash(diagnose(run))
    assert found and found[0].ranks == () and found[0].cause == "exception"


def test_near_miss_passes_when_every_traceback_is_a_timeout() -> None:
    for name in ("ddp_rank_stall_timeout", "ddp_uneven_batches",
                 "ddp_collective_mismatch_silent"):
        assert not _crash(_diagnose(SAMPLES / name)), name


def test_near_miss_passes_over_oom_and_host_kill_tracebacks() -> None:
    for name in ("nccl_watchdog_timeout_rank3_oom", "cuda_oom_old_format",
                 "cuda_oom_2_0_format", "host_oom_killed", "messy_bytes"):
        assert not _crash(_diagnose(FIXTURES / name)), name


def test_near_miss_passes_over_collective_mismatch_and_healthy() -> None:
    assert not _crash(_diagnose(SAMPLES / "ddp_collective_mismatch_detail"))
    assert not _crash(_diagnose(SAMPLES / "ddp_healthy_4ranks"))
    assert not _crash(_diagnose(SAMPLES / "healthy_hf_trainer"))


def _steps(first: int, last: int) -> str:
    return "".join(f"step {s} loss {2.5 - s / 100:.4f} lr 0.0001\n" for s in range(first, last + 1))


def test_the_last_traceback_of_a_rank_decides_not_one_it_caught_earlier(tmp_path: Path) -> None:
    """A rank that logged a caught error (a checkpoint save that failed) and trained on, then died:
    the exception that ended it is the verdict, at its own step, not a "went on" warning."""
    (tmp_path / "train.log").write_text(
        _steps(1, 20)
        + "Traceback (most recent call last):\n"
        '  File "/workspace/train.py", line 120, in save_checkpoint\n'
        "    torch.save(state, path)\n"
        "OSError: [Errno 28] No space left on device\n"
        + _steps(21, 40)
        + "Traceback (most recent call last):\n"
        '  File "/workspace/train.py", line 88, in <module>\n'
        "    loss.backward()\n"
        "RuntimeError: CUDA error: an illegal memory access was encountered\n"
    )
    d = diagnose(autopsy.load_run(tmp_path))
    assert (d.verdict.code, d.verdict.cause, d.verdict.step) == ("CRASH001", "cuda_error", 41)
    assert "illegal memory access" in d.verdict.message


def test_a_device_side_assert_takes_its_cause_from_the_assertion_printed_before_it(
        tmp_path: Path) -> None:
    """The kernel's assertion lines come before the RuntimeError that ends the rank; they
    say what was asserted (a label id out of range), the RuntimeError only that it was."""
    assertion = ("/opt/conda/conda-bld/pytorch_1670525541990/work/aten/src/ATen/native/cuda/"
                 "Loss.cu:242: nll_loss_forward_reduce_cuda_kernel_2d: block: [0,0,0], thread: "
                 "[{t},0,0] Assertion `t >= 0 && t < n_classes` failed.\n")
    (tmp_path / "train.log").write_text(
        _steps(1, 5) + "".join(assertion.format(t=t) for t in range(3))
        + "Traceback (most recent call last):\n"
        '  File "/workspace/train.py", line 51, in <module>\n'
        "    loss = criterion(out, target)\n"
        "RuntimeError: CUDA error: device-side assert triggered\n"
        "CUDA kernel errors might be asynchronously reported at some other API call, so the "
        "stacktrace below might be incorrect.\n"
    )
    d = diagnose(autopsy.load_run(tmp_path))
    assert (d.verdict.code, d.verdict.cause) == ("CRASH001", "label_out_of_range")
    assert "device-side assert triggered" in d.verdict.message
