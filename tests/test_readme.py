"""The README's two commands are real: CI runs the test one, the sample run exists."""

from __future__ import annotations

import re

from repo_paths import REPO


def _bash_blocks() -> list[str]:
    text = (REPO / "README.md").read_text()
    return [b.strip() for b in re.findall(r"```bash\n(.*?)```", text, flags=re.S)]


def test_ci_runs_the_readme_test_command() -> None:
    blocks = _bash_blocks()
    test_cmd = next(b for b in blocks if "pytest" in b)
    ci = (REPO / ".ci" / "run").read_text().splitlines()
    assert test_cmd in ci


def test_readme_main_command_points_at_a_bundled_sample_run() -> None:
    main_cmd = _bash_blocks()[0]
    match = re.search(r"autopsy analyze (\S+)", main_cmd)
    assert match, main_cmd
    assert (REPO / match.group(1)).is_dir()
