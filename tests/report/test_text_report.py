"""The terminal report shows text from the run as written: never rich markup, no control bytes."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

from autopsy.cli import cli


def _hostile_run(tmp_path: Path) -> Path:
    # "x[" / "]y" makes the run path contain "[/]", rich's closing tag; file names and the
    # log line carry markup-like brackets and a NUL
    run = tmp_path / "x[" / "]y"
    (run / "a[").mkdir(parents=True)
    lines = [f"{{'loss': {2.0 if i < 8 else 'nan'}, 'grad_norm': 1.0, 'learning_rate': 0.001, "
             f"'epoch': 0.1, 'step': {i}}}" for i in range(1, 12)]
    lines.append("RuntimeError: boom [/] [bold]x\x00y")
    (run / "a[" / "]train[red].log").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return run


def test_verbose_text_report_of_a_run_path_with_markup(tmp_path: Path) -> None:
    run = _hostile_run(tmp_path)
    result = CliRunner().invoke(cli, ["analyze", str(run), "-v"])
    assert result.exception is None or isinstance(result.exception, SystemExit), result.output
    assert result.exit_code == 1, result.output
    assert run.as_posix() in result.output  # the path as written, brackets and all
    assert "]train[red].log" in result.output
    assert "\x00" not in result.output
