"""The terminal report of ``autopsy analyze``: the verdict first, then the why.

Order: verdict (family, cause, step, one sentence), its evidence, its advice; the
other findings, ranked; the rules skipped and why; a short account of what was
read (``--verbose`` adds the full tables of sources, tags and config).
"""

from __future__ import annotations

from typing import IO, TYPE_CHECKING

from autopsy.model.finding import Evidence, Family, Finding
from autopsy.model.run import Run

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd
    from rich.console import Console

    from autopsy.report.report import Report

STYLE: dict[Family, str] = {Family.HEALTHY: "bold green", Family.UNKNOWN: "bold yellow"}
MAX_OTHERS = 12


def evidence_where(ev: Evidence) -> str:
    """Where an evidence line came from: ``file:line; tag steps a-b; key`` ('' if unknown).
    The text, HTML and Markdown reports all show it."""
    where = []
    if ev.source:
        where.append(ev.source + (f":{ev.line}" if ev.line else ""))
    if ev.tag:
        span = f" steps {ev.steps[0]}-{ev.steps[1]}" if ev.steps else ""
        where.append(f"{ev.tag}{span}")
    if ev.key:
        where.append(ev.key)
    return "; ".join(where)


def _evidence_lines(console: Console, finding: Finding, indent: str = "  ") -> None:
    for ev in finding.evidence:
        where = evidence_where(ev)
        suffix = f"  [dim]({_esc(where)})[/dim]" if where else ""
        console.print(f"{indent}- {_esc(ev.summary)}{suffix}")


def _esc(text: str) -> str:
    """Text from the run as written: never rich markup, control characters as ``\\xNN``."""
    from rich.markup import escape

    from autopsy.report._html import clean

    return escape(clean(text))


def render_analysis(report: Report, out: IO[str], *, verbose: bool = False) -> None:
    """Write the analysis report of ``report`` to ``out``; colour only when it is a terminal.

    With a rank status (``autopsy ranks``, or a run of several ranks), the per-rank table
    follows the verdict.
    """
    run, diagnosis, rank_status = report.run, report.diagnosis, report.rank_status
    from rich.console import Console

    console = Console(file=out, highlight=False)
    verdict = diagnosis.verdict
    style = STYLE.get(verdict.family, "bold red")
    console.print(f"[bold]autopsy[/bold] {_esc(run.root.as_posix())}")
    console.print(f"[{style}]VERDICT: {_esc(verdict.headline())}[/{style}]")
    console.print(f"[bold]{_esc(verdict.title)}[/bold]")
    console.print(_esc(verdict.message))
    top = next((f for f in diagnosis.findings if f.code == verdict.code), None)
    if top is not None:
        if top.evidence:
            console.print("[bold]Evidence[/bold]")
            _evidence_lines(console, top)
        if top.advice:
            console.print("[bold]What to change[/bold]")
            for item in top.advice:
                console.print(f"  - {_esc(item)}")
    if rank_status is not None:
        _rank_table(console, rank_status)
    others = [f for f in diagnosis.findings if f is not top]
    if others:
        console.print(f"[bold]Other findings[/bold] ({len(others)})")
        for f in others[:MAX_OTHERS]:
            step = f" at step {f.step}" if f.step is not None else ""
            console.print(f"  {f.code} {_esc('[' + f.severity.value + ']')} "
                          f"{_esc(f.title.rstrip('.'))}{step}: {_esc(f.message)}")
            if verbose:
                _evidence_lines(console, f, indent="      ")
                for item in f.advice:
                    console.print(f"      > {_esc(item)}")
        if len(others) > MAX_OTHERS:
            console.print(f"  ... {len(others) - MAX_OTHERS} more (see --format json)")
    skipped = [s for s in diagnosis.skipped if s.reason != "not selected"]
    if skipped and verbose:
        console.print(f"[bold]Skipped rules[/bold] ({len(skipped)})")
        for s in skipped:
            console.print(f"  {s.code} {s.name}: {_esc(s.reason)}")
    elif skipped:  # one line: the list is noise unless asked for (-v, or the JSON report)
        console.print(f"[bold]Skipped rules[/bold]: {len(skipped)}, their inputs not in the "
                      "run (-v lists each and why)")
    _run_account(console, run)
    if verbose:
        from autopsy.report.text_summary import render_summary

        console.print()
        render_summary(run, None, out)


def _run_account(console: Console, run: Run) -> None:
    segs = run.segments()
    steps = (f"steps {min(s['first_step'] for s in segs)}-{max(s['last_step'] for s in segs)}"
             if segs else "no steps")
    restarts = f", {len(segs)} segments (restarts)" if len(segs) > 1 else ""
    console.print(f"[bold]Read[/bold] {len(run.sources)} files ({len(run.scalars):,} points, "
                  f"{steps}{restarts}, {len(run.config)} config values); "
                  f"{len(run.unread)} files with no reader. --verbose shows them.")
    if run.problems:
        console.print(f"[bold red]Problems[/bold red] ({len(run.problems)}):")
        for p in run.problems[:MAX_OTHERS]:
            count = f" x{p.count}" if p.count > 1 else ""
            console.print(f"  {_esc(p.source)}: {_esc(p.what)}{count}")


#: Most ranks listed in the text table (the JSON form has them all).
MAX_RANKS = 64


def _cell(value: object) -> str:
    text = "" if value is None or str(value) in ("<NA>", "nan", "None") else str(value)
    return text


def _short(message: str, width: int = 60) -> str:
    """A log message without its bracketed prefixes (paths, glog headers), cut to ``width``."""
    import re

    text = re.sub(r"^(\s*(\[[^\]]*\]|[EWI]\d{4} [\d:.]+ \d+ \S+\])\s*)+", "", message)
    text = re.sub(r"^(\w+Error|\w+Exception): \[[^\]]*\]\s*", r"\1: ", text)
    text = " ".join(text.split())
    return text if len(text) <= width else text[: width - 3] + "..."


def _rank_table(console: Console, status: pd.DataFrame) -> None:
    from rich.table import Table

    if status.empty:
        console.print("[bold]Ranks[/bold]: no per-rank information in the logs")
        return
    table = Table(title="Ranks", title_justify="left", show_edge=False)
    for col in ("rank", "ended", "last step", "exit", "first error (file:line in --format json)"):
        table.add_column(col, justify="right" if col in ("rank", "last step", "exit") else "left",
                         overflow="fold")
    for rank, row in status.head(MAX_RANKS).iterrows():
        kind = _cell(row.get("first_error_kind"))
        message = _short(_cell(row.get("first_error_message")))
        error = f"{kind}: {message}" if kind else ""
        table.add_row(_cell(rank), _cell(row.get("ended")), _cell(row.get("last_step")),
                      _cell(row.get("exitcode")), _esc(error))
    console.print(table)
    if len(status) > MAX_RANKS:
        console.print(f"  ... {len(status) - MAX_RANKS} more ranks (see --format json)")
