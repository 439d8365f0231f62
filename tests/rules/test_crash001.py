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
