"""The ``autopsy`` command line: thin click commands over the library.

Nothing heavy (pandas, numpy, rich) is imported at start-up, so ``--help`` is
instant; each command imports what it needs when it runs. Library errors become
a one-line message and exit code 2; no traceback reaches the user for bad input.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Callable
from functools import wraps
from pathlib import Path
from typing import Any, NoReturn, TypeVar

import click

from autopsy import exitcodes
from autopsy._version import __version__

F = TypeVar("F", bound=Callable[..., Any])

CONTEXT_SETTINGS = {"help_option_names": ["-h", "--help"], "max_content_width": 100}


def _fail(message: str) -> NoReturn:
    from autopsy.report._html import clean  # file names from the run: no escape sequences

    # one line, whatever a file name holds (clean keeps newlines, as text reports need)
    line = clean(message).replace("\n", "\\x0a")
    click.echo(f"autopsy: error: {line}", err=True)
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
            sys.exit(exitcodes.INTERRUPTED)

    return wrapper  # type: ignore[return-value]


#: The formats of the report commands (analyze, ranks, ckpt).
REPORT_FORMATS: tuple[str, ...] = ("text", "json", "markdown", "html")


def _reading_progress() -> Any:
    """Progress bars on stderr (a terminal only) for reads that last more than a second."""
    from autopsy.report.progress import stderr_progress

    return stderr_progress()


def _stdout_dash(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    """``-o -`` is standard output, as for most command-line tools (not a file named ``-``)."""
    return None if value == "-" else value


_SIZE_SUFFIX = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}


def _byte_size(ctx: click.Context, param: click.Parameter, value: str | None) -> int | None:
    """``--scan-budget``: a byte count, maybe with a K, M, G or T suffix (``500M``)."""
    if value is None:
        return None
    text = value.strip().upper().removesuffix("IB").removesuffix("B")
    unit = text[-1:] if text[-1:].isalpha() else ""
    try:
        size = float(text[:-1] if unit else text) * _SIZE_SUFFIX[unit]
    except (ValueError, KeyError):
        size = -1.0
    if not 0 <= size < 1 << 62:
        raise click.BadParameter(f"{value!r}: give bytes, e.g. 4G, 500M or 2000000000")
    return int(size)


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


_FLOPS_SUFFIX = {"": 1.0, "G": 1e9, "T": 1e12, "P": 1e15}


def _flops(ctx: click.Context, param: click.Parameter, value: str | None) -> float | None:
    """``--peak-flops``: a number of FLOP/s, maybe with a G, T or P suffix (``989T``)."""
    if value is None:
        return None
    text = value.strip().upper().removesuffix("FLOPS").removesuffix("FLOP/S")
    scale = _FLOPS_SUFFIX.get(text[-1:], None) if text[-1:].isalpha() else 1.0
    number = text[:-1] if text[-1:].isalpha() else text
    try:
        flops = float(number) * (scale if scale is not None else math.nan)
    except ValueError:
        flops = math.nan
    if not math.isfinite(flops) or flops <= 0:
        raise click.BadParameter(f"{value!r}: give FLOP/s per device, e.g. 989e12 or 989T")
    return flops


def rule_options(func: F) -> F:
    """The rule-selection options shared by the commands that run rules.

    ``--gpu`` and ``--peak-flops`` are shorthands for ``--set SLOW005.gpu=...`` and
    ``--set SLOW005.peak_flops=...`` (an explicit ``--set`` wins).
    """

    @wraps(func)
    def wrapper(*args: Any, gpu: str | None = None, peak_flops: float | None = None,
                sets: tuple[str, ...] = (), **kwargs: Any) -> Any:
        extra = [f"SLOW005.gpu={gpu}"] if gpu else []
        if peak_flops is not None:
            extra.append(f"SLOW005.peak_flops={peak_flops!r}")
        for key in ("select", "ignore"):  # --select NAN,CFG as ruff takes it
            if kwargs.get(key):
                kwargs[key] = tuple(part.strip() for value in kwargs[key]
                                    for part in value.split(",") if part.strip())
        return func(*args, sets=(*extra, *sets), **kwargs)

    options = [
        click.option("--set", "sets", multiple=True, metavar="CODE.NAME=VALUE",
                     help="Override a rule threshold, e.g. --set NAN001.spike_ratio=20. "
                          "Repeatable."),
        click.option("--select", multiple=True, metavar="RULE",
                     help="Run only these rules: a code (NAN001), a code prefix (NAN), a "
                          "family (nan_inf) or a rule name; a comma list (NAN,CFG) or "
                          "repeated."),
        click.option("--ignore", multiple=True, metavar="RULE",
                     help="Do not run these rules (same forms as --select)."),
        click.option("--config", type=click.Path(dir_okay=False, path_type=Path), default=None,
                     help="A pyproject.toml with a [tool.autopsy] table (default: the nearest "
                          "one from the current directory up)."),
        click.option("--gpu", metavar="NAME", default=None,
                     help="The accelerator the run used (h100, a100-80gb, mi300x, ...), for "
                          "MFU (SLOW005); same as --set SLOW005.gpu=NAME."),
        click.option("--peak-flops", callback=_flops, metavar="FLOPS", default=None,
                     help="Peak dense FLOP/s per device in the run's precision (989e12 or "
                          "989T), for MFU (SLOW005); same as --set SLOW005.peak_flops=X."),
    ]
    for option in reversed(options):
        wrapper = option(wrapper)
    return wrapper  # type: ignore[return-value]


@cli.command(context_settings=CONTEXT_SETTINGS, epilog=exitcodes.HELP_TEXT)
@click.argument("run_dir", type=click.Path(path_type=Path))
@click.option("--format", "fmt", type=click.Choice(list(REPORT_FORMATS)), default=None,
              help="Output format (default: text, or from the -o extension: .json, .md, "
                   ".html).")
@click.option("-o", "--output", type=click.Path(dir_okay=False), default=None,
              callback=_stdout_dash,
              help="Write the report to this file instead of stdout (- is stdout).")
@click.option("-v", "--verbose", is_flag=True,
              help="Text report: also every finding's evidence and the full tables of "
                   "sources, tags and config.")
@click.option("--run", "run_id", metavar="ID", default=None,
              help="In a store of many runs (an MLflow mlruns/ or mlflow.db, a wandb/ folder), "
                   "read this run (its id, a unique prefix, or its name); default: MLflow's "
                   "newest failed run, W&B's newest run.")
@rule_options
@library_errors
def analyze(run_dir: Path, fmt: str | None, output: str | None, verbose: bool,
            run_id: str | None, sets: tuple[str, ...], select: tuple[str, ...],
            ignore: tuple[str, ...], config: Path | None) -> None:
    """Post-mortem of a run directory: what failed, where, why, what to change.

    \b
    Example:
        autopsy analyze sample_runs/nan_after_grad_spike
        autopsy analyze runs/exp7 --format json -o exp7.json
        autopsy analyze runs/exp7 --set NAN001.spike_ratio=20 --ignore CFG

    The verdict comes first (family, cause, first bad step, one sentence), then its
    evidence and what to change, then the other findings ranked, and the rules
    skipped with the reason. `autopsy rules` lists the rules; `autopsy explain
    CODE` documents one.
    """
    from autopsy.api import is_empty, load_run, load_settings, nothing_readable, report

    fmt = _format_from(fmt, output, REPORT_FORMATS, "text")
    _refuse_output_in_run(output, (run_dir,), fmt)
    settings = load_settings(sets=sets, select=select, ignore=ignore, config=config)
    with _reading_progress():
        run = load_run(run_dir, run=run_id)
    if is_empty(run):
        missing = [p for p in run.problems if p.kind == "run_not_found"]
        _fail(f"{missing[0].source}: {missing[0].what}" if missing
              else nothing_readable(run, str(run_dir)))
    rep = report(run, settings)
    _emit(output, lambda out: _render(rep, fmt, out, verbose, output))
    sys.exit(rep.exit_code)


def _render(rep: Any, fmt: str, out: Any, verbose: bool, output: str | None = None) -> None:
    """Write one :class:`~autopsy.report.report.Report` in ``fmt`` (every renderer takes the
    same object: ``analyze`` and ``ranks`` differ only in how it was built)."""
    if fmt == "html":
        from autopsy.report.html_report import render_analysis_html

        render_analysis_html(rep, out)
    elif fmt == "markdown":
        from autopsy.report.markdown_report import render_analysis_markdown

        # plots go beside a file; beside a device or pipe (-o /dev/stdout) there is no folder
        target = Path(output) if output else None
        if target is not None and target.exists() and not target.is_file():
            target = None
        render_analysis_markdown(rep, out, output=target)
    elif fmt == "json":
        out.write(rep.to_json())
    else:
        from autopsy.report.text_report import render_analysis

        render_analysis(rep, out, verbose=verbose)


@cli.command(context_settings=CONTEXT_SETTINGS, epilog=exitcodes.HELP_TEXT)
@click.argument("paths", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option("--format", "fmt", type=click.Choice(list(REPORT_FORMATS)), default=None,
              help="Output format (default: text, or from the -o extension: .json, .md, "
                   ".html).")
@click.option("-o", "--output", type=click.Path(dir_okay=False), default=None,
              callback=_stdout_dash,
              help="Write the report to this file instead of stdout (- is stdout).")
@click.option("-v", "--verbose", is_flag=True,
              help="Text report: also every finding's evidence and the tables of what was read.")
@rule_options
@library_errors
def ranks(paths: tuple[Path, ...], fmt: str | None, output: str | None, verbose: bool,
          sets: tuple[str, ...], select: tuple[str, ...], ignore: tuple[str, ...],
          config: Path | None) -> None:
    """Read every rank's log of a distributed job: who failed first, who hung, and why.

    PATHS are log files or folders (a torchrun --log-dir, a folder of per-rank
    logs, one interleaved log, slurm-*.out, .gz files), read together as one job.

    \b
    Example:
        autopsy ranks logs/
        autopsy ranks slurm-1234.out --format json -o ranks.json

    The verdict comes first (family, cause, culprit rank, step), then a table of
    every rank: how it ended (raised, oom, killed, timed out, terminated,
    silent, ok), its last step and its first error; then the other findings.
    """
    from autopsy.api import is_empty, load_run, load_settings, nothing_readable, report

    fmt = _format_from(fmt, output, REPORT_FORMATS, "text")
    _refuse_output_in_run(output, paths, fmt)
    settings = load_settings(sets=sets, select=select, ignore=ignore, config=config)
    with _reading_progress():
        run = load_run(list(paths))
    if is_empty(run):
        _fail(nothing_readable(run, ", ".join(str(p) for p in paths)))
    rep = report(run, settings, ranks=True)
    _emit(output, lambda out: _render(rep, fmt, out, verbose, output))
    sys.exit(rep.exit_code)


def _scan_progress() -> Callable[[int], None]:
    """A progress line on stderr for ``--scan-values`` (a terminal only), at most 5 a second."""
    import time

    state = {"bytes": 0, "shown": 0.0}

    def show(nbytes: int) -> None:
        state["bytes"] += nbytes
        now = time.monotonic()
        if now - state["shown"] >= 0.2:
            state["shown"] = now
            click.echo(f"\rautopsy: scanning values: {state['bytes'] / 1e9:.2f} GB",
                       nl=False, err=True)

    return show


CKPT_EPILOG = ("Exit codes: 0 an exact resume from the picked checkpoint is possible (with "
               "--allow-losses: any resume is); 1 it is not (the report says what a resume "
               "would lose, or go on without; a checkpoint found but unreadable is not "
               "resumable); 2 usage error or no checkpoint at the path.")


@cli.command(context_settings=CONTEXT_SETTINGS, epilog=CKPT_EPILOG)
@click.argument("path", type=click.Path(path_type=Path))
@click.option("--world-size", type=click.IntRange(min=1), default=None, metavar="N",
              help="The number of ranks you will resume with: checked against the files.")
@click.option("--scan-values", is_flag=True,
              help="Check every weight and optimizer-moment tensor for NaN/Inf, however many "
                   "bytes (by default the first --scan-budget bytes are, moments first).")
@click.option("--scan-budget", callback=_byte_size, metavar="SIZE", default=None,
              help="Bytes of tensor values to check for NaN/Inf (default 4G; 500M, 20G...). "
                   "Tensors past it are reported as not scanned: no exact-resume verdict.")
@click.option("--no-scan", is_flag=True,
              help="Check no tensor value (metadata only; the fastest audit).")
@click.option("--format", "fmt", type=click.Choice(list(REPORT_FORMATS)), default=None,
              help="Output format (default: text, or from the -o extension: .json, .md, "
                   ".html).")
@click.option("-o", "--output", type=click.Path(dir_okay=False), default=None,
              callback=_stdout_dash,
              help="Write the report to this file instead of stdout (- is stdout).")
@click.option("-v", "--verbose", is_flag=True,
              help="Text report: every evidence line, and the findings of every checkpoint.")
@click.option("--allow-losses", is_flag=True,
              help="Exit 0 for a resume with losses too (an RNG or data position the layout "
                   "did not save), not only for an exact one.")
@library_errors
def ckpt(path: Path, world_size: int | None, scan_values: bool, scan_budget: int | None,
         no_scan: bool, fmt: str | None, output: str | None, verbose: bool,
         allow_losses: bool) -> None:
    """Audit checkpoints before resuming: can a resume continue exactly?

    PATH is a checkpoint file (.pt, .bin, .ckpt, .safetensors), a checkpoint
    folder (checkpoint-N/, an accelerate save_state folder, global_stepN/, a
    torch.distributed.checkpoint folder), or an output/run directory holding
    several: every checkpoint is audited, the verdict is about the one a resume
    would pick (the newest), and the report names the newest resumable one.

    \b
    Example:
        autopsy ckpt runs/exp7/checkpoint-500
        autopsy ckpt runs/exp7 --world-size 8 --format json -o audit.json
        autopsy ckpt model.pt --scan-values

    The verdict comes first and has three levels: RESUMABLE (an exact resume),
    RESUMABLE WITH LOSSES (it goes on without state the layout did not save: the
    RNG streams, the data position; each loss is listed) and NOT RESUMABLE.
    Each component (weights, optimizer, scheduler, grad_scaler, rng, data_position,
    trainer_state, training_args) gets a status: ok, missing, inconsistent,
    corrupt, unsafe or not_applicable. Only metadata is read: pickles through a
    restricted unpickler that never runs anything from the file. `autopsy explain
    CKPT002` documents a check.
    """
    # the audit itself, not autopsy.api: api.py imports the readers, which import pandas
    from autopsy.ckpt.audit import audit_path

    fmt = _format_from(fmt, output, REPORT_FORMATS, "text")
    _refuse_output_in_run(output, (path,), fmt)
    from autopsy.ckpt.checks.values import DEFAULT_SCAN_BUDGET

    if no_scan and (scan_values or scan_budget is not None):
        _fail("--no-scan cannot go with --scan-values or --scan-budget")
    scan = not no_scan
    budget = None if scan_values else (scan_budget if scan_budget is not None
                                       else DEFAULT_SCAN_BUDGET)
    progress = _scan_progress() if scan and sys.stderr.isatty() else None
    try:
        report = audit_path(path, world_size=world_size, scan_values=scan,
                            progress=progress, scan_budget=budget)
    finally:
        if progress is not None:
            click.echo("\r\033[K", nl=False, err=True)

    def render(out: Any) -> None:
        if fmt == "html":
            from autopsy.report.ckpt_html import render_ckpt_html

            render_ckpt_html(report, out)
        elif fmt == "markdown":
            from autopsy.report.ckpt_html import render_ckpt_markdown

            render_ckpt_markdown(report, out)
        elif fmt == "json":
            from autopsy.report.ckpt_json import ckpt_report, dumps

            out.write(dumps(ckpt_report(report)))
        else:
            from autopsy.report.ckpt_text import render_ckpt

            render_ckpt(report, out, verbose=verbose)

    _emit(output, render)
    ok = report.resume_level == "exact" or (allow_losses and report.resumable)
    sys.exit(exitcodes.OK if ok else exitcodes.FAILURE)


def _print_listing(rows: list[dict[str, Any]], fmt: str) -> None:
    """The catalogue rows (rules, then checkpoint checks) as JSON or one line each."""
    if fmt == "json":
        import json

        click.echo(json.dumps(rows, indent=2))
        return
    for r in rows:
        causes = f" [{', '.join(r['causes'])}]" if r["causes"] else ""
        click.echo(f"{r['code']:<8} {r['name']:<22} {r['family']:<15} {r['title']}{causes}")


def _shipped_listing() -> list[dict[str, Any]] | None:
    """The rule catalogue shipped as ``autopsy/rules/catalogue.json`` (None if unreadable:
    the registry is then imported)."""
    import json

    path = Path(__file__).resolve().parent / "rules" / "catalogue.json"
    try:
        rows = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return rows if isinstance(rows, list) else None


@cli.command(name="rules", context_settings=CONTEXT_SETTINGS)
@click.option("--format", "fmt", type=click.Choice(["text", "json", "markdown"]),
              default="text", help="Output format.")
@click.option("--thresholds", "show_thresholds", is_flag=True,
              help="List every threshold instead: its default, the rules that declare it "
                   "and why it has that value (override with --set CODE.name=VALUE).")
@library_errors
def rules_command(fmt: str, show_thresholds: bool) -> None:
    """List the rule catalogue: code, name, family, causes and title.

    \b
    Example:
        autopsy rules
        autopsy rules --thresholds --format json
    """
    if not show_thresholds and fmt in ("text", "json"):
        rows = _shipped_listing()  # the catalogue as data: no rule (nor pandas) imported
        if rows is not None:
            _print_listing(rows, fmt)
            return
    from autopsy.rules.catalogue import markdown
    from autopsy.rules.registry import load_rules

    registry = load_rules()
    if show_thresholds:
        from autopsy.rules.catalogue import threshold_rows, thresholds_markdown, thresholds_text

        rows = threshold_rows(registry)
        if fmt == "json":
            import json

            click.echo(json.dumps([r.as_dict() for r in rows], indent=2))
        else:
            render = thresholds_markdown if fmt == "markdown" else thresholds_text
            click.echo(render(rows), nl=False)
        return
    if fmt == "markdown":
        click.echo(markdown(registry), nl=False)
        return
    from autopsy.rules.catalogue import listing

    _print_listing(listing(registry), fmt)


@cli.command(name="formats", context_settings=CONTEXT_SETTINGS)
@click.option("--format", "fmt", type=click.Choice(["text", "json", "markdown"]),
              default="text", show_default=True, help="Output format.")
def formats_command(fmt: str) -> None:
    """List every input format autopsy reads: what it takes from it, an example name.

    \b
    Example:
        autopsy formats
        autopsy formats --format json
    """
    from autopsy.report.formats_table import render_formats

    click.echo(render_formats(fmt), nl=False)


@cli.command(context_settings=CONTEXT_SETTINGS)
@click.argument("code")
@library_errors
def explain(code: str) -> None:
    """Print the documentation of one rule, or of one `autopsy ckpt` check.

    \b
    Example:
        autopsy explain NAN001
        autopsy explain CKPT002
    """
    from autopsy.ckpt.checks import explain_check

    text = explain_check(code)
    if text is not None:
        click.echo(text, nl=False)
        return
    from autopsy.rules.catalogue import explain_text
    from autopsy.rules.registry import load_rules

    registry = load_rules()
    spec = registry.get(code.strip().upper()) or next(
        (s for s in registry.values() if s.name == code.strip()), None)
    if spec is None:
        _fail(f"unknown rule {code!r}; `autopsy rules` lists them (checkpoint checks: "
              "CKPT001..CKPT032, see docs/ckpt.md)")
    click.echo(explain_text(spec), nl=False)


def _refuse_output_in_run(output: str | None, inputs: tuple[Path, ...], fmt: str) -> None:
    """Exit 2 when ``-o`` (or a Markdown report's plot folder) lies in what is read.

    The run directory is read-only to autopsy: a report written into it could overwrite
    the evidence (``-o run/trainer_state.json``) or be read back by the next analysis.
    """
    if output is None:
        return
    targets = [Path(output)]
    if fmt == "markdown":
        from autopsy.report.markdown_report import plots_dir_for

        targets.append(plots_dir_for(Path(output)))
    for source in inputs:
        root = source.resolve()
        for target in targets:
            where = target.resolve()
            if where == root or (root.is_dir() and where.is_relative_to(root)):
                what = "" if target == Path(output) else f" (its plots folder {target})"
                _fail(f"-o {output}{what} is in {source}, which autopsy reads and never "
                      "writes into; write the report elsewhere")


def _emit(output: str | None, write: Callable[[Any], None]) -> None:
    """Write the report to stdout, or to the file ``output`` (UTF-8).

    A file name from the run that is not valid UTF-8 (kept by Python as lone surrogates)
    is written as ``\\udcXX``; a stdout whose encoding cannot hold the report (say
    ``PYTHONIOENCODING=ascii``) is a one-line error, never a traceback.
    """
    if output is None:
        try:
            write(sys.stdout)
        except UnicodeEncodeError as exc:
            _fail(f"stdout ({exc.encoding}) cannot hold this report's characters: write it "
                  "to a file with -o FILE, or set PYTHONIOENCODING=utf-8")
        return
    try:
        fh = open(output, "w", encoding="utf-8", errors="backslashreplace", newline="")
    except OSError as exc:
        _fail(f"cannot write {output}: {exc.strerror}")
    try:
        with fh:
            write(fh)
    except OSError as exc:  # e.g. a Markdown report's plots folder cannot be made
        if Path(output).is_file():  # no half-written report left (never a device: /dev/full)
            Path(output).unlink()
        _fail(f"cannot write {exc.filename or output}: {exc.strerror}")


@cli.command(context_settings=CONTEXT_SETTINGS, epilog=exitcodes.HELP_TEXT)
@click.argument("run_dir", type=click.Path(path_type=Path))
@click.option("--tag", "tags", multiple=True, metavar="TAG",
              help="Keep only this tag (canonical like 'loss' or raw like 'train/loss'). "
                   "Repeatable.")
@click.option("--source", "sources", multiple=True, metavar="GLOB",
              help="Keep only points of the sources (paths relative to the run) matching "
                   "this glob, e.g. 'runs/*' or '*.log'. Repeatable.")
@click.option("--format", "fmt", type=click.Choice(["csv", "json", "parquet"]), default=None,
              help="Output format (default: csv, or from the -o extension).")
@click.option("-o", "--output", type=click.Path(dir_okay=False), default=None,
              callback=_stdout_dash,
              help="Write to this file instead of stdout (required for parquet).")
@library_errors
def timeline(run_dir: Path, tags: tuple[str, ...], sources: tuple[str, ...], fmt: str | None,
             output: str | None) -> None:
    """Export every scalar point of a run as one long table.

    Columns, exactly: step, tag, raw_tag, value, wall_time, rank, segment,
    source. Every point is kept (never sampled); NaN and Inf values are kept
    (CSV: nan/inf/-inf; JSON: "NaN"/"Infinity"/"-Infinity"). A point that several
    files hold (the HF Trainer writes each log entry to TensorBoard, to
    trainer_state.json and to its stdout) is written once, from TensorBoard first.

    \b
    Example:
        autopsy timeline sample_runs/nan_after_grad_spike --tag loss --tag grad_norm
        autopsy timeline runs/exp7 -o exp7.parquet
        autopsy timeline runs/exp7 --source 'lightning_logs/*' --tag loss
    """
    from autopsy.api import load_run
    from autopsy.report import timeline as export

    fmt = _format_from(fmt, output, export.FORMATS, "csv")
    _refuse_output_in_run(output, (run_dir,), fmt)
    if fmt == "parquet" and output is None:
        _fail("parquet output needs -o FILE")
    with _reading_progress():
        run = load_run(run_dir)
    if run.scalars.empty:
        _fail(f"no scalars found in {run_dir}")
    frame = export.select_tags(run.scalars, tags)
    if frame.empty:
        _fail(f"no scalars match --tag {', '.join(tags)}; tags present: {', '.join(run.tags)}")
    frame = export.select_sources(frame, sources)
    if frame.empty:
        present = sorted(set(run.scalars["source"].astype(str)))
        _fail(f"no scalars match --source {', '.join(sources)}; sources: {', '.join(present)}")
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


def _add_fleet() -> None:
    from autopsy.fleet.cli import fleet

    cli.add_command(fleet)


_add_fleet()


def main() -> None:
    """Console-script entry point."""
    cli(prog_name="autopsy")


if __name__ == "__main__":  # pragma: no cover
    main()
