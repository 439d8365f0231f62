"""The terminal report of ``autopsy ckpt``: the verdict line, the components, the findings.

Plain text (a pipe or a terminal alike), stdlib only. Order: RESUMABLE / NOT
RESUMABLE with what a resume would lose; the newest resumable checkpoint when the
picked one is not; the component table; the effect of each component that is not
ok; the findings with evidence and advice; then every other checkpoint, one line each.
"""

from __future__ import annotations

from pathlib import Path
from typing import IO

from autopsy.ckpt.components import AuditReport, CheckpointAudit, Status
from autopsy.model.finding import Finding, Severity

_MARK: dict[Status, str] = {
    Status.OK: "ok", Status.MISSING: "MISSING", Status.INCONSISTENT: "INCONSISTENT",
    Status.CORRUPT: "CORRUPT", Status.UNSAFE: "UNSAFE", Status.NOT_APPLICABLE: "n/a",
}


def report_root(report: AuditReport) -> str:
    """The folder checkpoint names are shown relative to: the path audited, or its folder."""
    return report.path if Path(report.path).is_dir() else str(Path(report.path).parent)


def checkpoint_name(audit: CheckpointAudit, root: str) -> str:
    """The checkpoint's path relative to the path audited (or as found)."""
    try:
        rel = Path(audit.path).relative_to(root).as_posix()
    except ValueError:
        return audit.path
    return rel if rel not in ("", ".") else audit.path


def describe(audit: CheckpointAudit, root: str) -> str:
    """``checkpoint-40 (hf_trainer, step 40, 2 rank(s))``."""
    step = f", step {audit.step}" if audit.step is not None else ""
    ws = f", {audit.world_size} rank(s)" if audit.world_size else ""
    return f"{checkpoint_name(audit, root)} ({audit.layout}{step}{ws})"


def _finding(out: IO[str], f: Finding, verbose: bool) -> None:
    sev = f.severity.value.upper() if f.severity is not Severity.INFO else "note"
    out.write(f"  [{f.code} {f.name}] {sev}: {f.title}\n")
    out.write(f"      {f.message}\n")
    limit = None if verbose else 3
    for ev in f.evidence[:limit]:
        where = "; ".join(x for x in (ev.source, ev.key) if x)
        out.write(f"      - {ev.summary}" + (f"  ({where})" if where and where not in
                                              ev.summary else "") + "\n")
    if limit is not None and len(f.evidence) > limit:
        out.write(f"      - ... {len(f.evidence) - limit} more (-v shows all)\n")
    for advice in f.advice:
        out.write(f"      fix: {advice}\n")


def render_ckpt(report: AuditReport, out: IO[str], *, verbose: bool = False) -> None:
    """Write the text report of a checkpoint audit to ``out``.

    Control characters from the checkpoint (file names, pickled global names) are shown
    as ``\\xNN``: an escape sequence in a folder name must not reach the terminal.
    """
    import io

    from autopsy.report._html import clean

    text = io.StringIO()
    _render_ckpt(report, text, verbose)
    out.write(clean(text.getvalue()))


def _render_ckpt(report: AuditReport, out: IO[str], verbose: bool) -> None:
    picked = report.picked
    root = report_root(report)
    if picked.resume_level == "exact":
        out.write(f"RESUMABLE: {describe(picked, root)}: an exact resume is possible\n")
    elif picked.resumable:
        out.write(f"RESUMABLE WITH LOSSES: {describe(picked, root)}: not exact: "
                  f"{', '.join(picked.losses())}\n")
        for line in picked.loss_effects():
            out.write(f"  - {line}\n")
    else:
        losses = ", ".join(picked.losses()) or "see the findings"
        out.write(f"NOT RESUMABLE: {describe(picked, root)}: a resume would lose {losses}\n")
        newest = report.newest_resumable
        if newest is not None:
            out.write(f"  newest resumable: {describe(newest, root)}\n")
        elif len(report.checkpoints) > 1:
            out.write("  no checkpoint here is resumable\n")
    if len(report.checkpoints) > 1:
        out.write(f"  (the newest of {len(report.checkpoints)} checkpoints, the one a resume "
                  "picks)\n")
    if report.world_size is not None:
        out.write(f"  checked against --world-size {report.world_size}\n")
    for note in report.problems:
        out.write(f"  note: {note}\n")
    out.write("\n")
    width = max(len(c.name) for c in picked.components) + 2
    out.write(f"  {'component':<{width}}{'status':<14}files\n")
    for c in picked.components:
        files = ", ".join(c.files[:4]) + (f" (+{len(c.files) - 4})" if len(c.files) > 4 else "")
        label = _MARK[c.status] + ("" if c.required or c.status in (Status.OK,
                                   Status.NOT_APPLICABLE) else " (warn)")
        out.write(f"  {c.name:<{width}}{label:<14}{files}\n")
        lines = c.evidence if verbose else c.evidence[:2]
        for line in lines:
            out.write(f"  {'':<{width}}  {line}\n")
        if c.effect:
            out.write(f"  {'':<{width}}  effect: {c.effect}\n")
    shown = [f for f in picked.findings
             if verbose or f.severity in (Severity.ERROR, Severity.CRITICAL, Severity.WARNING)]
    if shown:
        out.write("\nFindings:\n")
        for f in shown:
            _finding(out, f, verbose)
    others = [a for a in report.checkpoints if a.path != picked.path]
    if others:
        out.write("\nOther checkpoints (newest first):\n")
        for a in reversed(others):
            if a.resume_level == "exact":
                verdict = "resumable"
            elif a.resumable:
                verdict = "resumable with losses: " + ", ".join(a.losses())
            else:
                verdict = "NOT resumable: " + (", ".join(a.losses()) or "see -v")
            out.write(f"  {describe(a, root)}: {verdict}\n")
            if verbose:
                for f in a.findings:
                    out.write(f"      [{f.code}] {f.message}\n")
    if report.scanned_values:
        out.write("\nValues scanned for NaN/Inf (--scan-values).\n")
