"""The Markdown reports: the HTML report's content, plots as PNG files beside the file."""

from __future__ import annotations

import io
import re
from pathlib import Path

import pytest
from markdown_it import MarkdownIt  # rich's own dependency
from repo_paths import SAMPLE_RUNS

from autopsy.api import diagnose, load_run
from autopsy.ckpt.audit import audit_path
from autopsy.report._html import md_code, md_esc
from autopsy.report.ckpt_html import render_ckpt_markdown
from autopsy.report.markdown_report import NO_PLOTS_NOTE, render_analysis_markdown
from autopsy.report.report import Report
from autopsy.signals.ranks import rank_status

IMAGE = re.compile(r"!\[[^\]]*\]\(([^)]+)\)")


def to_html(markdown: str) -> str:
    return MarkdownIt("commonmark").enable("table").render(markdown)


def write_md(run_dir: Path, output: Path | None, ranks: bool = False) -> str:
    run = load_run(run_dir)
    out = io.StringIO()
    render_analysis_markdown(Report(run, diagnose(run), rank_status(run) if ranks else None),
                             out, output=output)
    return out.getvalue()


@pytest.fixture(scope="module")
def nan_md(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    target = tmp_path_factory.mktemp("md") / "report.md"
    text = write_md(SAMPLE_RUNS / "nan_after_grad_spike", target)
    target.write_text(text)
    return target, text


def test_plots_are_pngs_beside_the_file_linked_relatively(nan_md: tuple[Path, str]) -> None:
    target, text = nan_md
    links = IMAGE.findall(text)
    assert links == ["report_files/loss.png", "report_files/grad_norm.png",
                     "report_files/learning_rate.png", "report_files/step_time.png"]
    for link in links:
        png = target.parent / link
        assert png.read_bytes().startswith(b"\x89PNG\r\n\x1a\n")
    assert sorted(p.name for p in (target.parent / "report_files").iterdir()) == [
        "grad_norm.png", "learning_rate.png", "loss.png", "step_time.png"]


def test_same_content_as_the_html_report(nan_md: tuple[Path, str]) -> None:
    _, text = nan_md
    run = load_run(SAMPLE_RUNS / "nan_after_grad_spike")
    diagnosis = diagnose(run)
    html = to_html(text)
    assert "VERDICT: nan_inf · cause lr_too_high · step 8 · NAN001" in html
    order = [html.index(h) for h in ("VERDICT", "What to change", ">Plots<", ">Findings (",
                                     ">Skipped rules (", ">Problems (", ">What was read<")]
    assert order == sorted(order)
    for f in diagnosis.findings:
        assert f"{f.code} {f.name}" in html
    for s in diagnosis.skipped:
        if s.reason != "not selected":
            assert s.code in html


def test_stdout_has_no_plots_and_says_so(tmp_path: Path, monkeypatch: pytest.MonkeyPatch
                                         ) -> None:
    monkeypatch.chdir(tmp_path)
    text = write_md(SAMPLE_RUNS / "nan_after_grad_spike", None)
    assert IMAGE.findall(text) == []
    assert md_esc(NO_PLOTS_NOTE) in text
    assert list(tmp_path.iterdir()) == []  # nothing written anywhere


def test_text_from_the_run_cannot_become_markup(tmp_path: Path) -> None:
    logs = tmp_path / "logs"
    logs.mkdir()
    evil = '<script>alert(1)</script> *bold* [x](http://evil.example) `tick` a|b # h'
    (logs / "rank0.log").write_text(
        "[rank0]: step 1 loss 2.5\n[rank0]: Traceback (most recent call last):\n"
        '[rank0]:   File "t.py", line 1, in <module>\n'
        f"[rank0]: ValueError: {evil}\n")
    (logs / "rank1.log").write_text("[rank1]: step 1 loss 2.5\n")
    text = write_md(logs, None, ranks=True)
    html = to_html(text)
    assert "<script>" not in html
    assert "evil.example\"" not in html and "<a " not in html
    assert "<em>bold</em>" not in html
    # ...and it is still shown, as written
    assert "&lt;script&gt;alert(1)&lt;/script&gt; *bold* [x](http://evil.example)" in html
    # the rank table keeps its columns although the message has a pipe
    rows = [r.split("</tr>")[0] for r in html.split("<tr>")[1:] if "ValueError" in r]
    assert rows and all(r.count("<td") == 10 for r in rows)


def test_md_code_holds_backticks() -> None:
    assert md_code("a`b") == "``a`b``"
    assert md_code("`x`") == "`` `x` ``"
    assert to_html(md_code("a``b<c>")).strip() == "<p><code>a``b&lt;c&gt;</code></p>"


def test_ckpt_markdown_component_table() -> None:
    out = io.StringIO()
    render_ckpt_markdown(audit_path(SAMPLE_RUNS / "ckpt_hf_optimizer_missing"), out)
    text = out.getvalue()
    assert "NOT RESUMABLE: checkpoint\\-8" in text or "NOT RESUMABLE: checkpoint-8" in text
    html = to_html(text)
    row = next(r for r in html.split("<tr>") if "<code>optimizer</code>" in r)
    assert "missing" in row and "<strong>" in row
    assert "CKPT002 optimizer-missing" in html
    assert IMAGE.findall(text) == []


def test_a_new_report_replaces_the_old_plots_only(tmp_path: Path) -> None:
    target = tmp_path / "report.md"
    write_md(SAMPLE_RUNS / "fp16_overflow_collapse", target)
    folder = tmp_path / "report_files"
    assert (folder / "loss_scale.png").is_file()
    (folder / "notes.txt").write_text("mine")
    write_md(SAMPLE_RUNS / "nan_after_grad_spike", target)
    assert sorted(p.name for p in folder.iterdir()) == [
        "grad_norm.png", "learning_rate.png", "loss.png", "notes.txt", "step_time.png"]


def test_plot_links_work_for_a_file_name_with_spaces_and_brackets(tmp_path: Path) -> None:
    from urllib.parse import unquote

    target = tmp_path / "my report (1).md"
    text = write_md(SAMPLE_RUNS / "nan_after_grad_spike", target)
    sources = re.findall(r'<img src="([^"]+)"', to_html(text))
    assert len(sources) == 4
    for src in sources:
        assert (tmp_path / unquote(src)).read_bytes().startswith(b"\x89PNG")
