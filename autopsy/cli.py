"""The ``autopsy`` command line: thin click commands over the library.

Nothing heavy (pandas, numpy, rich) is imported at start-up, so ``--help`` is
instant; each command imports what it needs when it runs. Library errors become
a one-line message and exit code 2; no traceback reaches the user for bad input.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from functools import wraps
from pathlib import Path
from typing import Any, TypeVar

import click

from autopsy import exitcodes
from autopsy._version import __version__

F = TypeVar("F", bound=Callable[..., Any])

CONTEXT_SETTINGS = {"help_option_names": ["-h", "--help"], "max_content_width": 100}


def _fail(message: str) -> None:
    click.echo(f"autopsy: error: {message}", err=True)
    sys.exit(exitcodes.USAGE)


def library_errors(func: F) -> F:
    """Map the library's typed errors (and broken pipes) to a one-line exit 2."""

    @wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        from autopsy.errors import AutopsyError

        try:
            return func(*args, **kwargs)
        except AutopsyError as exc:
            _fail(str(exc))
        except BrokenPipeError:
            sys.stderr.close()
            sys.exit(exitcodes.OK)
        except KeyboardInterrupt:
            click.echo("autopsy: interrupted", err=True)
            sys.exit(130)

    return wrapper  # type: ignore[return-value]


def _format_from(fmt: str | None, output: str | None, allowed: tuple[str, ...],
                 default: str) -> str:
    if fmt:
        return fmt
    if output:
        ext = Path(output).suffix.lower().lstrip(".")
        aliases = {"md": "markdown", "htm": "html", "pq": "parquet"}
        ext = aliases.get(ext, ext)
        if ext in allowed:
            return ext
    return default


@click.group(context_settings=CONTEXT_SETTINGS, epilog=exitcodes.HELP_TEXT)
@click.version_option(__version__, "-V", "--version", prog_name="autopsy")
def cli() -> None:
    """Post-mortem of a failed deep-learning training run.

    Point it at what a run left behind (TensorBoard event files, Hugging Face
    trainer_state.json and training_args.bin, checkpoint-N/ folders) and it says
    what was read, and - as rules land - what failed, where, why and what to change.
    autopsy never writes into the run directory.
    """


@cli.command(context_settings=CONTEXT_SETTINGS, epilog=exitcodes.HELP_TEXT)
@click.argument("run_dir", type=click.Path(path_type=Path))
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default=None,
              help="Output format (default: text, or from the -o extension).")
@click.option("-o", "--output", type=click.Path(dir_okay=False), default=None,
              help="Write the report to this file instead of stdout.")
@library_errors
def analyze(run_dir: Path, fmt: str | None, output: str | None) -> None:
    """Read a run directory and report what it holds.

    \b
    Example:
        autopsy analyze sample_runs/healthy_hf_trainer
        autopsy analyze runs/exp7 --format json -o exp7.json

    This version summarises the sources read, the steps covered per segment
    (one per start/restart), the tags found, the config with its source, and
    every problem met. The verdict is "unknown" until the rules engine lands.
    """
    from autopsy.api import is_empty, load_run, summary_verdict

    fmt = _format_from(fmt, output, ("text", "json"), "text")
    run = load_run(run_dir)
    if is_empty(run):
        found = len(run.sources) + len(run.unread)
        why = "; ".join(f"{p.source}: {p.what}" for p in run.problems[:3])
        _fail(f"nothing readable in {run_dir}: {found} file(s) found, none gave data"
              + (f" ({why})" if why else ""))
    verdict = summary_verdict(run)
    _emit(output, lambda out: _render_analyze(run, verdict, fmt, out))
    sys.exit(exitcodes.UNDECIDED)


def _render_analyze(run: Any, verdict: Any, fmt: str, out: Any) -> None:
    if fmt == "json":
        from autopsy.report.json_report import analyze_report, dumps

        out.write(dumps(analyze_report(run, verdict)))
    else:
        from autopsy.report.text_summary import render_summary

        render_summary(run, verdict, out)


def _emit(output: str | None, write: Callable[[Any], None]) -> None:
    if output is None:
        write(sys.stdout)
        return
    try:
        with open(output, "w", encoding="utf-8", newline="") as fh:
            write(fh)
    except OSError as exc:
        _fail(f"cannot write {output}: {exc.strerror}")


@cli.command(context_settings=CONTEXT_SETTINGS, epilog=exitcodes.HELP_TEXT)
@click.argument("run_dir", type=click.Path(path_type=Path))
@click.option("--tag", "tags", multiple=True, metavar="TAG",
              help="Keep only this tag (canonical like 'loss' or raw like 'train/loss'). "
                   "Repeatable.")
@click.option("--format", "fmt", type=click.Choice(["csv", "json", "parquet"]), default=None,
              help="Output format (default: csv, or from the -o extension).")
@click.option("-o", "--output", type=click.Path(dir_okay=False), default=None,
              help="Write to this file instead of stdout (required for parquet).")
@library_errors
def timeline(run_dir: Path, tags: tuple[str, ...], fmt: str | None,
             output: str | None) -> None:
    """Export every scalar point of a run as one long table.

    Columns, exactly: step, tag, raw_tag, value, wall_time, rank, segment,
    source. Every point is kept (never sampled); NaN and Inf values are kept
    (CSV: nan/inf/-inf; JSON: "NaN"/"Infinity"/"-Infinity").

    \b
    Example:
        autopsy timeline sample_runs/nan_after_grad_spike --tag loss --tag grad_norm
        autopsy timeline runs/exp7 -o exp7.parquet
    """
    from autopsy.api import load_run
    from autopsy.report import timeline as export

    fmt = _format_from(fmt, output, export.FORMATS, "csv")
    if fmt == "parquet" and output is None:
        _fail("parquet output needs -o FILE")
    run = load_run(run_dir)
    if run.scalars.empty:
        _fail(f"no scalars found in {run_dir}")
    frame = export.select_tags(run.scalars, tags)
    if frame.empty:
        _fail(f"no scalars match --tag {', '.join(tags)}; tags present: {', '.join(run.tags)}")
    frame = frame.sort_values(["source", "segment", "step"], kind="stable")
    if fmt == "parquet":
        try:
            export.write_parquet(frame, str(output))
        except ImportError:
            _fail("parquet output needs pyarrow: pip install 'train-autopsy[parquet]'")
        except OSError as exc:
            _fail(f"cannot write {output}: {exc.strerror}")
    elif fmt == "json":
        _emit(output, lambda out: export.write_json(frame, out))
    else:
        _emit(output, lambda out: export.write_csv(frame, out))


def main() -> None:
    """Console-script entry point."""
    cli(prog_name="autopsy")


if __name__ == "__main__":  # pragma: no cover
    main()
