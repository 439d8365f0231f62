"""Paper cuts a new user hits: ``-o -``, ``--select`` comma lists, links out of the run,
the skipped-rules list, ``dir(autopsy)``, many ranks in one log."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest
from click.testing import CliRunner

import autopsy
from autopsy.cli import cli

SAMPLES = Path(__file__).resolve().parent.parent / "sample_runs"
DIVERGING = SAMPLES / "diverging_finite"


def invoke(*args: str):
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


def test_output_dash_is_stdout_not_a_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch
                                          ) -> None:
    monkeypatch.chdir(tmp_path)
    result = invoke("analyze", str(DIVERGING), "--format", "json", "-o", "-")
    assert json.loads(result.output)["verdict"]["family"] == "diverging"
    assert not (tmp_path / "-").exists()


def test_select_takes_comma_lists_and_prefixes() -> None:
    result = invoke("analyze", str(DIVERGING), "--format", "json", "--select", "NAN,CFG")
    codes = {f["code"][:3] for f in json.loads(result.output)["findings"]}
    assert codes and codes <= {"NAN", "CFG"}
    result = invoke("analyze", str(DIVERGING), "--format", "json", "--select", "DIV",
                    "--ignore", "CFG,NAN")
    codes = {f["code"][:3] for f in json.loads(result.output)["findings"]}
    assert codes == {"DIV"}


def test_a_link_out_of_the_run_is_not_walked(tmp_path: Path) -> None:
    run = tmp_path / "run"
    run.mkdir()
    for path in (DIVERGING / "runs").rglob("*"):
        if path.is_file():
            dest = run / "runs" / path.relative_to(DIVERGING / "runs")
            dest.parent.mkdir(parents=True, exist_ok=True)
            dest.write_bytes(path.read_bytes())
    outside = tmp_path / "elsewhere"
    (outside / "deep").mkdir(parents=True)
    (outside / "deep" / "train.log").write_text("Traceback (most recent call last):\n"
                                               "RuntimeError: not this run\n")
    os.symlink(outside, run / "escape")
    os.symlink(run / "runs", run / "inside")  # a link within the run is still followed
    result = invoke("analyze", str(run), "--format", "json")
    report = json.loads(result.output)
    links = [p for p in report["problems"] if p["kind"] == "outside_link"]
    assert [p["source"] for p in links] == ["escape"]
    assert report["verdict"]["family"] == "diverging"  # the outside log was not read
    assert not any("not this run" in f["message"] for f in report["findings"])


def test_skipped_rules_are_one_line_unless_verbose() -> None:
    text = invoke("analyze", str(DIVERGING)).output
    lines = [ln for ln in text.splitlines() if ln.startswith("Skipped rules")]
    assert len(lines) == 1 and "-v" in lines[0]
    assert "CFG001" not in text.split("Skipped rules")[1].split("\n", 1)[1][:200]
    verbose = invoke("analyze", str(DIVERGING), "-v").output
    count = int(lines[0].split(":")[1].split(",")[0])
    section = verbose.split("Skipped rules")[1].split("\nRead ")[0]
    listed = re.findall(r"^  [A-Z]+\d{3} ", section, re.M)  # lines wrap at the width
    assert len(listed) == count


def test_dir_lists_the_public_api() -> None:
    names = dir(autopsy)
    for name in ("load_run", "diagnose", "audit_checkpoint", "load_settings", "Run"):
        assert name in names and callable(getattr(autopsy, name))


def test_many_ranks_with_an_error_each_get_one_row_each(tmp_path: Path) -> None:
    n = 3000
    log = tmp_path / "job.log"
    with log.open("w", encoding="utf-8") as f:
        for r in range(n):
            f.write(f"[rank{r}]: step 1 loss 2.{r % 10}\n")
        for r in range(n):
            f.write(f"[rank{r}]: RuntimeError: CUDA error: an illegal memory access was "
                    "encountered\n")
    report = json.loads(invoke("ranks", str(log), "--format", "json").output)
    rows = report["ranks"]
    assert len(rows) == n and [r["rank"] for r in rows] == list(range(n))
    assert all(r["ended"] == "raised" and r["first_error_kind"] for r in rows)
    assert report["verdict"]["family"] == "crash"


def test_a_rank_the_launcher_sent_sigterm_is_terminated_not_timed_out(tmp_path: Path) -> None:
    # torchelastic's agent, on another rank's failure, SIGTERMs the rest; their own
    # traceback ends in SignalException("Process {pid} got signal: {sig}")
    log = tmp_path / "job.log"
    log.write_text(
        "[rank0]: step 10 loss 2.1\n[rank1]: step 10 loss 2.2\n"
        "[rank1]: Traceback (most recent call last):\n"
        '[rank1]:   File "train.py", line 10, in <module>\n'
        "[rank1]: RuntimeError: CUDA error: an illegal memory access was encountered\n"
        "W1126 07:00:00.000000 123 torch/distributed/elastic/multiprocessing/api.py:897] "
        "Sending process 4001 closing signal SIGTERM\n"
        "[rank0]: Traceback (most recent call last):\n"
        '[rank0]:   File "train.py", line 12, in <module>\n'
        "[rank0]: torch.distributed.elastic.multiprocessing.api.SignalException: Process 4001 "
        "got signal: 15\n", encoding="utf-8")
    report = json.loads(invoke("ranks", str(log), "--format", "json").output)
    ended = {r["rank"]: r["ended"] for r in report["ranks"]}
    assert ended == {0: "terminated", 1: "raised"}
    assert report["verdict"]["ranks"][:1] == [1]


def test_ctrl_c_while_the_command_loads_is_one_line_not_a_traceback() -> None:
    import subprocess
    import sys

    # a KeyboardInterrupt raised by the import of autopsy.cli: what Ctrl-C in the first
    # milliseconds does
    code = ("import builtins\n"
            "real = builtins.__import__\n"
            "def imp(name, *a, **k):\n"
            "    if name == 'autopsy.cli':\n"
            "        raise KeyboardInterrupt\n"
            "    return real(name, *a, **k)\n"
            "builtins.__import__ = imp\n"
            "import runpy\n"
            "runpy.run_module('autopsy', run_name='__main__')\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=60, check=False)
    assert proc.returncode == 130
    assert proc.stderr.strip() == "autopsy: interrupted" and "Traceback" not in proc.stderr
