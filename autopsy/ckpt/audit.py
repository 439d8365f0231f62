"""Audit one checkpoint, or every checkpoint under a folder, and pick the one a resume uses.

Reads metadata only (pickles through the restricted unpickler, safetensors and zip
headers, JSON); tensor bytes are read only for a handful of scalar step counters,
and for every tensor under ``scan_values=True``. Never imports torch or pandas;
never writes anything.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable
from pathlib import Path

from autopsy.ckpt.checks import CHECKS, completeness, consistency, integrity
from autopsy.ckpt.checks.judge import Judge
from autopsy.ckpt.checks.values import ScanBudget
from autopsy.ckpt.components import AuditReport, CheckpointAudit, Component, Part, Status
from autopsy.ckpt.files import FileReader
from autopsy.ckpt.layouts import (
    CheckpointRef,
    Layout,
    find_checkpoints,
    part_of_folder,
    pick_newest,
)
from autopsy.ckpt.parts import Parts
from autopsy.errors import NothingReadable, RunNotFound, UsageError
from autopsy.model.finding import Evidence, Family, Finding, Severity

#: Called with the byte count of each tensor scanned (``--scan-values``).
Progress = Callable[[int], None]


def _gather(ref: CheckpointRef) -> Parts:
    base = ref.path if ref.path.is_dir() else ref.path.parent
    parts = Parts(layout=ref.layout, root=ref.path, reader=FileReader(base), name_step=ref.step)
    if ref.layout is Layout.HF_TRAINER:
        from autopsy.ckpt import hf

        hf.gather(parts, ref.path)
    elif ref.layout is Layout.ACCELERATE:
        from autopsy.ckpt import accel

        accel.gather(parts, ref.path)
    elif ref.layout is Layout.DEEPSPEED:
        from autopsy.ckpt import deepspeed

        deepspeed.gather(parts, ref.path)
    elif ref.layout is Layout.DCP:
        from autopsy.ckpt import dcp

        dcp.gather(parts, ref.path)
    elif ref.layout is Layout.SAFETENSORS:
        from autopsy.ckpt import plain

        plain.gather_safetensors(parts, ref.path)
    else:
        from autopsy.ckpt import plain

        plain.gather_torch(parts, ref.path)
    return parts


def audit_one(ref: CheckpointRef, *, world_size: int | None = None,
              scan_values: bool = False, fp16: bool | None = None) -> CheckpointAudit:
    """Audit one checkpoint (see :func:`audit_path`)."""
    return _audit(ref, world_size, scan_values, fp16=fp16)[0]


def _audit(ref: CheckpointRef, world_size: int | None, scan_values: bool,
           progress: Progress | None = None, *, fp16: bool | None = None,
           budget: ScanBudget | None = None) -> tuple[CheckpointAudit, bool]:
    """The audit, and whether any of its files could be read at all."""
    parts = _gather(ref)
    if parts.fp16 is None and fp16 is not None:  # the files do not say; the run does
        parts.fp16 = fp16
    gs = parts.global_steps[0][1] if parts.global_steps else ref.step
    judge = Judge(parts, gs)
    integrity.check(judge)
    saved_world = completeness.check(judge, world_size)
    consistency.check(judge, saved_world)
    if scan_values:
        from autopsy.ckpt.checks import values

        values.check(judge, progress, budget)
    problems = [f"{f.rel}: {f.error}" for f in parts.all_files() if f.error]
    problems += [f"{f.rel}: {p}" for f in parts.all_files() for p in f.problems]
    problems += [what for _, _, what in parts.missing_files]
    if gs is None and judge.optimizer_step is not None:
        gs = judge.optimizer_step  # no counter saved: the optimizer's own count of updates
        judge.findings = [dataclasses.replace(f, step=gs) for f in judge.findings]
    audit = CheckpointAudit(path=str(ref.path), layout=parts.layout.value, step=gs,
                            components=judge.components(), findings=tuple(judge.findings),
                            problems=tuple(problems), world_size=saved_world,
                            weights_only=parts.weights_only, unscanned=tuple(judge.unscanned))
    files = parts.all_files()
    return audit, not files or any(f.readable for f in files)


def _guarded(ref: CheckpointRef, world_size: int | None, scan_values: bool,
             progress: Progress | None = None, *, fp16: bool | None = None,
             budget: ScanBudget | None = None) -> tuple[CheckpointAudit, bool]:
    """:func:`_audit`, with an unexpected failure turned into a not-resumable result."""
    try:
        return _audit(ref, world_size, scan_values, progress, fp16=fp16, budget=budget)
    except Exception as exc:  # a bug on odd input must degrade the report, never crash it
        what = f"the audit of {ref.path.name} failed: {type(exc).__name__}: {exc}"
        finding = Finding(
            code="CKPT020", name=CHECKS["CKPT020"].name, family=Family.RESUME,
            cause=CHECKS["CKPT020"].cause, severity=Severity.ERROR, confidence=0.5,
            title=CHECKS["CKPT020"].title, message=what,
            evidence=(Evidence(what, source=ref.path.name),),
            advice=("audit the files one by one; please report this input to autopsy",))
        components = tuple(Component(p.value, Status.CORRUPT if p is Part.WEIGHTS
                                     else Status.MISSING, required=p is Part.WEIGHTS)
                           for p in Part)
        return CheckpointAudit(path=str(ref.path), layout=ref.layout.value, step=ref.step,
                               components=components, findings=(finding,),
                               problems=(what,)), True


def audit_path(path: str | os.PathLike[str], *, world_size: int | None = None,
               scan_values: bool = False, stop_at_resumable: bool = False,
               progress: Progress | None = None, fp16: bool | None = None,
               scan_budget: int | None = None) -> AuditReport:
    """Audit a checkpoint file, a checkpoint folder, or every checkpoint under a run dir.

    The verdict (``report.resumable``) is about the checkpoint a resume would pick:
    the newest (highest step in the name, as ``get_last_checkpoint``; DeepSpeed's
    ``latest`` tag). ``report.newest_resumable`` names the newest one that is.
    ``stop_at_resumable`` audits from the picked one back to the newest resumable one
    and no further (``report.checkpoints`` then holds only those): what ``load_run``
    uses, so that a run dir with many large checkpoints stays cheap to load.
    ``progress`` is called with the byte count of each tensor ``scan_values`` has read;
    ``scan_budget`` bounds the bytes that scan reads over all checkpoints, the picked one
    first (None: no bound); the tensors past it are each audit's ``unscanned``.
    ``fp16`` says whether the run trained in fp16 when the files do not (``load_run``
    passes the run's config): a grad scaler is then needed, and steps the scaler skipped
    explain an optimizer step count below the global step.

    Raises:
        RunNotFound: ``path`` does not exist.
        NothingReadable: no checkpoint was found at or under ``path``.
        UsageError: ``world_size`` is not a positive integer.
    """
    root = Path(path)
    if world_size is not None and world_size < 1:
        raise UsageError(f"--world-size must be at least 1, not {world_size}")
    if not root.exists():
        raise RunNotFound(f"no such file or directory: {root}")
    if not (root.is_dir() or root.is_file()):
        raise RunNotFound(f"not a file or directory: {root}")
    notes: list[str] = []
    folder = part_of_folder(root)
    if folder is not None:
        notes.append(f"{root.name} is one file of the checkpoint {folder.name}: the whole "
                     "folder was audited")
        root = folder
    refs = find_checkpoints(root)
    if not refs:
        raise NothingReadable(f"no checkpoint found in {root} (looked for checkpoint-N/, "
                              "save_state folders, global_stepN/, DCP folders, .pt/.bin/"
                              ".ckpt/.safetensors files)")
    picked_ref = pick_newest(refs, root)
    order = [picked_ref, *(r for r in reversed(refs) if r is not picked_ref)]
    results: dict[Path, tuple[CheckpointAudit, bool]] = {}
    budget = ScanBudget(scan_budget)
    for ref in order:
        results[ref.path] = _guarded(ref, world_size, scan_values, progress, fp16=fp16,
                                     budget=budget)
        if stop_at_resumable and results[ref.path][0].resumable:
            break
    audits = {path: audit for path, (audit, _) in results.items()}
    if not any(readable for _, readable in results.values()):
        # found, and not one file of it reads: a checkpoint nobody can resume from, which is
        # a verdict (not resumable), not "nothing here"
        first = audits[picked_ref.path]
        why = first.problems[0] if first.problems else "unreadable"
        hostile = [e.key for f in first.findings if f.code in ("CKPT030", "CKPT032")
                   for e in f.evidence if e.key]
        if hostile:  # a payload masked by the bytes after it: unreadable, and still named
            why += (f"; before it fails, it references {', '.join(dict.fromkeys(hostile))}, "
                    "which torch.load(weights_only=False) would run (autopsy never did)")
        notes.append(f"no file of {_rel(picked_ref.path, root)} could be read: {why}")
        audits = {path: _unreadable(audit) for path, audit in audits.items()}
    picked = audits[picked_ref.path]
    ordered = [audits[r.path] for r in refs if r.path in audits]
    newest_ok = next((a for a in reversed(ordered) if a.resumable), None)
    if not picked.resumable and newest_ok is not None:
        advice = f"resume from {_name(newest_ok, root)}, the newest complete one"
        findings = tuple(dataclasses.replace(f, advice=(*f.advice, advice))
                         for f in picked.findings)
        picked = dataclasses.replace(picked, findings=findings)
        ordered = [picked if a.path == picked.path else a for a in ordered]
    return AuditReport(path=str(root), checkpoints=tuple(ordered), picked=picked,
                       newest_resumable=newest_ok, problems=tuple(notes),
                       world_size=world_size, scanned_values=scan_values)


#: Checks that still hold when no file of a checkpoint could be read: the damage itself and
#: what the bytes before it named (the others would report parts "missing" that were only
#: unreadable).
UNREADABLE_CHECKS = frozenset({"CKPT020", "CKPT030", "CKPT032"})


def _unreadable(audit: CheckpointAudit) -> CheckpointAudit:
    """An audit none of whose files could be read: every part it would hold is unreadable
    (``corrupt``), not ``missing``; only the damage and unsafe findings are kept."""
    components = tuple(
        dataclasses.replace(c, status=Status.CORRUPT, effect=c.effect or "cannot be read",
                            evidence=(*c.evidence, "not read: no file of the checkpoint "
                                      "could be read"))
        if c.status is Status.MISSING else c for c in audit.components)
    findings = tuple(f for f in audit.findings if f.code in UNREADABLE_CHECKS)
    return dataclasses.replace(audit, components=components, findings=findings)


def _rel(path: Path, root: Path) -> str:
    try:
        return path.relative_to(root).as_posix() or path.name
    except ValueError:
        return path.name


def _name(audit: CheckpointAudit, root: Path) -> str:
    try:
        rel = Path(audit.path).relative_to(root).as_posix()
    except ValueError:
        rel = audit.path
    return rel if rel not in ("", ".") else Path(audit.path).name
