"""The HTML and Markdown reports of ``autopsy ckpt``: the same content as the text report.

Order: RESUMABLE / NOT RESUMABLE with what a resume would lose, and the newest
resumable checkpoint when the picked one is not; the component table with coloured
statuses, their evidence and effect; the findings with evidence and advice; every
other checkpoint. Stdlib only (no pandas, no matplotlib): ``autopsy ckpt`` stays light.
"""

from __future__ import annotations

from pathlib import Path
from typing import IO

from autopsy._version import __version__
from autopsy.ckpt.components import AuditReport, CheckpointAudit, Component, Status
from autopsy.report._html import (
    Block,
    Bullets,
    Callout,
    Heading,
    Inline,
    Para,
    Span,
    Table,
    Tone,
    md_esc,
    to_html,
    to_markdown,
)
from autopsy.report.ckpt_text import checkpoint_name, describe, report_root
from autopsy.report.html_report import finding_blocks

STATUS_TONE: dict[Status, Tone] = {
    Status.OK: Tone.GOOD, Status.MISSING: Tone.BAD, Status.INCONSISTENT: Tone.BAD,
    Status.CORRUPT: Tone.BAD, Status.UNSAFE: Tone.BAD, Status.NOT_APPLICABLE: Tone.MUTED,
}


def _status_cell(c: Component) -> Span:
    tone = STATUS_TONE[c.status]
    if not c.required and c.status in (Status.MISSING, Status.INCONSISTENT, Status.CORRUPT):
        tone = Tone.WARN
    label = c.status.value + ("" if c.required or tone is not Tone.WARN else " (warn)")
    return Span(label, tone=tone, strong=tone in (Tone.BAD, Tone.WARN))


def component_table(audit: CheckpointAudit) -> Table:
    """One row per component: name, status (coloured), required, files, evidence and effect."""
    rows: list[list[Inline]] = []
    for c in audit.components:
        files = ", ".join(c.files[:6]) + (f" (+{len(c.files) - 6})" if len(c.files) > 6 else "")
        facts = "; ".join(c.evidence)
        if c.effect:
            facts = (facts + "; " if facts else "") + f"effect: {c.effect}"
        rows.append([Span(c.name, code=True), _status_cell(c), "yes" if c.required else "no",
                     files, facts])
    return Table(["component", "status", "required", "files", "evidence"], rows)


def ckpt_blocks(report: AuditReport) -> list[Block]:
    """The whole checkpoint report as blocks (see the module docstring)."""
    picked = report.picked
    root = report_root(report)
    blocks: list[Block] = [Heading(f"autopsy ckpt: {report.path}", level=1)]
    body: list[Block] = []
    if picked.resume_level == "exact":
        head = f"RESUMABLE: {describe(picked, root)}"
        body.append(Para(["An exact resume is possible."]))
        tone = Tone.GOOD
    elif picked.resumable:
        head = f"RESUMABLE WITH LOSSES: {describe(picked, root)}"
        body.append(Para(["Not an exact resume: ",
                          Span(", ".join(picked.losses()), tone=Tone.WARN, strong=True),
                          "."]))
        body.append(Bullets([[line] for line in picked.loss_effects()]))
        tone = Tone.WARN
    else:
        head = f"NOT RESUMABLE: {describe(picked, root)}"
        losses = ", ".join(picked.losses()) or "see the findings"
        body.append(Para(["A resume would lose ", Span(losses, tone=Tone.BAD, strong=True),
                          "."]))
        tone = Tone.BAD
        newest = report.newest_resumable
        if newest is not None:
            body.append(Para(["Newest resumable checkpoint: ",
                              Span(describe(newest, root), code=True)]))
        elif len(report.checkpoints) > 1:
            body.append(Para(["No checkpoint here is resumable."]))
    if len(report.checkpoints) > 1:
        body.append(Para([Span(f"The newest of {len(report.checkpoints)} checkpoints, the one "
                               "a resume picks.", tone=Tone.MUTED)]))
    if report.world_size is not None:
        body.append(Para([f"Checked against --world-size {report.world_size}."]))
    notes = [*report.problems, *picked.problems]
    if notes:
        body.append(Bullets([[Span("note: ", tone=Tone.WARN), n] for n in notes]))
    blocks.append(Callout([Span(head, tone=tone)], body, tone=tone))
    blocks.append(Heading("Components", anchor="components"))
    blocks.append(component_table(picked))
    blocks.append(Heading(f"Findings ({len(picked.findings)})", anchor="findings"))
    if not picked.findings:
        blocks.append(Para(["No check failed."]))
    for f in picked.findings:
        blocks.extend(finding_blocks(f))
    others = [a for a in report.checkpoints if a.path != picked.path]
    if others:
        blocks.append(Heading(f"Other checkpoints ({len(others)}, newest first)",
                              anchor="others"))
        rows: list[list[Inline]] = []
        for a in reversed(others):
            if a.resume_level == "exact":
                verdict = Span("resumable", tone=Tone.GOOD)
            elif a.resumable:
                verdict = Span("resumable with losses: " + ", ".join(a.losses()),
                               tone=Tone.WARN)
            else:
                verdict = Span("NOT resumable: " + (", ".join(a.losses())
                                                    or "see its findings"), tone=Tone.BAD)
            rows.append([Span(checkpoint_name(a, root), code=True), a.layout,
                         "" if a.step is None else str(a.step), verdict,
                         ", ".join(f.code for f in a.findings)])
        blocks.append(Table(["checkpoint", "layout", "step", "resume", "findings"], rows,
                            numeric=frozenset({2})))
    if report.scanned_values:
        blocks.append(Para([Span("Values scanned for NaN/Inf (--scan-values).",
                                 tone=Tone.MUTED)]))
    return blocks


def _footer(report: AuditReport) -> str:
    return f"autopsy {__version__} · checkpoint audit of {report.path} (metadata only)"


def render_ckpt_html(report: AuditReport, out: IO[str]) -> None:
    """Write the checkpoint audit as one self-contained HTML page to ``out``."""
    state = {"exact": "resumable", "with_losses": "resumable with losses"}.get(
        report.resume_level, "NOT resumable")
    title = f"autopsy ckpt: {state} · {Path(report.picked.path).name}"
    out.write(to_html(title, ckpt_blocks(report), _footer(report)))


def render_ckpt_markdown(report: AuditReport, out: IO[str]) -> None:
    """Write the checkpoint audit as Markdown to ``out`` (it has no images)."""
    out.write(to_markdown(ckpt_blocks(report), lambda _image: None))
    out.write(f"\n---\n{md_esc(_footer(report))}\n")
