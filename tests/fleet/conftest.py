"""A fleet built from copies of ``sample_runs/`` and the public corpus's dev half, with hosts
assigned by a scheduler map and one host made to fail more than the others."""

from __future__ import annotations

import shutil
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
from repo_paths import REPO, SAMPLE_RUNS

sys.path.insert(0, str(REPO / "bench"))
from corpus_stats import split_of

#: Copies of one sample, under different names: one signature cluster of this size.
REPEATED = "ddp_rank_exception"
COPIES = 6
#: Public dev cases added to the fleet (the first ones in name order).
PUBLIC_CASES = 250
HOSTS = 12
LEMON = "node-07"
LEMON_RUNS = 25


@dataclass
class Fleet:
    """The fleet's root, its runs (relative paths) and the host map written for it."""

    root: Path
    runs: list[str]
    hosts_csv: Path
    hosts: dict[str, str]


def _is_run_folder(p: Path) -> bool:
    return p.is_dir() and not p.name.startswith((".", "_")) and p.name != "public"


@pytest.fixture(scope="session")
def fleet(tmp_path_factory: pytest.TempPathFactory) -> Fleet:
    root = tmp_path_factory.mktemp("fleet") / "runs"
    samples = sorted(p for p in SAMPLE_RUNS.iterdir() if _is_run_folder(p))
    assert len(samples) >= 40, "sample_runs/ is missing"
    runs = []
    for p in samples:
        shutil.copytree(p, root / "samples" / p.name, symlinks=True)
        runs.append(f"samples/{p.name}")
    for i in range(COPIES):
        shutil.copytree(SAMPLE_RUNS / REPEATED, root / "repeats" / f"job{i}", symlinks=True)
        runs.append(f"repeats/job{i}")
    public = sorted(p for p in (SAMPLE_RUNS / "public").iterdir()
                    if p.is_dir() and split_of(p.name) == "dev")[:PUBLIC_CASES]
    assert len(public) == PUBLIC_CASES, "the public corpus is missing"
    for p in public:
        shutil.copytree(p, root / "public" / p.name, symlinks=True)
        runs.append(f"public/{p.name}")
    runs.sort()
    return Fleet(root, runs, root.parent / "hosts.csv", {})
