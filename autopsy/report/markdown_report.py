"""The Markdown report of ``autopsy analyze`` and ``autopsy ranks``: the HTML report's content.

The same blocks as :mod:`autopsy.report.html_report`. Written to a file (``-o
report.md``), the plots are PNG files in a ``report_files/`` folder beside it, linked
relatively; written to stdout, there are no plots and the report says so in one line.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import IO, TYPE_CHECKING

from autopsy._version import __version__
from autopsy.report._html import Image, md_esc, to_markdown
from autopsy.report.html_report import NO_MATPLOTLIB, analysis_blocks, plotting_available

if TYPE_CHECKING:  # pragma: no cover

    from autopsy.report.plots import RenderedPlot
    from autopsy.report.report import Report

#: Said instead of the plots when the report goes to stdout.
NO_PLOTS_NOTE = ("Plots are left out when the report goes to stdout; write it to a file "
                 "(-o report.md) to get them as PNG files beside it, or use -o report.html.")


def plots_dir_for(output: Path) -> Path:
    """The folder beside ``output`` that holds its plots: ``report.md`` -> ``report_files/``."""
    return output.with_name(f"{output.stem}_files")


def image_writer(folder: Path) -> Callable[[Image], str]:
    """A ``to_markdown`` image callback: write the PNG into ``folder``, return its link."""

    from urllib.parse import quote

    def write(image: Image) -> str:
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"{image.name}.png").write_bytes(image.png)
        # percent-encoded: a report named "my report (1).md" still links its plots
        return quote(f"{folder.name}/{image.name}.png")

    return write


def remove_stale_plots(folder: Path) -> None:
    """Delete the plots an earlier report left in ``folder`` (only files named like ours),
    so that a plot this run lacks does not linger beside the new report."""
    from autopsy.report.plots import PLOT_NAMES

    for name in PLOT_NAMES:
        stale = folder / f"{name}.png"
        if stale.is_file():
            stale.unlink()


def render_analysis_markdown(report: Report, out: IO[str], *,
                             output: Path | None = None) -> None:
    """Write the Markdown report of ``report`` to ``out``.

    ``output`` is the path of the file ``out`` writes to: with it the plots are rendered
    into :func:`plots_dir_for` and linked; without it (stdout) they are left out.
    """
    run, diagnosis, rank_status = report.run, report.diagnosis, report.rank_status
    rendered: list[RenderedPlot] = []
    note = None
    if output is not None and plotting_available():
        from autopsy.report.plots import render_plots

        errors: list[str] = []
        rendered = render_plots(run, diagnosis.findings, rank_status, errors)
        note = "; ".join(errors) or None
    else:
        note = NO_PLOTS_NOTE if output is None else NO_MATPLOTLIB
    blocks = analysis_blocks(run, diagnosis, rank_status=rank_status, plots=rendered,
                             plots_note=note)
    link: Callable[[Image], str | None] = lambda _image: None  # noqa: E731
    if output is not None:
        remove_stale_plots(plots_dir_for(output))
        link = image_writer(plots_dir_for(output))
    out.write(to_markdown(blocks, link))
    out.write(f"\n---\nautopsy {__version__} · read-only post-mortem of "
              f"{md_esc(run.root.as_posix())}\n")
