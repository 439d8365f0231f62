"""The public API: read a run directory into one :class:`~autopsy.model.Run`."""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Iterable, Sequence
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any

from autopsy.errors import RunNotFound
from autopsy.model.config import RunConfig, as_flag
from autopsy.model.events import empty_events
from autopsy.model.problem import Problem
from autopsy.model.run import Run, SourceInfo
from autopsy.model.scalars import concat_scalars, name_sole_series
from autopsy.readers.base import RunPart
from autopsy.readers.discover import Discovery, discover, reader_modules
from autopsy.readers.reconcile import align_segments, merge_duplicates

if TYPE_CHECKING:  # pragma: no cover
    from autopsy.ckpt.components import AuditReport
    from autopsy.report.report import Report
    from autopsy.rules.engine import Diagnosis
    from autopsy.rules.settings import Settings


def _read_with(module: ModuleType, paths: list[Path], found: Discovery) -> list[RunPart]:
    """Run one reader over its files; an unexpected failure becomes a problem."""
    rels = [found.rel(p) for p in paths]
    group = getattr(module, "read_group", None)
    jobs: list[tuple[list[Path], list[str]]] = [(paths, rels)]
    if group is None:
        jobs = [([p], [r]) for p, r in zip(paths, rels, strict=True)]
    parts: list[RunPart] = []
    for job_paths, job_rels in jobs:
        try:
            if group is not None:
                parts.append(group(job_paths, job_rels))
            else:
                parts.append(module.read(job_paths[0], job_rels[0]))
        except Exception as exc:  # a reader bug must degrade the report, not crash it
            what = f"{module.NAME} reader failed: {type(exc).__name__}: {exc}"
            failed = [Problem(r, what, kind="reader_error") for r in job_rels]
            parts.append(RunPart(problems=failed))
    return parts


def load_run(path: str | os.PathLike[str] | Sequence[str | os.PathLike[str]], *,
             run: str | None = None) -> Run:
    """Read everything a run left behind into one :class:`~autopsy.model.Run`.

    ``path`` may be a run directory (an HF ``output_dir``, a TensorBoard logdir,
    any folder), a single file, or a list of them (all the rank logs of a job: they
    are read as one run, with paths relative to their common parent). Nothing is
    ever written there. Files that no reader recognises are listed in
    ``run.unread``; inputs that could not be read fully are in ``run.problems``.

    ``run`` picks one run of a store that holds many (a W&B folder, an MLflow file or
    SQLite store) by its id, a unique id prefix, or its name; without it the readers pick
    (MLflow: the newest failed run; W&B: the newest run) and say so in ``run.problems``.

    Raises:
        RunNotFound: ``path`` does not exist.
    """
    from autopsy.readers.selection import RUN_ID

    token = RUN_ID.set(run)
    try:
        return _load_run(path)
    finally:
        RUN_ID.reset(token)


def _load_run(path: str | os.PathLike[str] | Sequence[str | os.PathLike[str]]) -> Run:
    """:func:`load_run` for the run chosen (if any) in :data:`RUN_ID`."""
    if isinstance(path, (str, os.PathLike)):
        starts = [Path(path)]
    else:
        starts = [Path(p) for p in path]
        if not starts:
            raise RunNotFound("no path given")
    for start in starts:
        if not start.exists():
            raise RunNotFound(f"no such file or directory: {start}")
        if not (start.is_dir() or start.is_file()):
            raise RunNotFound(f"not a file or directory: {start}")
    if len(starts) == 1:
        root = starts[0]
        found = discover(root)
    else:
        absolute = [s.resolve() for s in starts]
        common = Path(os.path.commonpath([a if a.is_dir() else a.parent for a in absolute]))
        root = common
        found = discover(root, absolute)
    modules = {m.NAME: m for m in reader_modules()}
    if not found.by_reader:
        _take_text_files(found)
    config = RunConfig()
    scalar_frames = []
    event_frames = []
    problems = list(found.problems)
    sources: list[SourceInfo] = []
    for name, module in modules.items():  # sniffing order = config priority
        paths = found.by_reader.get(name)
        if not paths:
            continue
        parts = _read_with(module, paths, found)
        scalar_counts: Counter[str] = Counter()
        event_counts: Counter[str] = Counter()
        config_counts: Counter[str] = Counter()
        for part in parts:
            if part.scalars is not None and len(part.scalars):
                scalar_frames.append(part.scalars)
                scalar_counts.update(part.scalars["source"].value_counts().to_dict())
            if part.events is not None and len(part.events):
                event_frames.append(part.events)
                event_counts.update(part.events["source"].value_counts().to_dict())
            for entry in part.config:
                config.add(entry)
                config_counts[entry.source] += 1
            problems.extend(part.problems)
        for p in paths:
            rel = found.rel(p)
            sources.append(SourceInfo(rel, name, scalar_counts[rel], event_counts[rel],
                                      config_counts[rel]))
    import pandas as pd

    events = (
        pd.concat(event_frames, ignore_index=True) if event_frames else empty_events()
    )
    scalars = align_segments(
        concat_scalars(scalar_frames),
        follower_sources=[s.path for s in sources if s.reader == "trainer_state"],
        leader_sources=[s.path for s in sources if s.reader == "tensorboard"],
    )
    scalars = name_sole_series(merge_duplicates(scalars, {s.path: s.reader for s in sources}))
    checkpoints = (_audit_checkpoints(root, problems, fp16=_fp16(config))
                   if len(starts) == 1 else [])
    run = Run(
        root=root,
        scalars=scalars,
        events=events,
        config=config,
        checkpoints=checkpoints,
        problems=problems,
        sources=sorted(sources, key=lambda s: s.path),
        unread=[],
    )
    if checkpoints:
        _audit_resume_sources(run)
    audited = _audited_paths(run.checkpoints)
    run.unread = [found.rel(p) for p in found.unread if not _inside(p, audited)]
    return run


#: Suffixes of files that are never a training log, even when nothing else was found.
NOT_LOG_SUFFIXES = frozenset({
    ".json", ".yaml", ".yml", ".toml", ".ini", ".cfg", ".py", ".sh", ".ipynb", ".csv", ".tsv",
    ".html", ".xml", ".pt", ".pth", ".bin", ".ckpt", ".safetensors", ".npy", ".npz", ".pkl",
    ".png", ".jpg", ".jpeg", ".gif", ".svg", ".pdf", ".zip", ".tar", ".gz", ".h5",
})
#: At most this many unrecognised files are tried as text logs (see :func:`_take_text_files`).
MAX_FALLBACK_TEXT_FILES = 16


def _take_text_files(found: Discovery) -> None:
    """When no reader took any file, hand the unread text files to the text-log reader: a
    log saved under a name no log has (``notes.md``, ``output``, ``train_stdout``) is
    still a log. Files by suffix that are never logs stay unread, and at most
    :data:`MAX_FALLBACK_TEXT_FILES` are tried (the smallest first)."""
    from autopsy.readers.ranklogs.lines import looks_like_text, read_head

    sized = []
    for path in found.unread:
        if path.suffix.lower() in NOT_LOG_SUFFIXES or path.name.startswith("."):
            continue
        try:
            size = path.stat().st_size
        except OSError:
            continue
        if size:
            sized.append((size, str(path), path))
    chosen: list[Path] = []
    for _, _, path in sorted(sized):  # the heads are read only until enough are chosen
        if len(chosen) == MAX_FALLBACK_TEXT_FILES:
            break
        try:
            if looks_like_text(read_head(path)):
                chosen.append(path)
        except OSError:
            continue
    if chosen:
        found.by_reader["ranklogs"] = chosen
        found.unread = [p for p in found.unread if p not in chosen]


def _audit_resume_sources(run: Run) -> None:
    """Also audit the checkpoint each restart of the run resumed from (the newest one
    saved before the resume step), so the resume rules can say what it lacked; the
    audit of the newest checkpoints stops at the newest resumable one and may not
    reach it. Inserted in step order before the picked checkpoint (kept last)."""
    from autopsy.ckpt.audit import audit_one
    from autopsy.ckpt.layouts import find_checkpoints
    from autopsy.signals.resume import boundaries

    try:
        steps = sorted({b.resume_step for b in boundaries(run)})
        if not steps:
            return
        refs = [r for r in find_checkpoints(run.root) if r.step is not None]
        have = {str(Path(str(a.path)).resolve()) for a in run.checkpoints}
        extra = []
        for step in steps:
            before = [r for r in refs if r.step < step]
            if not before:
                continue
            ref = max(before, key=lambda r: r.order)
            if str(ref.path.resolve()) in have:
                continue
            have.add(str(ref.path.resolve()))
            audit = audit_one(ref, fp16=_fp16(run.config))
            if not audit.weights_only:
                extra.append(audit)
    except Exception as exc:  # the audit must degrade the report, never crash it
        run.problems.append(Problem(".", f"checkpoint audit failed: {type(exc).__name__}: "
                                         f"{exc}", kind="reader_error"))
        return
    if extra:
        *older, picked = run.checkpoints
        older = sorted([*older, *extra], key=lambda a: (a.step is None, a.step or 0))
        run.checkpoints = [*older, picked]


#: ``autopsy analyze`` also scans the checkpoints' tensors for NaN/Inf (as ``autopsy ckpt
#: --scan-values`` does) when they hold at most this many bytes together (~0.1 s of reading).
ANALYZE_SCAN_BYTES = 256 << 20


def _checkpoint_bytes(refs: list[Any], limit: int = ANALYZE_SCAN_BYTES) -> int:
    """The bytes of the checkpoints' files, counted up to just past ``limit``."""
    total = 0
    for ref in refs:
        path = Path(ref.path)
        files = [path] if path.is_file() else (f for f in path.rglob("*") if f.is_file())
        for f in files:
            try:
                total += f.stat().st_size
            except OSError:
                continue
            if total > limit:
                return total
    return total


def _audited_paths(checkpoints: list[Any]) -> list[Path]:
    out = []
    for audit in checkpoints:
        try:
            out.append(Path(str(audit.path)).resolve())
        except (OSError, RuntimeError):
            continue
    return out


def _inside(path: Path, roots: list[Path]) -> bool:
    """Whether ``path`` is one of ``roots`` or lies under one (a checkpoint's file)."""
    if not roots:
        return False
    try:
        resolved = path.resolve()
    except (OSError, RuntimeError):
        return False
    return any(resolved == r or r in resolved.parents for r in roots)


def _fp16(config: RunConfig) -> bool | None:
    """Whether the run's config says it trained in fp16 (None: it does not say)."""
    return as_flag(config.get("fp16"))


def _audit_checkpoints(root: Path, problems: list[Problem], *,
                       fp16: bool | None = None) -> list[Any]:
    """The audit of the run's checkpoints (metadata only), for the resume rules.

    From the one a resume would pick back to the newest resumable one (older ones are
    not read, so a run with many large checkpoints stays cheap); oldest first, the last
    is the one a resume would pick. Tensor values are scanned for NaN/Inf too when the
    checkpoints hold at most :data:`ANALYZE_SCAN_BYTES`. The root of an HF output dir
    that holds only the final ``save_model`` (no ``checkpoint-N/``) and weights-only
    files (model exports) are not checkpoints a resume uses, and are left out. A
    failure of the audit is a problem, never a crash.
    """
    if not root.is_dir():
        return []
    from autopsy.ckpt.audit import audit_path
    from autopsy.ckpt.layouts import Layout, find_checkpoints
    from autopsy.errors import NothingReadable

    try:
        scan = _checkpoint_bytes(find_checkpoints(root)) <= ANALYZE_SCAN_BYTES
        report = audit_path(root, stop_at_resumable=True, scan_values=scan, fp16=fp16)
    except NothingReadable:
        return []
    except Exception as exc:  # the audit must degrade the report, never crash it
        problems.append(Problem(".", f"checkpoint audit failed: {type(exc).__name__}: {exc}",
                                kind="reader_error"))
        return []
    audits = [a for a in report.checkpoints
              if not a.weights_only
              and not (Path(a.path) == root and a.layout == Layout.HF_TRAINER.value
                       and not root.name.startswith("checkpoint-"))]
    picked = report.picked
    if picked in audits:
        audits = [a for a in audits if a is not picked] + [picked]
    return audits


#: At most this many files are named in the "nothing readable" message.
FOUND_SHOWN = 6


def _size_text(n: int) -> str:
    for unit in ("B", "KB", "MB", "GB"):
        if n < 1024 or unit == "GB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024  # type: ignore[assignment]
    return f"{n} B"  # pragma: no cover


def nothing_readable(run: Run, where: str) -> str:
    """The one-line message for a path where nothing gave data: what was found, by kind
    and size, and where to see what autopsy reads."""
    items: list[str] = []
    for src in run.sources:
        items.append(f"{src.path} ({_kind_of(run.root, src.path, src.reader)}, nothing "
                     "recognised in it)")
    for rel in run.unread:
        items.append(f"{rel} ({_kind_of(run.root, rel, None)})")
    n = len(items)
    shown = "; ".join(items[:FOUND_SHOWN]) + (f"; and {n - FOUND_SHOWN} more"
                                              if n > FOUND_SHOWN else "")
    why = "; ".join(f"{p.source}: {p.what}" for p in run.problems[:2])
    found = f"{n} file(s) found: {shown}" if n else "no files found"
    return (f"nothing readable in {where}: {found}" + (f" [{why}]" if why else "")
            + ". `autopsy formats` lists what autopsy reads")


def _kind_of(root: Path, rel: str, reader: str | None) -> str:
    path = root / rel if root.is_dir() else root
    try:
        size = _size_text(path.stat().st_size)
    except OSError:
        size = "size unknown"
    if reader is not None:
        return f"{reader} file, {size}"
    suffix = Path(rel).suffix.lower() or "no extension"
    return f"{suffix}, {size}, no reader recognises it"


def is_empty(run: Run) -> bool:
    """Whether nothing at all could be read from the run (no rows, no config)."""
    return run.scalars.empty and run.events.empty and len(run.config) == 0


def diagnose(run: Run, settings: Settings | None = None) -> Diagnosis:
    """Run the rules over ``run``: the verdict, the ranked findings, the skipped rules.

    ``settings`` (see :func:`load_settings`) selects rules and overrides
    thresholds; the default runs every rule with its default thresholds.
    """
    from autopsy.rules.engine import diagnose as run_engine

    return run_engine(run, settings)


def report(run: Run, settings: Settings | None = None, *,
           ranks: bool | None = None) -> Report:
    """Diagnose ``run`` and gather everything a report of it shows (:class:`Report`).

    ``ranks``: compute the per-rank status (True), never (False), or when the run names
    more than one rank (None, what ``autopsy analyze`` does; ``autopsy ranks`` passes
    True). ``report(run).to_dict()`` is exactly what ``--format json`` prints.
    """
    from autopsy.report.report import Report, rank_count

    diagnosis = diagnose(run, settings)
    status = None
    if ranks or (ranks is None and rank_count(run) > 1):
        from autopsy.signals.ranks import rank_status

        status = rank_status(run)
    return Report(run, diagnosis, status)


def load_settings(
    *,
    sets: Iterable[str] = (),
    select: Iterable[str] = (),
    ignore: Iterable[str] = (),
    config: str | os.PathLike[str] | None = None,
) -> Settings:
    """Rule settings from ``[tool.autopsy]`` in a pyproject.toml and ``CODE.name=value`` items.

    Raises:
        UsageError: an unknown key, rule code or threshold, or a value of the wrong type.
    """
    from autopsy.rules.registry import load_rules
    from autopsy.rules.settings import load_settings as build

    return build(load_rules(), sets=sets, select=select, ignore=ignore,
                 config=None if config is None else Path(config))


def audit_checkpoint(
    path: str | os.PathLike[str],
    *,
    world_size: int | None = None,
    scan_values: bool = False,
) -> AuditReport:
    """Audit a checkpoint before resuming: can a resume continue exactly?

    ``path`` is a checkpoint file, a checkpoint folder, or an output/run directory
    holding several; every checkpoint is audited and ``report.resumable`` is about
    the one a resume would pick (the newest); ``report.newest_resumable`` names the
    newest that is. ``world_size`` is the number of ranks you will resume with;
    ``scan_values`` also reads every weight and optimizer moment for NaN/Inf.
    Metadata only: nothing from the files is executed, torch is never imported.

    Raises:
        RunNotFound: ``path`` does not exist.
        NothingReadable: no checkpoint at or under ``path`` could be read.
        UsageError: ``world_size`` is below 1.
    """
    from autopsy.ckpt.audit import audit_path

    return audit_path(path, world_size=world_size, scan_values=scan_values)
