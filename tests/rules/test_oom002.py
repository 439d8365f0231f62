"""OOM002 host-oom: host RAM exhausted, ranks or DataLoader workers killed."""

from __future__ import annotations

from pathlib import Path

import autopsy
from autopsy.api import diagnose
from autopsy.model import Family

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "fixtures" / "ranklogs"


def test_fires_on_host_oom_killed() -> None:
    v = diagnose(autopsy.load_run(FIXTURES / "host_oom_killed")).verdict
    assert (v.code, v.family, v.cause) == ("OOM002", Family.OOM, "host_oom")
    assert v.ranks[0] == 1


def test_near_miss_passes_on_cuda_oom_and_exceptions() -> None:
    for path in (FIXTURES / "cuda_oom_old_format", ROOT / "sample_runs" / "ddp_rank_exception"):
        d = diagnose(autopsy.load_run(path))
        assert all(f.code != "OOM002" for f in d.findings), path


def test_a_single_process_killed_by_the_kernel_fails_in_the_step_after_its_last(
        tmp_path: Path) -> None:
    """A process with no rank that the OOM-killer ended (bash prints ``Killed``) died in
    the step after the last one it logged, as a rank does."""
    (tmp_path / "train.log").write_text(
        "".join(f"Epoch: [0][{i}/1736]\t Loss {0.6 - i / 5000:.4f} MAE 0.6075 RMSE 0.7153\n"
                for i in range(383, 512, 32))
        + "Killed\n")
    v = diagnose(autopsy.load_run(tmp_path)).verdict
    assert (v.code, v.cause, v.step, v.ranks) == ("OOM002", "host_oom", 512, ())
