"""``python sample_runs/make.py --check``: every sample regenerates to its committed label.

The check remakes runs in a temporary folder and compares each with its committed label and
autopsy's verdict on the committed run. Here it runs on one cheap sample (a plain PyTorch loop
of a few seconds): it passes on the committed sample, fails on a copy whose label says
something else, and never writes into ``sample_runs/``. The comparison itself is also tested
on labels alone (no training).
"""

from __future__ import annotations

import importlib
import json
import shutil
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from repo_paths import SAMPLE_RUNS

MAKE = SAMPLE_RUNS / "make.py"
#: A cheap sample: a plain PyTorch loop (no HF Trainer, no torchrun), a few seconds.
CHEAP = "nan_bad_batch"
CHECK_TIMEOUT_S = 300


@pytest.fixture(scope="module")
def make() -> ModuleType:
    """``sample_runs/make.py`` as a module (it imports its sibling modules from its folder)."""
    if str(SAMPLE_RUNS) not in sys.path:
        sys.path.insert(0, str(SAMPLE_RUNS))
    return importlib.import_module("make")


def _check(*args: str) -> subprocess.CompletedProcess[str]:
    """``python sample_runs/make.py --check ARGS`` from the repository root."""
    return subprocess.run([sys.executable, str(MAKE), "--check", *args], capture_output=True,
                          text=True, timeout=CHECK_TIMEOUT_S, check=False,
                          cwd=SAMPLE_RUNS.parent)


def _tree(folder: Path) -> dict[str, tuple[int, int]]:
    """``{relative path: (size, mtime_ns)}`` of every file under ``folder``."""
    return {str(p.relative_to(folder)): (p.stat().st_size, p.stat().st_mtime_ns)
            for p in folder.rglob("*") if p.is_file()}


def _copy_sample(name: str, dest: Path) -> Path:
    """A copy of one committed sample (its folder and its label) in ``dest``."""
    run = SAMPLE_RUNS / name
    label = SAMPLE_RUNS / f"{name}.label.json"
    assert run.is_dir() and label.is_file(), f"sample {name} is missing"
    shutil.copytree(run, dest / name)
    shutil.copy2(label, dest / label.name)
    return dest


def test_the_check_passes_on_a_committed_sample_and_writes_nothing_there() -> None:
    before = _tree(SAMPLE_RUNS / CHEAP)
    label_before = (SAMPLE_RUNS / f"{CHEAP}.label.json").read_bytes()
    done = _check(CHEAP)
    assert done.returncode == 0, done.stdout + done.stderr
    lines = [ln for ln in done.stdout.splitlines() if ln.startswith(("ok", "MISMATCH"))]
    assert len(lines) == 1 and lines[0].split()[:2] == ["ok", CHEAP], done.stdout
    assert "all 1 sample(s) reproduce" in done.stdout
    assert _tree(SAMPLE_RUNS / CHEAP) == before
    assert (SAMPLE_RUNS / f"{CHEAP}.label.json").read_bytes() == label_before


def test_the_check_fails_when_the_committed_label_disagrees(tmp_path: Path) -> None:
    committed = _copy_sample(CHEAP, tmp_path)
    label_file = committed / f"{CHEAP}.label.json"
    label = json.loads(label_file.read_text(encoding="utf-8"))
    label["cause"] = "lr_too_high"  # the run shows a corrupted batch
    label["first_bad_step"] += 5  # beyond the label's tolerance (0: every step is logged)
    label_file.write_text(json.dumps(label, indent=2) + "\n", encoding="utf-8")
    done = _check("--committed", str(committed), CHEAP)
    assert done.returncode == 1, done.stdout + done.stderr
    assert f"MISMATCH {CHEAP}" in done.stdout
    assert "label: cause 'lr_too_high' -> 'bad_data'" in done.stdout
    assert "label: first_bad_step" in done.stdout
    assert "did not reproduce" in done.stdout


def test_an_unknown_sample_is_a_usage_error() -> None:
    done = _check("no_such_sample")
    assert done.returncode == 2 and "unknown run(s): no_such_sample" in done.stderr


def _label(**changes: Any) -> dict[str, Any]:
    base: dict[str, Any] = {"family": "nan_inf", "cause": "bad_data", "first_bad_step": 37,
                            "step_tolerance": 0, "culprit_rank": None}
    return {**base, **changes}


def test_label_differences_follow_the_committed_labels_tolerance(make: ModuleType) -> None:
    assert make.label_differences(_label(), _label(loss_at_bad_step=1.0)) == []
    assert make.label_differences(_label(), _label(first_bad_step=38)) == [
        "first_bad_step 37 -> 38 (tolerance 0)"]
    wide = _label(family="diverging", cause="lr_too_high", step_tolerance=12)
    assert make.label_differences(wide, {**wide, "first_bad_step": 49}) == []
    assert make.label_differences(_label(), _label(family="healthy", cause=None)) == [
        "family 'nan_inf' -> 'healthy'", "cause 'bad_data' -> None"]
    ckpt = _label(family="resume", cause="torn_checkpoint", components={"weights": "corrupt"})
    assert make.label_differences(ckpt, {**ckpt, "components": {"weights": "ok"}}) == [
        "components {'weights': 'corrupt'} -> {'weights': 'ok'}"]


def test_verdict_differences(make: ModuleType) -> None:
    from autopsy.model.finding import Family
    from autopsy.model.verdict import Verdict

    def verdict(family: Family, cause: str | None, step: int | None,
                ranks: tuple[int, ...] = ()) -> Verdict:
        return Verdict(family=family, title="t", message="m", cause=cause, step=step,
                       ranks=ranks)

    label = _label(step_tolerance=1)
    same = verdict(Family.NAN_INF, "bad_data", 37)
    assert make.verdict_differences(same, verdict(Family.NAN_INF, "bad_data", 38), label) == []
    assert make.verdict_differences(same, verdict(Family.HEALTHY, None, None), label) == [
        "family nan_inf -> healthy", "cause bad_data -> None",
        "step 37 -> None (tolerance 1)"]
    assert make.verdict_differences(verdict(Family.HANG, "dead_rank", 9, (1,)),
                                    verdict(Family.HANG, "dead_rank", 9, (0, 1)), label) == [
        "rank [1] -> [0]"]
