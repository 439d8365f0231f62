"""CRASH002 process-died: a segfault, a device or NCCL failure, a scheduler kill, with no
exception of the run's own. Fixtures: public runs of the corpus's dev half."""

from __future__ import annotations

from pathlib import Path

import pytest
from repo_paths import public_run

import autopsy
from autopsy.api import diagnose
from autopsy.model import Family
from autopsy.rules.engine import Diagnosis


def _diagnose(name: str) -> Diagnosis:
    return diagnose(autopsy.load_run(public_run(name)))


@pytest.mark.parametrize(("name", "cause"), [
    ("keras_segfault_first_epoch_gpu_speaker_recognition_issue_51", "segfault"),
    ("kohya_sdxl_lora_accelerate_access_violation_exit_3221225477_issue_2556", "segfault"),
    ("nccl_net_ib_completion_error_alpaca_finetune_issue_207", "nccl_error"),
    ("nccl_remote_error_connection_reset_ddp_v100_issue_2076", "nccl_error"),
    ("submitit_slurm_preempted_requeue_sigusr2_issue_1708", "killed"),
])
def test_fires_on_published_process_deaths(name: str, cause: str) -> None:
    d = _diagnose(name)
    assert (d.verdict.code, d.verdict.family, d.verdict.cause) == ("CRASH002", Family.CRASH,
                                                                    cause)


def test_near_miss_passes_when_the_oom_killer_explains_it() -> None:
    d = _diagnose("torchrun_exitcode_minus9_local_rank4_longchat_issue_9")
    assert d.verdict.family is Family.OOM
    assert not [f for f in d.findings if f.code == "CRASH002"]


def test_near_miss_passes_when_a_rank_raised_its_own_exception(tmp_path: Path) -> None:
    (tmp_path / "train.log").write_text(
        "Traceback (most recent call last):\n"
        '  File "/workspace/train.py", line 9, in main\n'
        "    raise KeyError('input_ids')\n"
        "KeyError: 'input_ids'\n"
        "Segmentation fault (core dumped)\n")
    d = diagnose(autopsy.load_run(tmp_path))
    assert d.verdict.code == "CRASH001"
    assert not [f for f in d.findings if f.code == "CRASH002"]


@pytest.mark.parametrize(("name", "rank"), [
    ("deit_torchrun_local_rank5_exitcode1_sigterm_others_issue_88251", 5),
    ("repvit_imagenet_torchrun_local_rank2_exitcode1_epoch7_issue_65", 2),
])
def test_names_the_rank_the_launcher_reports_failed(name: str, rank: int) -> None:
    # torchelastic's "failed (exitcode: 1) local_rank: N" after "Sending process ... closing
    # signal SIGTERM" to the others: the failed rank is the culprit, the SIGTERMs are not a kill
    d = _diagnose(name)
    assert (d.verdict.code, d.verdict.family, d.verdict.ranks) == ("CRASH002", Family.CRASH,
                                                                    (rank,))
    assert d.verdict.cause != "killed"


def test_a_launcher_sigterm_alone_is_no_kill(tmp_path: Path) -> None:
    # near miss: the launcher stopping a process with no failed rank reported is no verdict
    (tmp_path / "train.log").write_text(
        "[2024-05-28 14:04:27,954] torch.distributed.elastic.multiprocessing.api: [WARNING] "
        "Sending process 60552 closing signal SIGTERM\n")
    d = diagnose(autopsy.load_run(tmp_path))
    assert not [f for f in d.findings if f.code == "CRASH002"]
