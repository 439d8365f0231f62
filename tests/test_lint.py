"""The code base stays ruff-clean (the config is in pyproject.toml)."""

from __future__ import annotations

import importlib.util
import subprocess
import sys

import pytest
from repo_paths import REPO


def test_ruff_is_clean() -> None:
    if importlib.util.find_spec("ruff") is None:
        pytest.skip("ruff is not installed (it comes with the [test] extra)")
    # the scripts of sample_runs/ by name, so that no exclude pattern for the run folders
    # beside them can hide them (sample_runs/*/ once did)
    scripts = sorted(p.relative_to(REPO).as_posix() for p in (REPO / "sample_runs").glob("*.py"))
    assert "sample_runs/make.py" in scripts
    paths = ["autopsy", "tests", "bench", *scripts]
    proc = subprocess.run([sys.executable, "-m", "ruff", "check", *paths], cwd=REPO,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout[-3000:]
