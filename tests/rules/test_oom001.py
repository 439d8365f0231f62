"""OOM001 cuda-oom: the OOM rank is the root; fragmentation told apart from exhaustion."""

from __future__ import annotations

from pathlib import Path

import autopsy
from autopsy.api import diagnose
from autopsy.model import Family

FIXTURES = Path(__file__).resolve().parents[2] / "tests" / "fixtures" / "ranklogs"


def _verdict(name: str):
    return diagnose(autopsy.load_run(FIXTURES / name)).verdict


def test_fires_on_rank3_oom_not_the_timed_out_victims() -> None:
    v = _verdict("nccl_watchdog_timeout_rank3_oom")
    assert (v.code, v.family, v.cause, v.ranks) == ("OOM001", Family.OOM, "cuda_oom", (3,))


def test_fires_on_fragmentation() -> None:
    v = _verdict("cuda_oom_fragmentation")
    assert (v.code, v.cause, v.ranks) == ("OOM001", "fragmentation", (0,))


def test_fires_on_old_2_0_and_other_process_formats() -> None:
    for name in ("cuda_oom_old_format", "cuda_oom_2_0_format", "cuda_oom_other_process"):
        v = _verdict(name)
        assert (v.code, v.cause) == ("OOM001", "cuda_oom"), name


def test_near_miss_small_reserved_unallocated_is_cuda_oom() -> None:
    assert _verdict("messy_bytes").cause == "cuda_oom"


def test_near_miss_passes_without_oom() -> None:
    d = diagnose(autopsy.load_run(FIXTURES / "host_oom_killed"))
    assert all(f.code != "OOM001" for f in d.findings)
