"""The fleet's parts: signatures, the binomial test, run discovery, timeouts and crashes."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from repo_paths import SAMPLE_RUNS

from autopsy.fleet import task
from autopsy.fleet.discover import find_runs, is_run
from autopsy.fleet.hosts import binomial_sf, lemon_hosts
from autopsy.fleet.signatures import is_hardware, signature, template


def test_templates_mask_what_varies() -> None:
    a = template("[rank3]: RuntimeError: CUDA out of memory. Tried to allocate 2.50 GiB "
                 "(GPU 3; 79.15 GiB total) at /home/u/train.py:120 0x7f3a2c")
    b = template("[rank12]: RuntimeError: CUDA out of memory. Tried to allocate 1.25 GiB "
                 "(GPU 0; 39.59 GiB total) at /scratch/v/train.py:88 0x55aa")
    assert a == b
    assert "<N>" in a and "<PATH>" in a and "<ADDR>" in a
    assert signature("oom", "x") == "oom: x"
    assert template("host gpu-node-17.cluster.local failed") != "host gpu-node-17"


@pytest.mark.parametrize(("line", "hardware"), [
    ("NVRM: Xid (PCI:0000:3b:00): 79, pid=1234, GPU has fallen off the bus", True),
    ("NCCL WARN NET/IB : Got completion from peer with error 12", True),
    ("RuntimeError: CUDA error: an illegal memory access was encountered", True),
    ("ValueError: batch at step 15 has 1 sample(s) with non-finite features", False),
    ("torch.OutOfMemoryError: CUDA out of memory", False),
])
def test_hardware_looking_signatures(line: str, hardware: bool) -> None:
    assert is_hardware(line) is hardware


def test_binomial_survival_matches_scipy() -> None:
    from scipy.stats import binom

    for k, n, p in [(0, 10, 0.3), (5, 10, 0.3), (10, 10, 0.3), (30, 200, 0.05),
                    (900, 1000, 0.85), (3, 5000, 1e-4)]:
        assert math.isclose(binomial_sf(k, n, p), binom.sf(k - 1, n, p), rel_tol=1e-9,
                            abs_tol=1e-300)


def test_a_host_is_named_only_past_chance() -> None:
    rows = []
    for i in range(400):
        host = f"h{i % 20}"
        failed = i % 20 == 3 or (i // 20) % 5 == 0  # h3 always, every host 1 run in 5
        rows.append({"path": str(i), "family": "crash" if failed else "healthy",
                     "hosts": [host], "hardware": True})
    named = [h.host for h in lemon_hosts(rows) if h.lemon]
    assert named == ["h3"]
    fair = [{**r, "family": "crash" if (int(r["path"]) // 20) % 5 == 0 else "healthy"}
            for r in rows]
    assert not [h for h in lemon_hosts(fair) if h.lemon]


def test_runs_are_found_where_they_are_and_not_inside_each_other(tmp_path: Path) -> None:
    import shutil

    shutil.copytree(SAMPLE_RUNS / "healthy_hf_trainer", tmp_path / "team" / "a" / "exp1")
    shutil.copytree(SAMPLE_RUNS / "ddp_rank_exception", tmp_path / "team" / "b")
    (tmp_path / "empty" / "deeper").mkdir(parents=True)
    (tmp_path / "notes.md").write_text("not a run\n")
    found = [p.relative_to(tmp_path).as_posix() for _, p in find_runs([tmp_path])]
    assert found == ["team/a/exp1", "team/b"]
    assert is_run(tmp_path / "team" / "b") and not is_run(tmp_path / "empty")
    assert find_runs([tmp_path / "team" / "b"]) == [(tmp_path / "team" / "b",) * 2]


def test_a_run_past_its_time_limit_is_a_row_with_the_error() -> None:
    got = task.diagnose_one(str(SAMPLE_RUNS), str(SAMPLE_RUNS / "ddp_rank_exception"),
                            timeout=0.001)
    assert got["report"] is None and got["row"]["error"] == "timed out after 0.001 s"
    assert got["row"]["path"] == "ddp_rank_exception"


def test_autopsy_failing_on_a_run_is_a_row_with_the_error(
        monkeypatch: pytest.MonkeyPatch) -> None:
    import autopsy.api

    def broken(*args: object, **kwargs: object) -> None:
        raise RuntimeError("a reader bug")

    monkeypatch.setattr(autopsy.api, "load_run", broken)
    got = task.diagnose_one(str(SAMPLE_RUNS), str(SAMPLE_RUNS / "diverging_finite"))
    assert got["row"]["error"] == "autopsy failed: RuntimeError: a reader bug"
    json.dumps(got, allow_nan=False)  # a row is always plain, strict JSON


def _killed_on_one(root: str, path: str, *args: object) -> dict:
    """diagnose_one, but the worker dies on one run (module level: the pool pickles it)."""
    import os

    if path.endswith("healthy_hf_trainer"):
        os._exit(137)  # as the kernel's OOM killer leaves it: no exception, no result
    return task.diagnose_one(root, path, *args)  # type: ignore[arg-type]


def test_a_worker_killed_by_the_os_costs_only_its_run(tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """A run whose worker dies (a host OOM kill) breaks the pool; the other runs are
    diagnosed again alone and only that run's row has the error."""
    import shutil

    from autopsy.fleet import execute
    from autopsy.fleet.driver import run_fleet

    for name in ("diverging_finite", "healthy_hf_trainer", "nan_after_grad_spike"):
        shutil.copytree(SAMPLE_RUNS / name, tmp_path / name)
    monkeypatch.setattr(execute, "diagnose_one", _killed_on_one)
    got = run_fleet([tmp_path], jobs=2)
    errors = {r["path"]: r["error"] for r in got.rows}
    assert errors["healthy_hf_trainer"].startswith("worker failed: BrokenProcessPool")
    assert errors["diverging_finite"] is None and errors["nan_after_grad_spike"] is None
    assert {r["family"] for r in got.rows if r["error"] is None} == {"diverging", "nan_inf"}
