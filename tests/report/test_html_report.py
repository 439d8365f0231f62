"""The HTML reports: self-contained, verdict first, everything from the run escaped."""

from __future__ import annotations

import base64
import io
from html.parser import HTMLParser
from pathlib import Path

import pytest
from repo_paths import SAMPLE_RUNS

from autopsy.api import diagnose, load_run
from autopsy.ckpt.audit import audit_path
from autopsy.report._html import esc
from autopsy.report.ckpt_html import render_ckpt_html
from autopsy.report.html_report import render_analysis_html
from autopsy.report.report import Report
from autopsy.signals.ranks import rank_status

HOSTILE = '<script>alert("x")</script> & <img src=x onerror=alert(1)>'


class Tags(HTMLParser):
    """Every start tag with its attributes, and the page's text, in document order."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))

    def handle_data(self, data: str) -> None:
        self.text.append(data)


def parse(page: str) -> Tags:
    tags = Tags()
    tags.feed(page)
    tags.close()
    return tags


def analyze_html(path: Path, ranks: bool = False) -> str:
    run = load_run(path)
    out = io.StringIO()
    render_analysis_html(Report(run, diagnose(run), rank_status(run) if ranks else None), out)
    return out.getvalue()


@pytest.fixture(scope="module")
def nan_page() -> str:
    return analyze_html(SAMPLE_RUNS / "nan_after_grad_spike")


@pytest.fixture(scope="module")
def hostile_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Two rank logs; rank 0 dies with an exception whose message is markup."""
    logs = tmp_path_factory.mktemp("hostile")
    (logs / "rank0.log").write_text(
        "[rank0]: step 1 loss 2.5\n[rank0]: step 2 loss 2.4\n"
        "[rank0]: Traceback (most recent call last):\n"
        '[rank0]:   File "train.py", line 10, in <module>\n'
        f"[rank0]: ValueError: bad batch {HOSTILE} \x1b[31mred\x1b[0m\n")
    (logs / "rank1.log").write_text("[rank1]: step 1 loss 2.5\n[rank1]: step 2 loss 2.4\n")
    return logs


def test_page_is_self_contained(nan_page: str) -> None:
    tags = parse(nan_page)
    names = [t for t, _ in tags.tags]
    assert "script" not in names and "link" not in names and "iframe" not in names
    for tag, attrs in tags.tags:
        for key in ("src", "href"):
            value = attrs.get(key)
            if value is not None:
                assert value.startswith("data:image/png;base64,"), (tag, value[:40])
    csp = [a for t, a in tags.tags if t == "meta" and a.get("http-equiv")]
    assert csp and "default-src 'none'" in (csp[0].get("content") or "")
    assert "<style>" in nan_page


def test_every_plot_is_an_embedded_png(nan_page: str) -> None:
    images = [a for t, a in parse(nan_page).tags if t == "img"]
    assert [a["data-plot"] for a in images] == ["loss", "grad_norm", "learning_rate",
                                                "step_time"]
    for attrs in images:
        data = base64.b64decode(attrs["src"].split(",", 1)[1])
        assert data.startswith(b"\x89PNG\r\n\x1a\n")
        assert int(attrs["width"]) > 0 and int(attrs["height"]) > 0


def test_verdict_comes_first_then_plots_findings_skipped_problems(nan_page: str) -> None:
    order = [nan_page.index(marker) for marker in (
        'id="verdict"', "VERDICT: nan_inf · cause lr_too_high · step 8 · NAN001",
        "What to change", 'id="plots"', "<img", 'id="findings"', 'id="skipped"',
        'id="problems"', 'id="read"')]
    assert order == sorted(order)
    verdict = nan_page[nan_page.index('id="verdict"'):nan_page.index('id="plots"')]
    assert 'class="verdict bad"' in nan_page
    assert "NaN/Inf after an optimisation blow-up" in verdict
    assert "max_grad_norm=1.0" in verdict  # the advice


def test_all_findings_and_skipped_rules_with_reasons(nan_page: str) -> None:
    run = load_run(SAMPLE_RUNS / "nan_after_grad_spike")
    diagnosis = diagnose(run)
    findings = nan_page[nan_page.index('id="findings"'):nan_page.index('id="skipped"')]
    for f in diagnosis.findings:
        assert f'id="finding-{f.code}"' in findings
    skipped = nan_page[nan_page.index('id="skipped"'):nan_page.index('id="problems"')]
    for s in diagnosis.skipped:
        if s.reason != "not selected":
            assert esc(s.reason) in skipped


def test_problems_are_listed() -> None:
    page = analyze_html(SAMPLE_RUNS / "ckpt_hf_hostile_pickle")
    run = load_run(SAMPLE_RUNS / "ckpt_hf_hostile_pickle")
    assert run.problems
    problems = page[page.index('id="problems"'):page.index('id="read"')]
    for p in run.problems:
        assert esc(p.what) in problems


def test_text_from_the_run_is_escaped(hostile_run: Path) -> None:
    page = analyze_html(hostile_run, ranks=True)
    assert "<script>alert" not in page
    assert "<img src=x" not in page
    assert "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;" in page
    tags = parse(page)
    assert all(t != "script" for t, _ in tags.tags)
    assert all("onerror" not in attrs for _, attrs in tags.tags)
    # the message is shown as text, as written
    assert HOSTILE in "".join(tags.text)
    assert "\x1b" not in page


def test_control_characters_are_made_visible() -> None:
    assert esc("a\x1b[31mb\x00c\x7f<") == "a\\x1b[31mb\\x00c\\x7f&lt;"
    assert esc("tab\tand\nnewline") == "tab\tand\nnewline"


def test_distributed_run_has_the_rank_table_and_timeline() -> None:
    page = analyze_html(SAMPLE_RUNS / "ddp_rank_stall_timeout", ranks=True)
    ranks = page[page.index('id="ranks"'):page.index('id="findings"')]
    assert ranks.count("<tr>") == 1 + 4  # header + 4 ranks
    assert '<span class="warn"><strong>timed_out</strong></span>' in ranks
    assert '<span class="warn"><strong>silent</strong></span>' in ranks
    plots = [a["data-plot"] for t, a in parse(page).tags if t == "img"]
    assert plots[0] == "ranks"
    assert page.index('data-plot="ranks"') < page.index('id="plots"')


def test_healthy_verdict_is_green() -> None:
    page = analyze_html(SAMPLE_RUNS / "healthy_hf_trainer")
    assert 'class="verdict good"' in page
    assert "VERDICT: healthy" in page


def test_ckpt_html_colours_component_statuses() -> None:
    report = audit_path(SAMPLE_RUNS / "ckpt_hf_optimizer_missing")
    out = io.StringIO()
    render_ckpt_html(report, out)
    page = out.getvalue()
    assert "NOT RESUMABLE: checkpoint-8" in page
    assert 'class="verdict bad"' in page
    table = page[page.index('id="components"'):page.index('id="findings"')]
    assert '<span class="bad"><strong>missing</strong></span>' in table
    assert table.count('<span class="good">ok</span>') >= 3
    findings = page[page.index('id="findings"'):]
    assert 'id="finding-CKPT002"' in findings and "What to change" in findings
    assert 'id="others"' in page and "checkpoint-4" in page[page.index('id="others"'):]
    assert "<script" not in page and "<img" not in page


def test_ckpt_html_resumable_is_green() -> None:
    out = io.StringIO()
    render_ckpt_html(audit_path(SAMPLE_RUNS / "ckpt_hf_good"), out)
    assert 'class="verdict good"' in out.getvalue()
    assert "RESUMABLE: " in out.getvalue()


def test_could_not_decide_is_amber_and_says_why() -> None:
    from autopsy.model.verdict import Verdict
    from autopsy.rules.engine import Diagnosis

    run = load_run(SAMPLE_RUNS / "nan_after_grad_spike")
    diagnosis = Diagnosis(verdict=Verdict.unknown("the run lacks <signals>"), findings=(),
                          skipped=(), ran=())
    out = io.StringIO()
    render_analysis_html(Report(run, diagnosis), out, plots=False)
    page = out.getvalue()
    assert 'class="verdict warn"' in page
    assert "VERDICT: unknown" in page and "the run lacks &lt;signals&gt;" in page
    assert "No rule found anything." in page and "Every rule ran." in page
    assert "<img" not in page
