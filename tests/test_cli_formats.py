"""`--format html|markdown` and `-o FILE.html/.md` on analyze, ranks and ckpt."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from click.testing import CliRunner
from repo_paths import SAMPLE_RUNS

from autopsy.cli import cli

NAN_RUN = SAMPLE_RUNS / "nan_after_grad_spike"
DDP_RUN = SAMPLE_RUNS / "ddp_rank_stall_timeout"


def invoke(*args: str):
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


@pytest.mark.parametrize("command", ["analyze", "ranks", "ckpt"])
def test_help_lists_the_formats(command: str) -> None:
    result = invoke(command, "--help")
    assert "[text|json|markdown|html]" in result.output


@pytest.mark.parametrize("name,kind", [("r.html", "html"), ("r.HTM", "html"),
                                       ("r.md", "markdown"), ("r.json", "json"),
                                       ("r.txt", "text")])
def test_analyze_format_from_the_output_extension(tmp_path: Path, name: str, kind: str) -> None:
    out = tmp_path / name
    result = invoke("analyze", str(NAN_RUN), "-o", str(out))
    assert result.exit_code == 1  # a failure was found, whatever the format
    text = out.read_text(encoding="utf-8")
    if kind == "html":
        assert text.startswith("<!DOCTYPE html>") and "<img" in text
    elif kind == "markdown":
        assert text.startswith("# autopsy: ")
        assert (tmp_path / "r_files" / "loss.png").is_file()
        assert "](r_files/loss.png)" in text
    elif kind == "json":
        assert json.loads(text)["verdict"]["code"] == "NAN001"
    else:
        assert text.startswith("autopsy ") and "VERDICT" in text


def test_format_option_beats_the_extension(tmp_path: Path) -> None:
    out = tmp_path / "report.json"
    invoke("analyze", str(NAN_RUN), "--format", "html", "-o", str(out))
    assert out.read_text().startswith("<!DOCTYPE html>")


def test_html_to_stdout_and_markdown_to_stdout_without_plots() -> None:
    html = invoke("analyze", str(NAN_RUN), "--format", "html")
    assert html.exit_code == 1
    assert html.output.startswith("<!DOCTYPE html>")
    assert html.output.count('<img class="plot"') == 4
    md = invoke("analyze", str(NAN_RUN), "--format", "markdown")
    assert md.exit_code == 1
    assert "![" not in md.output and "Plots are left out" in md.output


def test_ranks_html_and_markdown(tmp_path: Path) -> None:
    result = invoke("ranks", str(DDP_RUN), "-o", str(tmp_path / "ranks.html"))
    assert result.exit_code == 1
    page = (tmp_path / "ranks.html").read_text()
    assert 'id="ranks"' in page and 'data-plot="ranks"' in page
    md = tmp_path / "ranks.md"
    invoke("ranks", str(DDP_RUN), "-o", str(md))
    text = md.read_text()
    assert "## Ranks" in text and "](ranks_files/ranks.png)" in text
    assert (tmp_path / "ranks_files" / "ranks.png").is_file()


def test_healthy_run_exits_0_in_html(tmp_path: Path) -> None:
    result = invoke("analyze", str(SAMPLE_RUNS / "healthy_hf_trainer"), "-o",
                    str(tmp_path / "ok.html"))
    assert result.exit_code == 0
    assert 'class="verdict good"' in (tmp_path / "ok.html").read_text()


@pytest.mark.parametrize("suffix", ["html", "md"])
def test_ckpt_html_and_markdown_keep_the_exit_codes(tmp_path: Path, suffix: str) -> None:
    bad = invoke("ckpt", str(SAMPLE_RUNS / "ckpt_hf_optimizer_missing"), "-o",
                 str(tmp_path / f"bad.{suffix}"))
    assert bad.exit_code == 1
    good = invoke("ckpt", str(SAMPLE_RUNS / "ckpt_hf_good"), "-o",
                  str(tmp_path / f"good.{suffix}"))
    assert good.exit_code == 0
    text = (tmp_path / f"bad.{suffix}").read_text()
    assert "NOT RESUMABLE" in text and "optimizer" in text
    assert "RESUMABLE" in (tmp_path / f"good.{suffix}").read_text()
    # no plots folder for a checkpoint report
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([f"bad.{suffix}",
                                                                 f"good.{suffix}"])


def test_nothing_is_written_into_the_run_dir(tmp_path: Path) -> None:
    before = sorted(p.relative_to(NAN_RUN) for p in NAN_RUN.rglob("*"))
    invoke("analyze", str(NAN_RUN), "--format", "markdown", "-o", str(tmp_path / "x.md"))
    assert sorted(p.relative_to(NAN_RUN) for p in NAN_RUN.rglob("*")) == before


def test_unwritable_output_is_one_line(tmp_path: Path) -> None:
    result = CliRunner().invoke(cli, ["analyze", str(NAN_RUN), "-o",
                                      str(tmp_path / "missing" / "r.html")])
    assert result.exit_code == 2
    assert re.fullmatch(r"autopsy: error: cannot write .*r\.html: .+\n", result.output)


def test_analyze_of_a_distributed_run_has_the_rank_timeline(tmp_path: Path) -> None:
    out = tmp_path / "ddp.html"
    invoke("analyze", str(DDP_RUN), "-o", str(out))
    page = out.read_text()
    assert 'id="ranks"' in page and 'data-plot="ranks"' in page
    assert "last activity (UTC)" in page
    single = tmp_path / "one.html"
    invoke("analyze", str(NAN_RUN), "-o", str(single))
    assert 'id="ranks"' not in single.read_text()


def _run_cli(args: list[str], *, tty: bool) -> str:
    """Run ``autopsy`` in a subprocess, stdout a pipe or a pseudo-terminal 80 columns wide."""
    import os
    import subprocess
    import sys

    env = {**os.environ, "COLUMNS": "80", "TERM": "xterm-256color"}
    env.pop("NO_COLOR", None)
    env.pop("FORCE_COLOR", None)
    command = [sys.executable, "-m", "autopsy", *args]
    if not tty:
        return subprocess.run(command, capture_output=True, text=True, env=env,
                              timeout=120).stdout
    import pty

    leader, follower = pty.openpty()
    try:
        proc = subprocess.Popen(command, stdout=follower, stderr=subprocess.DEVNULL, env=env)
        os.close(follower)
        chunks = []
        while True:
            try:
                data = os.read(leader, 65536)
            except OSError:  # the child closed the terminal
                break
            if not data:
                break
            chunks.append(data)
        proc.wait(timeout=120)
    finally:
        os.close(leader)
    return b"".join(chunks).decode("utf-8", "replace")


@pytest.mark.parametrize("args", [["analyze", str(NAN_RUN)], ["ranks", str(DDP_RUN)]])
def test_text_report_is_plain_when_piped_and_fits_80_columns(args: list[str]) -> None:
    from rich.cells import cell_len

    piped = _run_cli(args, tty=False)
    assert "VERDICT" in piped
    assert "\x1b" not in piped
    assert max(cell_len(line) for line in piped.splitlines()) <= 80


def test_text_report_has_colour_on_a_terminal() -> None:
    shown = _run_cli(["analyze", str(NAN_RUN)], tty=True)
    assert "VERDICT" in shown
    assert "\x1b[" in shown
    plain = re.sub(r"\x1b\[[0-9;]*m", "", shown)
    from rich.cells import cell_len

    assert max(cell_len(line) for line in plain.splitlines()) <= 80


@pytest.mark.parametrize("args", [
    ["analyze", str(NAN_RUN), "-o", str(NAN_RUN / "report.html")],
    ["analyze", str(NAN_RUN), "--format", "json", "-o", str(NAN_RUN / "trainer_state.json")],
    ["ranks", str(DDP_RUN), "-o", str(DDP_RUN / "sub" / ".." / "ranks.md")],
    ["ckpt", str(NAN_RUN / "checkpoint-20"), "-o", str(NAN_RUN / "checkpoint-20" / "a.json")],
    ["timeline", str(NAN_RUN), "-o", str(NAN_RUN / "t.csv")],
])
def test_output_into_the_run_is_refused(args: list[str]) -> None:
    before = sorted((p.relative_to(SAMPLE_RUNS), p.stat().st_mtime_ns)
                    for p in [*NAN_RUN.rglob("*"), *DDP_RUN.rglob("*")])
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 2
    assert re.fullmatch(r"autopsy: error: -o .* never writes into; write the report "
                        r"elsewhere\n", result.output)
    after = sorted((p.relative_to(SAMPLE_RUNS), p.stat().st_mtime_ns)
                   for p in [*NAN_RUN.rglob("*"), *DDP_RUN.rglob("*")])
    assert after == before


def test_markdown_plots_folder_in_the_run_is_refused(tmp_path: Path) -> None:
    # a run folder named like report.md's plots folder: the plots would land in the run
    run = tmp_path / "report_files"
    run.mkdir()
    (run / "train.log").write_text("step 1 loss 2.0\nstep 2 loss 1.5\n", encoding="utf-8")
    result = CliRunner().invoke(cli, ["analyze", str(run), "-o", str(tmp_path / "report.md")])
    assert result.exit_code == 2
    assert "its plots folder" in result.output
    assert sorted(p.name for p in run.iterdir()) == ["train.log"]
    assert not (tmp_path / "report.md").exists()


@pytest.mark.parametrize("suffix", ["json", "html", "md", "txt"])
def test_a_file_name_that_is_not_utf8_does_not_break_the_report(tmp_path: Path,
                                                                 suffix: str) -> None:
    import os
    import shutil

    run = tmp_path / "run"
    shutil.copytree(NAN_RUN, run)
    with open(os.path.join(os.fsencode(run), b"notes\xff.txt"), "wb") as fh:
        fh.write(b"hello")
    out = tmp_path / f"r.{suffix}"
    result = invoke("analyze", str(run), "-v", "-o", str(out))  # a traceback would raise
    assert result.exit_code == 1, result.output
    text = out.read_text(encoding="utf-8")
    # the undecodable byte is labelled \xNN where the file is found (readers/discover.py)
    if suffix == "json":
        assert "notes\\xff.txt" in json.loads(text)["run"]["unread"]
    else:
        assert "notes\\xff.txt" in text


def test_stdout_that_cannot_hold_the_report_is_one_line() -> None:
    import os
    import subprocess
    import sys

    env = {**os.environ, "PYTHONIOENCODING": "ascii"}
    proc = subprocess.run([sys.executable, "-m", "autopsy", "analyze", str(NAN_RUN)],
                          capture_output=True, text=True, env=env, timeout=120)
    assert proc.returncode == 2
    assert proc.stderr == ("autopsy: error: stdout (ascii) cannot hold this report's "
                           "characters: write it to a file with -o FILE, or set "
                           "PYTHONIOENCODING=utf-8\n")


def test_markdown_plots_folder_that_cannot_be_made_names_it(tmp_path: Path) -> None:
    (tmp_path / "r_files").write_text("a file, not a folder")
    result = CliRunner().invoke(cli, ["analyze", str(NAN_RUN), "-o", str(tmp_path / "r.md")])
    assert result.exit_code == 2
    assert re.fullmatch(r"autopsy: error: cannot write .*r_files: .+\n", result.output)
    assert not (tmp_path / "r.md").exists()  # no half-written report


def test_markdown_to_a_device_makes_no_plots_folder(tmp_path: Path) -> None:
    import os

    device = tmp_path / "dev.md"
    device.symlink_to(os.devnull)
    result = invoke("analyze", str(NAN_RUN), "--format", "markdown", "-o", str(device))
    assert result.exit_code == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == ["dev.md"]  # no dev_files/
