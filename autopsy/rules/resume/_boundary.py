"""Shared helpers of the resume-forensics rules (RES010+): boundaries and their checkpoint.

A rule looks at each restart of the run (:func:`autopsy.signals.resume.boundaries`), finds
the checkpoint the new segment resumed from in the audits ``load_run`` put in
``run.checkpoints`` (the newest audited one at or before the step before the resume step),
and quotes that checkpoint's component when there is one.
"""

from __future__ import annotations

from dataclasses import dataclass

from autopsy.ckpt.components import CheckpointAudit, Component, Status
from autopsy.model.finding import Evidence
from autopsy.model.run import Run
from autopsy.rules.context import RuleContext
from autopsy.rules.resume._audits import audits, name
from autopsy.signals.resume import Boundary, boundaries

#: The key of the run's boundaries in ``RuleContext.shared``.
SHARED_KEY = "resume.boundaries"
#: A step counter that restarts within this fraction of the previous segment's span is a reset.
RESET_FRACTION = 0.05
#: ... when the previous segment covered at least this many steps.
RESET_MIN_SPAN = 10


def is_reset(b: Boundary) -> bool:
    """Whether the new segment started the step counter over (near the previous start)."""
    span = b.previous_last - b.previous_first
    return (b.source is None and span >= RESET_MIN_SPAN
            and b.resume_step - b.previous_first <= RESET_FRACTION * span)


def run_boundaries(run: Run, ctx: RuleContext | None = None) -> list[Boundary]:
    """The run's restarts, computed once per engine run (kept in ``ctx.shared``)."""
    if ctx is None:
        return boundaries(run)
    return list(ctx.cached(SHARED_KEY, lambda: boundaries(run)))


def resumes(run: Run, ctx: RuleContext | None = None) -> list[Boundary]:
    """The run's restarts that continued the step counter (a reset is RES013's)."""
    return [b for b in run_boundaries(run, ctx) if not is_reset(b)]


def segment_of_sources(run: Run) -> dict[str, int]:
    """``{source: the segment most of its rows are in}``."""
    df = run.scalars
    if df.empty:
        return {}
    counts = df.groupby(["source", "segment"], observed=True).size()
    out: dict[str, int] = {}
    for (source, seg), _n in counts.sort_values(ascending=False).items():
        out.setdefault(str(source), int(seg))
    return out


def launch_config(run: Run, b: Boundary, key: str) -> tuple[object, object]:
    """The value of config ``key`` each side of ``b`` logged itself (None where unknown).

    A launch's own config is one a file of that launch gave (an event file's ``args``
    summary): its source's rows are in that segment, or it is the boundary's event file.
    """
    seg_of = segment_of_sources(run)
    before: object = None
    after: object = None
    for entry in run.config.all_entries():
        if entry.key != key:
            continue
        if b.source is not None:
            side = ("before" if entry.source == b.previous_source
                    else "after" if entry.source == b.source else None)
        else:
            seg = seg_of.get(entry.source)
            side = ("before" if seg == b.previous and seg != b.segment
                    else "after" if seg == b.segment and seg != b.previous else None)
        if side == "before" and before is None:
            before = entry.value
        elif side == "after" and after is None:
            after = entry.value
    return before, after


def source_checkpoint(run: Run, b: Boundary) -> CheckpointAudit | None:
    """The audited checkpoint the new segment resumed from: the newest at or before the step
    before ``b.resume_step`` (None when no audit has a step there)."""
    found = [a for a in audits(run) if a.step is not None and a.step <= b.resume_step - 1]
    return max(found, key=lambda a: a.step or 0) if found else None


@dataclass(frozen=True)
class PartCheck:
    """A component of the checkpoint a resume came from: the audit, the part and evidence."""

    audit: CheckpointAudit
    component: Component
    evidence: Evidence

    @property
    def lacking(self) -> bool:
        """Whether the checkpoint lacks the part (missing, corrupt, inconsistent, unsafe)."""
        return self.component.status not in (Status.OK, Status.NOT_APPLICABLE)

    @property
    def present(self) -> bool:
        """Whether the checkpoint has the part, intact."""
        return self.component.status is Status.OK


def part_check(run: Run, b: Boundary, part: str) -> PartCheck | None:
    """What the audit says of ``part`` in the checkpoint the resume at ``b`` came from."""
    audit = source_checkpoint(run, b)
    comp = audit.component(part) if audit is not None else None
    if audit is None or comp is None:
        return None
    where = name(run, audit)
    detail = f": {comp.evidence[-1]}" if comp.evidence else ""
    if not detail and comp.effect and comp.status is not Status.OK:
        detail = f": {comp.effect}"
    exact = "" if audit.step == b.resume_step - 1 else (
        f" (the newest audited before step {b.resume_step})")
    ev = Evidence(f"{where}{exact}: {comp.name} {comp.status.value}{detail}", source=where,
                  key=comp.name,
                  numbers={"status": comp.status.value, "checkpoint_step": audit.step,
                           "files": ", ".join(comp.files[:3])})
    return PartCheck(audit=audit, component=comp, evidence=ev)


def restored_note(check: PartCheck | None, what: str) -> str:
    """``; checkpoint X has no scheduler`` / ``; checkpoint X has it: not loaded`` / ``''``."""
    if check is None:
        return ""
    where = check.evidence.source
    if check.lacking:
        return f"; {where} has no {what} ({check.component.status.value})"
    if check.present:
        return f"; {where} has the {what}: the resume did not load it"
    return ""


def confidence(base: float, check: PartCheck | None) -> float:
    """``base`` raised when the audit confirms the part is missing, lowered when it is there."""
    if check is None:
        return base
    if check.lacking:
        return min(1.0, base + 0.1)
    if check.present:
        return max(0.0, base - 0.1)
    return base  # not applicable: the audit cannot tell (a plain dict does not say fp16)
