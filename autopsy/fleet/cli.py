"""``autopsy fleet ROOT...`` and ``autopsy fleet diff GOOD BAD`` (see docs/fleet.md)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import click

from autopsy import exitcodes

CONTEXT_SETTINGS = {"help_option_names": ["-h", "--help"], "max_content_width": 100}

HELP_EPILOG = """\b
Exit codes: 0 every run diagnosed, none failed; 1 some run failed (or autopsy could not
diagnose it); 2 usage error, or no run found under the roots.
"""


@click.command(context_settings=CONTEXT_SETTINGS, epilog=HELP_EPILOG)
@click.argument("roots", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option("-o", "--output", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Write one row per run: .csv, .jsonl, .parquet, or .html (the summary "
                   "page with the table).")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text",
              help="The summary on stdout: text, or json (families, signature clusters, "
                   "hosts, mean time to failure).")
@click.option("-j", "--jobs", type=click.IntRange(min=0), default=0, metavar="N",
              help="Local worker processes (default: one per core; 1: in this process).")
@click.option("--dask", metavar="ADDRESS", default=None,
              help="Run on a Dask distributed scheduler at ADDRESS (tcp://host:8786), or "
                   "'local' for a LocalCluster of --jobs workers (needs the fleet extra).")
@click.option("--cache", "cache_dir", type=click.Path(file_okay=False, path_type=Path),
              default=None, help="Cache folder (default: ~/.cache/autopsy/fleet).")
@click.option("--no-cache", is_flag=True, help="Diagnose every run again; keep nothing.")
@click.option("--timeout", type=click.FloatRange(min=1), default=300.0, metavar="S",
              help="Seconds a run may take before it becomes a row with the error "
                   "(default 300).")
@click.option("--hosts", "hosts_file", type=click.Path(dir_okay=False, path_type=Path),
              default=None, help="CSV of path,host rows from the scheduler (sacct...): the "
                                 "hosts each run used, beside those its logs name.")
@click.option("--reports", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Also write each run's JSON report (what analyze --format json prints) "
                   "into this folder.")
@click.option("--set", "sets", multiple=True, metavar="CODE.name=VALUE",
              help="Override a rule threshold for every run (repeatable).")
def fleet(roots: tuple[Path, ...], output: Path | None, fmt: str, jobs: int, dask: str | None,
          cache_dir: Path | None, no_cache: bool, timeout: float, hosts_file: Path | None,
          reports: Path | None, sets: tuple[str, ...]) -> None:
    """Diagnose every run under ROOTs: which failures keep coming back, which hosts are
    lemons, how much GPU time each kind of failure cost.

    \b
    Example:
        autopsy fleet /mnt/runs -o fleet.parquet
        autopsy fleet /mnt/runs --dask tcp://scheduler:8786 --hosts sacct.csv
        autopsy fleet diff runs/good runs/bad

    A run is a folder holding files autopsy reads (the same readers as analyze); each
    is diagnosed once and cached by its files' sizes and mtimes, so a re-run only
    diagnoses what changed.
    """
    from autopsy.cli import _fail, library_errors

    @library_errors
    def go() -> None:
        if roots and str(roots[0]) == "diff" and not Path("diff").exists():
            if len(roots) != 3:
                _fail("fleet diff takes two runs: autopsy fleet diff GOOD_RUN BAD_RUN")
            _diff(roots[1], roots[2], fmt)
            return
        _fleet(list(roots), output, fmt, jobs, dask, cache_dir, no_cache, timeout,
               hosts_file, reports, sets)

    go()


def _fleet(roots: list[Path], output: Path | None, fmt: str, jobs: int, dask: str | None,
           cache_dir: Path | None, no_cache: bool, timeout: float, hosts_file: Path | None,
           reports: Path | None, sets: tuple[str, ...]) -> None:
    from autopsy.api import load_settings
    from autopsy.cli import _refuse_output_in_run
    from autopsy.fleet.cache import Cache, default_dir
    from autopsy.fleet.driver import read_hosts, run_fleet, write_reports
    from autopsy.fleet.summary import render_text, summarize
    from autopsy.fleet.table import write_rows

    load_settings(sets=sets)  # a bad --set is a usage error before any run is read
    if output is not None:
        _refuse_output_in_run(str(output), tuple(roots), "text")
    if reports is not None:
        _refuse_output_in_run(str(reports / "x.json"), tuple(roots), "json")
    cache = Cache(None if no_cache else (cache_dir or default_dir()))
    hosts = read_hosts(hosts_file) if hosts_file is not None else None
    result = run_fleet(roots, jobs=jobs, dask=dask, cache=cache, sets=sets, timeout=timeout,
                       hosts=hosts, progress=_progress())
    summary = summarize(result.rows)
    if output is not None:
        write_rows(result.rows, output, summary)
    if reports is not None:
        write_reports(result, reports)
    if fmt == "json":
        import json

        body: dict[str, Any] = summary.to_dict()
        body["cached"], body["diagnosed"] = result.cached, result.diagnosed
        click.echo(json.dumps(body, indent=2, allow_nan=False))
    else:
        render_text(summary, sys.stdout)
        click.echo(f"\n{result.diagnosed:,} diagnosed, {result.cached:,} from the cache"
                   + (f"; rows in {output}" if output else ""))
    failed = any(r["error"] or r["family"] not in ("healthy", "unknown") for r in result.rows)
    sys.exit(exitcodes.FAILURE if failed else exitcodes.OK)


def _progress() -> Any:
    """A progress line on stderr (a terminal only)."""
    if not sys.stderr.isatty():
        return None

    def show(done: int, total: int) -> None:
        end = "\n" if done == total else ""
        sys.stderr.write(f"\rautopsy fleet: {done:,}/{total:,} runs{end}")
        sys.stderr.flush()

    return show


def _diff(good: Path, bad: Path, fmt: str) -> None:
    from autopsy.fleet.diff import diff_runs, render_diff_text

    got = diff_runs(good, bad)
    if fmt == "json":
        import json

        click.echo(json.dumps(got, indent=2, allow_nan=False, default=str))
    else:
        render_diff_text(got, sys.stdout)
    sys.exit(exitcodes.OK)
