"""Where the repository and its sample runs are, for tests in any folder.

Tests import these from here, not from ``conftest``: with several ``conftest.py`` files
(``tests/ckpt/`` has one), ``import conftest`` may give another folder's.
"""

from __future__ import annotations

from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
SAMPLE_RUNS = REPO / "sample_runs"
PUBLIC_RUNS = SAMPLE_RUNS / "public"


def public_run(name: str) -> Path:
    """A case of the public corpus, as a test fixture; a missing one fails the test."""
    path = PUBLIC_RUNS / name
    assert path.is_dir(), f"missing fixture {path}"
    return path
