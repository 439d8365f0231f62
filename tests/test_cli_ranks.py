"""`autopsy ranks`: the verdict, the per-rank table, several paths, bad input."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from click.testing import CliRunner
from repo_paths import REPO, SAMPLE_RUNS

from autopsy.cli import cli

FIXTURES = REPO / "tests" / "fixtures" / "ranklogs"


def test_ranks_names_the_rank_that_raised_first() -> None:
    result = CliRunner().invoke(cli, ["ranks", str(SAMPLE_RUNS / "ddp_rank_exception"),
                                      "--format", "json"], catch_exceptions=False)
    report = json.loads(result.output)
    assert result.exit_code == 1
    assert report["verdict"]["family"] == "crash"
    assert report["verdict"]["ranks"] == [2]
    rows = {r["rank"]: r for r in report["ranks"]}
    assert sorted(rows) == [0, 1, 2, 3]
    assert rows[2]["ended"] == "raised" and rows[2]["root"] is True
    assert all(rows[r]["root"] is False for r in (0, 1, 3))


def test_ranks_text_shows_the_table_after_the_verdict() -> None:
    out = CliRunner().invoke(cli, ["ranks", str(SAMPLE_RUNS / "ddp_rank_exception")]).output
    lines = out.splitlines()
    assert lines[1].startswith("VERDICT: crash")
    assert lines.index(next(line for line in lines if line.startswith("Ranks"))) > 1
    assert "ValueError" in out


def test_ranks_reads_several_files_as_one_job() -> None:
    files = sorted((FIXTURES / "nccl_timeout_old_format").glob("rank*.log"))
    result = CliRunner().invoke(cli, ["ranks", *map(str, files), "--format", "json"])
    report = json.loads(result.output)
    assert {r["rank"] for r in report["ranks"]} == {0, 1, 2, 3}
    assert {s["path"] for s in report["run"]["sources"]} == {f.name for f in files}


def test_ranks_bad_input_is_one_line_exit_2(tmp_path: Path) -> None:
    (tmp_path / "weights.bin").write_bytes(bytes(range(256)))
    for args in ([str(tmp_path / "missing.log")], [str(tmp_path)]):
        proc = subprocess.run([sys.executable, "-m", "autopsy", "ranks", *args],
                              capture_output=True, text=True, timeout=60)
        assert proc.returncode == 2
        assert len(proc.stderr.strip().splitlines()) == 1
        assert "Traceback" not in proc.stderr
