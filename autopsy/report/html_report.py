"""The HTML report of ``autopsy analyze`` and ``autopsy ranks``: one self-contained page.

Order: the verdict (family, cause, step, ranks, title, message) with its evidence and
advice; the per-rank table and timeline (distributed runs); the plots the run has data
for; every finding; the rules skipped, with the reason; the problems; what was read.
The page has no script and loads nothing: CSS inline, plots as PNG ``data:`` URIs.

:func:`analysis_blocks` builds the content once; the Markdown report
(:mod:`autopsy.report.markdown_report`) writes the same blocks.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import IO, TYPE_CHECKING, Any

from autopsy._version import __version__
from autopsy.model.finding import Evidence, Family, Finding, Severity
from autopsy.model.run import Run
from autopsy.model.verdict import Verdict
from autopsy.report._html import (
    Block,
    Bullets,
    Callout,
    Details,
    Heading,
    Image,
    Inline,
    Para,
    Span,
    Table,
    Tone,
    to_html,
)
from autopsy.report.summary import run_summary
from autopsy.report.text_report import evidence_where

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd

    from autopsy.report.plots import RenderedPlot
    from autopsy.report.report import Report
    from autopsy.rules.engine import Diagnosis

#: Most rows of the long tables (config, tags, sources); the JSON form has them all.
MAX_ROWS = 200

SEVERITY_TONE: dict[Severity, Tone] = {
    Severity.CRITICAL: Tone.BAD, Severity.ERROR: Tone.BAD, Severity.WARNING: Tone.WARN,
    Severity.INFO: Tone.MUTED,
}
ENDING_TONE: dict[str, Tone] = {
    "ok": Tone.GOOD, "timed_out": Tone.WARN, "silent": Tone.WARN, "raised": Tone.BAD,
    "oom": Tone.BAD, "killed": Tone.BAD, "terminated": Tone.MUTED, "exited": Tone.MUTED,
}


def family_tone(family: Family) -> Tone:
    """Green for healthy, amber for "could not decide", red for any failure."""
    if family is Family.HEALTHY:
        return Tone.GOOD
    return Tone.WARN if family is Family.UNKNOWN else Tone.BAD


def evidence_item(ev: Evidence) -> list[Inline]:
    """One evidence line: its summary, then where it came from (muted)."""
    where = evidence_where(ev)
    parts: list[Inline] = [ev.summary]
    if where:
        parts.append(Span(f"  ({where})", tone=Tone.MUTED))
    return parts


def finding_blocks(f: Finding, *, level: int = 3) -> list[Block]:
    """A finding: heading, facts line, message, evidence, advice."""
    facts: list[Inline] = [Span(f.severity.value, tone=SEVERITY_TONE[f.severity], strong=True),
                           f" · {f.family.value}"]
    if f.cause:
        facts.append(f" · cause {f.cause}")
    if f.step is not None:
        facts.append(f" · step {f.step}")
    if f.ranks:
        facts.append(" · rank " + ",".join(str(r) for r in f.ranks))
    facts.append(f" · confidence {f.confidence:.2f}")
    out: list[Block] = [Heading(f"{f.code} {f.name}: {f.title}", level=level,
                                anchor=f"finding-{f.code}"),
                        Para(facts), Para([f.message])]
    if f.evidence:
        out.append(Para([Span("Evidence", strong=True)]))
        out.append(Bullets([evidence_item(ev) for ev in f.evidence]))
    if f.advice:
        out.append(Para([Span("What to change", strong=True)]))
        out.append(Bullets([[a] for a in f.advice]))
    return out


def verdict_block(verdict: Verdict, findings: Sequence[Finding]) -> Callout:
    """The verdict box: headline, title, message, the top finding's evidence and advice."""
    body: list[Block] = [Para([Span(verdict.title, strong=True)]), Para([verdict.message])]
    if verdict.confidence:
        body.append(Para([Span(f"confidence {verdict.confidence:.2f}", tone=Tone.MUTED)]))
    top = next((f for f in findings if verdict.code and f.code == verdict.code), None)
    if top is not None and top.evidence:
        body.append(Heading("Evidence", level=3))
        body.append(Bullets([evidence_item(ev) for ev in top.evidence]))
    if top is not None and top.advice:
        body.append(Heading("What to change", level=3))
        body.append(Bullets([[a] for a in top.advice]))
    tone = family_tone(verdict.family)
    return Callout(headline=[Span(f"VERDICT: {verdict.headline()}", tone=tone)],
                   body=body, tone=tone)


def _cell(value: Any) -> str:
    return "" if value is None or str(value) in ("<NA>", "nan", "None", "NaT") else str(value)


def rank_blocks(status: pd.DataFrame) -> list[Block]:
    """The per-rank table: how each rank ended, its last step, exit code and first error."""
    if status.empty:
        return [Heading("Ranks", anchor="ranks"),
                Para(["No per-rank information in the logs."])]
    rows: list[list[Inline]] = []
    for rank, row in status.iterrows():
        ended = _cell(row.get("ended"))
        where = _cell(row.get("first_error_source"))
        line = _cell(row.get("first_error_line"))
        rows.append([
            Span(_cell(rank), strong=bool(row.get("root"))),
            Span(ended, tone=ENDING_TONE.get(ended, Tone.PLAIN), strong=True),
            _cell(row.get("last_step")), _utc(row.get("last_time")), _cell(row.get("exitcode")),
            _cell(row.get("first_error_kind")), _cell(row.get("first_error_step")),
            _short(_cell(row.get("first_error_message")), 240),
            Span(f"{where}:{line}" if where and line else where, code=bool(where)),
            "root" if bool(row.get("root")) else "",
        ])
    return [Heading("Ranks", anchor="ranks"),
            Table(["rank", "ended", "last step", "last activity (UTC)", "exit", "first error",
                   "at step", "message", "where", "role"], rows,
                  numeric=frozenset({0, 2, 4, 6}))]


def _utc(value: Any) -> str:
    """A wall time (seconds since the epoch) as ``2026-11-22 14:55:47``; "" if unknown."""
    import math
    from datetime import datetime, timezone

    try:
        seconds = float(value)
    except (TypeError, ValueError):
        return ""
    if not math.isfinite(seconds) or seconds <= 0:
        return ""
    try:
        return datetime.fromtimestamp(seconds, tz=timezone.utc).strftime("%Y-%m-%d %H:%M:%S")
    except (OverflowError, OSError, ValueError):
        return ""


def plot_blocks(plots: Sequence[RenderedPlot]) -> list[Block]:
    """The plots as images, in report order."""
    return [Image(p.name, p.title, p.png, p.width, p.height, p.caption) for p in plots]


def _read_blocks(run: Run) -> list[Block]:
    summary = run_summary(run)
    out: list[Block] = [Heading("What was read", anchor="read")]
    steps = summary["steps"]
    out.append(Para([f"{len(summary['sources'])} files read, {summary['points']:,} scalar "
                     f"points, {summary['events']:,} events"
                     + (f", steps {steps['first']}-{steps['last']}" if steps else "")
                     + f"; {len(summary['unread'])} files with no reader."]))
    if summary["sources"]:
        rows: list[list[Inline]] = [
            [Span(s["path"], code=True), s["reader"], f"{s['scalars']:,}", f"{s['events']:,}",
             str(s["config"])] for s in summary["sources"][:MAX_ROWS]]
        out.append(Details(f"Sources ({len(summary['sources'])})", [
            Table(["file", "reader", "scalars", "events", "config"], rows,
                  numeric=frozenset({2, 3, 4})), *_more(len(summary["sources"]))]))
    if len(summary["segments"]) > 1:
        rows = [[str(s["segment"]), str(s["first_step"]), str(s["last_step"]),
                 f"{s['points']:,}"] for s in summary["segments"]]
        out.append(Details(f"Segments: one per start or restart ({len(rows)})", [
            Table(["segment", "first step", "last step", "points"], rows,
                  numeric=frozenset({0, 1, 2, 3}))]))
    if summary["tags"]:
        rows = [[Span(t["tag"], code=True), f"{t['points']:,}",
                 f"{t['first_step']}-{t['last_step']}",
                 Span(str(t["non_finite"]), tone=Tone.BAD if t["non_finite"] else Tone.PLAIN),
                 ", ".join(t["raw_tags"])] for t in summary["tags"][:MAX_ROWS]]
        out.append(Details(f"Tags ({len(summary['tags'])})", [
            Table(["tag", "points", "steps", "non-finite", "written as"], rows,
                  numeric=frozenset({1, 3})), *_more(len(summary["tags"]))]))
    if summary["config"]:
        rows = [[Span(k, code=True), _short(e["value"]), e["source"]]
                for k, e in list(summary["config"].items())[:MAX_ROWS]]
        out.append(Details(f"Config ({len(summary['config'])})", [
            Table(["key", "value", "from"], rows), *_more(len(summary["config"]))]))
    if summary["checkpoints"]:
        rows = [[Span(c["path"], code=True), str(c["layout"]), _cell(c["step"]),
                 Span("exact", tone=Tone.GOOD) if c["resume_level"] == "exact" else
                 Span("with losses: " + ", ".join(c["losses"] or ["?"]), tone=Tone.WARN)
                 if c["resumable"] else
                 Span("loses " + ", ".join(c["losses"] or ["?"]), tone=Tone.BAD)]
                for c in summary["checkpoints"]]
        out.append(Details(f"Checkpoints, audited ({len(rows)})", [
            Table(["checkpoint", "layout", "step", "resume"], rows, numeric=frozenset({2}))]))
    if summary["unread"]:
        shown = summary["unread"][:MAX_ROWS]
        out.append(Details(f"No reader for ({len(summary['unread'])})",
                           [Bullets([[Span(u, code=True)] for u in shown]),
                            *_more(len(summary["unread"]))]))
    return out


def _more(total: int) -> list[Block]:
    """A note under a list cut at :data:`MAX_ROWS`."""
    if total <= MAX_ROWS:
        return []
    return [Para([Span(f"... {total - MAX_ROWS:,} more (--format json has them all)",
                       tone=Tone.MUTED)])]


def _short(value: Any, width: int = 120) -> str:
    text = value if isinstance(value, str) else repr(value)
    return text if len(text) <= width else text[: width - 3] + "..."


def analysis_blocks(run: Run, diagnosis: Diagnosis, *,
                    rank_status: pd.DataFrame | None = None,
                    plots: Sequence[RenderedPlot] | None = None,
                    plots_note: str | None = None) -> list[Block]:
    """The whole report as blocks, in report order (see the module docstring).

    ``plots`` are the rendered plots (the per-rank timeline among them); ``plots_note``
    is said instead when there are none to show (Markdown to stdout).
    """
    verdict = diagnosis.verdict
    findings = list(diagnosis.findings)
    blocks: list[Block] = [
        Heading(f"autopsy: {run.root.as_posix()}", level=1),
        verdict_block(verdict, findings),
    ]
    rest = list(plots or ())
    if rank_status is not None:
        blocks.extend(rank_blocks(rank_status))
        timeline = [p for p in rest if p.name == "ranks"]
        blocks.extend(plot_blocks(timeline))
        rest = [p for p in rest if p.name != "ranks"]
    if rest or plots_note:
        blocks.append(Heading("Plots", anchor="plots"))
        blocks.extend(plot_blocks(rest))
        if plots_note:
            blocks.append(Para([Span(plots_note, tone=Tone.MUTED)]))
    blocks.append(Heading(f"Findings ({len(findings)})", anchor="findings"))
    if not findings:
        blocks.append(Para(["No rule found anything."]))
    for f in findings:
        blocks.extend(finding_blocks(f))
    skipped = [s for s in diagnosis.skipped if s.reason != "not selected"]
    unselected = len(diagnosis.skipped) - len(skipped)
    blocks.append(Heading(f"Skipped rules ({len(skipped)})", anchor="skipped"))
    if skipped:
        blocks.append(Table(["code", "rule", "why it did not run"],
                            [[Span(s.code, code=True), s.name, s.reason] for s in skipped]))
    if unselected:
        blocks.append(Para([Span(f"{unselected} more not selected (--select/--ignore).",
                                 tone=Tone.MUTED)]))
    if not skipped and not unselected:
        blocks.append(Para(["Every rule ran."]))
    blocks.append(Heading(f"Problems ({len(run.problems)})", anchor="problems"))
    if run.problems:
        blocks.append(Table(
            ["file", "what is wrong", "still used", "times"],
            [[Span(p.source, code=True), Span(p.what, tone=Tone.BAD), p.used, str(p.count)]
             for p in run.problems], numeric=frozenset({3})))
    else:
        blocks.append(Para(["Every input was read fully."]))
    blocks.extend(_read_blocks(run))
    return blocks


#: Said instead of the plots when matplotlib cannot be imported.
NO_MATPLOTLIB = "Plots left out: matplotlib is not installed (pip install 'matplotlib>=3.7')."


def plotting_available() -> bool:
    """Whether matplotlib can be imported (it is a dependency, but may have been removed)."""
    import importlib.util

    return importlib.util.find_spec("matplotlib") is not None


def footer(run: Run) -> str:
    """The line under every report: the version, and that the run was only read."""
    return (f"autopsy {__version__} · read-only post-mortem of {run.root.as_posix()} · "
            "self-contained page: no script, nothing loaded from the network")


def render_analysis_html(report: Report, out: IO[str], *, plots: bool = True) -> None:
    """Write the HTML report of ``report`` to ``out`` (plots rendered unless ``plots`` is
    False)."""
    run, diagnosis, rank_status = report.run, report.diagnosis, report.rank_status
    rendered: list[RenderedPlot] = []
    note = None
    if plots and plotting_available():
        from autopsy.report.plots import render_plots

        errors: list[str] = []
        rendered = render_plots(run, diagnosis.findings, rank_status, errors)
        note = "; ".join(errors) or None
    elif plots:
        note = NO_MATPLOTLIB
    blocks = analysis_blocks(run, diagnosis, rank_status=rank_status, plots=rendered,
                             plots_note=note)
    title = f"autopsy: {diagnosis.verdict.headline()} · {run.root.name or run.root.as_posix()}"
    out.write(to_html(title, blocks, footer(run)))
