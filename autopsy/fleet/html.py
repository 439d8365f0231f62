"""The fleet's HTML page: the summary tables, failures over time, and every row.

Built from the same blocks as the run report (:mod:`autopsy.report._html`): one
self-contained page, no script, plots embedded.
"""

from __future__ import annotations

from typing import IO, Any

from autopsy._version import __version__
from autopsy.report._html import Heading, Image, Para, Span, Table, Tone, to_html

#: Rows shown in the page's run table (the -o table file has them all).
MAX_ROWS_SHOWN = 2000
#: Families drawn in the failures-over-time plot, each its own colour; the rest as "other".
PLOTTED_FAMILIES = 8


def _failures_over_time(rows: list[dict[str, Any]]) -> Image | None:
    """Failed runs per day, stacked by family (by each run's end time)."""
    from collections import Counter
    from datetime import datetime, timezone

    from matplotlib.figure import Figure

    from autopsy.report.plots import to_png

    failed = [r for r in rows if r.get("wall_end") is not None
              and r.get("family") not in ("healthy", "unknown", None)]
    if not failed:
        return None
    days = sorted({datetime.fromtimestamp(r["wall_end"], tz=timezone.utc).date()
                   for r in failed})
    top = [f for f, _ in Counter(r["family"] for r in failed).most_common(PLOTTED_FAMILIES)]
    fig = Figure(figsize=(9, 3.2), dpi=100, layout="constrained")
    ax = fig.add_subplot()
    index = {d: i for i, d in enumerate(days)}
    bottom = [0] * len(days)
    for family in [*top, "other"]:
        counts = [0] * len(days)
        for r in failed:
            fam = r["family"] if r["family"] in top else "other"
            if fam == family:
                counts[index[datetime.fromtimestamp(r["wall_end"], tz=timezone.utc).date()]] += 1
        if any(counts):
            ax.bar(range(len(days)), counts, bottom=bottom, label=family)
            bottom = [b + c for b, c in zip(bottom, counts, strict=True)]
    step = max(1, len(days) // 12)
    ax.set_xticks(range(0, len(days), step),
                  [d.isoformat() for d in days][::step], rotation=30, ha="right")
    from matplotlib.ticker import MaxNLocator

    ax.yaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_ylabel("failed runs")
    ax.legend(fontsize=8, ncols=3)
    png, width, height = to_png(fig)
    return Image("failures_over_time.png", "Failed runs per day, by family", png, width, height)


def _num(value: Any, fmt: str = "{:,.1f}") -> str:
    return "" if value is None else fmt.format(value)


def render_fleet_html(rows: list[dict[str, Any]], summary: Any, out: IO[str]) -> None:
    """Write the fleet page for ``rows`` (and their ``summary``) to ``out``."""
    from autopsy.fleet.summary import summarize

    s = summary if summary is not None else summarize(rows)
    blocks: list[Any] = [
        Heading(f"autopsy fleet: {s.runs:,} runs", 1),
        Para([", ".join(f"{k} {v:,}" for k, v in s.families.items())]),
        Heading("Failure signatures"),
        Table(["runs", "GPU-hours lost", "kind", "signature", "example"],
              [[f"{c.count:,}", f"{c.gpu_hours_lost:,.1f}",
                Span("hardware", Tone.WARN) if c.hardware else "software",
                Span(c.signature, code=True), c.example] for c in s.clusters],
              numeric=frozenset({0, 1})),
    ]
    plot = _failures_over_time(rows)
    if plot is not None:
        blocks.append(plot)
    blocks += [
        Heading("Hosts"),
        Table(["host", "kind", "runs", "failed", "share of failures", "share of runs",
               "p-value", "lemon"],
              [[h.host, h.kind, f"{h.runs:,}", f"{h.failures:,}", f"{h.share_of_failures:.0%}",
                f"{h.share_of_runs:.0%}", f"{h.p_value:.2g}",
                Span("yes", Tone.BAD, strong=True) if h.lemon else ""] for h in s.hosts[:200]],
              numeric=frozenset({2, 3, 4, 5, 6})),
        Heading("Mean time to failure by run length"),
        Table(["run length", "runs", "failures", "hours per failure"],
              [[m["length"], f"{m['runs']:,}", f"{m['failures']:,}",
                _num(m["mean_hours_to_failure"], "{:,.2f}")] for m in s.mttf],
              numeric=frozenset({1, 2, 3})),
        Heading("Runs"),
        Table(["path", "family", "cause", "code", "step", "ranks", "steps", "hours",
               "GPU-h lost", "hosts", "error"],
              [[r["path"], Span(r["family"] or "", Tone.GOOD if r["family"] == "healthy"
                                else Tone.MUTED if r["family"] in ("unknown", None)
                                else Tone.BAD),
                r["cause"] or "", r["code"] or "", _num(r["step"], "{:,}"),
                ",".join(map(str, r["ranks"])), _num(r["steps"], "{:,}"),
                _num(r["wall_hours"], "{:,.2f}"), _num(r["gpu_hours_lost"], "{:,.1f}"),
                ", ".join(r["hosts"][:4]), r["error"] or ""] for r in rows[:MAX_ROWS_SHOWN]],
              numeric=frozenset({4, 6, 7, 8})),
    ]
    if len(rows) > MAX_ROWS_SHOWN:
        blocks.append(Para([f"... and {len(rows) - MAX_ROWS_SHOWN:,} more runs in the table "
                            "file (-o .csv, .jsonl or .parquet)."]))
    out.write(to_html(f"autopsy fleet: {s.runs:,} runs", blocks,
                      footer=f"autopsy {__version__}"))
