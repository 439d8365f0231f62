"""The terminal form of a run summary (rich; plain text when piped)."""

from __future__ import annotations

from typing import IO, Any

from autopsy.model.run import Run
from autopsy.model.verdict import Verdict
from autopsy.report._html import clean
from autopsy.report.summary import run_summary

#: At most this many rows of a long list are shown; the JSON form has them all.
MAX_ROWS = 25


def _t(text: object) -> str:
    """Text from the run (paths, tags, config), shown as written: never rich markup, and
    control characters as ``\\xNN`` (a run path with ``[/]`` in it must not break the table)."""
    from rich.markup import escape

    return escape(clean(text))


def _fmt_value(value: Any) -> str:
    text = repr(value) if not isinstance(value, str) else value
    return _t(text if len(text) <= 40 else text[:37] + "...")


def render_summary(run: Run, verdict: Verdict | None, out: IO[str]) -> None:
    """Write the run summary to ``out``; colour only when ``out`` is a terminal."""
    from rich.console import Console
    from rich.table import Table

    console = Console(file=out, highlight=False, soft_wrap=False)
    summary = run_summary(run)
    console.print(f"[bold]autopsy[/bold] {_t(summary['path'])}")
    if verdict is not None:
        console.print(f"[bold]verdict:[/bold] {verdict.family.value} - {_t(verdict.message)}")

    sources = Table(title="Sources read", title_justify="left", show_edge=False)
    for col in ("file", "reader", "scalars", "config"):
        sources.add_column(col, justify="right" if col in ("scalars", "config") else "left")
    for row in summary["sources"][:MAX_ROWS]:
        sources.add_row(_t(row["path"]), row["reader"], f"{row['scalars']:,}", str(row["config"]))
    if len(summary["sources"]) > MAX_ROWS:
        sources.add_row(f"... {len(summary['sources']) - MAX_ROWS} more", "", "", "")
    console.print(sources)

    if summary["segments"]:
        segs = Table(title="Segments (one per start/restart)", title_justify="left",
                     show_edge=False)
        for col in ("segment", "first step", "last step", "points"):
            segs.add_column(col, justify="right")
        for s in summary["segments"]:
            segs.add_row(str(s["segment"]), str(s["first_step"]), str(s["last_step"]),
                         f"{s['points']:,}")
        console.print(segs)

    if summary["tags"]:
        tags = Table(title="Tags", title_justify="left", show_edge=False)
        for col in ("tag", "points", "steps", "non-finite", "written as"):
            tags.add_column(col, justify="right" if col in ("points", "non-finite") else "left")
        for t in summary["tags"][:MAX_ROWS]:
            tags.add_row(_t(t["tag"]), f"{t['points']:,}", f"{t['first_step']}-{t['last_step']}",
                         str(t["non_finite"]), _fmt_value(", ".join(t["raw_tags"])))
        if len(summary["tags"]) > MAX_ROWS:
            tags.add_row(f"... {len(summary['tags']) - MAX_ROWS} more", "", "", "", "")
        console.print(tags)

    if summary["config"]:
        cfg = Table(title="Config", title_justify="left", show_edge=False)
        cfg.add_column("key")
        cfg.add_column("value")
        cfg.add_column("from")
        for key, entry in list(summary["config"].items())[:MAX_ROWS * 2]:
            cfg.add_row(_t(key), _fmt_value(entry["value"]), _t(entry["source"]))
        console.print(cfg)

    if summary["checkpoints"]:
        ckpts = Table(title="Checkpoints (audited, metadata only)", title_justify="left",
                      show_edge=False)
        for col in ("checkpoint", "layout", "step", "resume"):
            ckpts.add_column(col, justify="right" if col == "step" else "left")
        for c in summary["checkpoints"][-MAX_ROWS:]:
            resume = "exact" if c["resume_level"] == "exact" else _t(
                ("with losses: " if c["resumable"] else "loses ")
                + ", ".join(c["losses"] or ["?"]))
            step = "" if c["step"] is None else str(c["step"])
            ckpts.add_row(_t(c["path"]), str(c["layout"]), step, resume)
        console.print(ckpts)

    if summary["unread"]:
        shown = _t(", ".join(summary["unread"][:8]))
        more = len(summary["unread"]) - 8
        console.print(f"[bold]No reader for[/bold] {len(summary['unread'])} files: {shown}"
                      + (f", ... {more} more" if more > 0 else ""))
    if run.problems:
        console.print(f"[bold red]Problems[/bold red] ({len(run.problems)}):")
        for p in run.problems[:MAX_ROWS]:
            used = f" (used: {p.used})" if p.used else ""
            count = f" x{p.count}" if p.count > 1 else ""
            console.print(clean(f"  {p.source}: {p.what}{count}{used}"), markup=False)
        if len(run.problems) > MAX_ROWS:
            console.print(f"  ... {len(run.problems) - MAX_ROWS} more (see --format json)")
