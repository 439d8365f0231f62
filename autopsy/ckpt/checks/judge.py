"""The judge: collects the checks' verdicts per component and their findings.

Each check calls :meth:`Judge.mark` (the worst status of a component wins) and
:meth:`Judge.fail` (a finding with the check's code); :meth:`Judge.components`
turns the slots and marks into the report's :class:`Component` records.
"""

from __future__ import annotations

from collections.abc import Iterable

from autopsy.ckpt.checks import CHECKS
from autopsy.ckpt.components import Component, Part, Status
from autopsy.ckpt.parts import Parts
from autopsy.model.finding import Evidence, Family, Finding, Severity

#: Which status wins when several checks mark one component.
STATUS_RANK: dict[Status, int] = {
    Status.NOT_APPLICABLE: 0, Status.OK: 0, Status.INCONSISTENT: 1, Status.MISSING: 2,
    Status.CORRUPT: 3, Status.UNSAFE: 4,
}


class Judge:
    """Statuses, evidence and findings of one checkpoint's audit."""

    def __init__(self, parts: Parts, step: int | None) -> None:
        self.parts = parts
        self.step = step
        self.status: dict[Part, Status] = {}
        self.evidence: dict[Part, list[str]] = {}
        self.findings: list[Finding] = []
        #: Adam's step count, when the optimizer holds one (the step of last resort).
        self.optimizer_step: int | None = None
        #: (component, tensors, bytes) the value scan left unread (past its budget)
        self.unscanned: list[tuple[str, int, int]] = []

    def mark(self, part: Part, status: Status, evidence: str | None = None) -> None:
        """Set ``part``'s status (the worst wins) and add an evidence line."""
        current = self.status.get(part)
        if current is None or STATUS_RANK[status] > STATUS_RANK[current]:
            self.status[part] = status
        if evidence:
            self.note(part, evidence)

    def note(self, part: Part, evidence: str) -> None:
        """Add an evidence line to ``part`` (once)."""
        lines = self.evidence.setdefault(part, [])
        if evidence not in lines:
            lines.append(evidence)

    def fail(
        self,
        code: str,
        message: str,
        *,
        severity: Severity = Severity.ERROR,
        evidence: Iterable[Evidence] = (),
        advice: Iterable[str] = (),
        ranks: Iterable[int] = (),
        confidence: float = 0.95,
    ) -> None:
        """Record a failed check as a finding of family ``resume``."""
        doc = CHECKS[code]
        self.findings.append(Finding(
            code=doc.code, name=doc.name, family=Family.RESUME, cause=doc.cause,
            severity=severity, confidence=confidence, title=doc.title, message=message,
            step=self.step, ranks=tuple(sorted(set(ranks))), evidence=tuple(evidence),
            advice=tuple(advice)))

    def components(self) -> tuple[Component, ...]:
        """One :class:`Component` per :class:`Part`, in report order."""
        out = []
        for part in Part:
            slot = self.parts.slot(part)
            status = self.status.get(part)
            if status is None:
                if slot.present:
                    status = Status.OK
                elif slot.not_applicable:
                    status = Status.NOT_APPLICABLE
                else:
                    status = Status.MISSING
            evidence: list[str] = []
            if slot.where:
                evidence.append(f"found in {slot.where}" if slot.present else slot.where)
            if status is Status.NOT_APPLICABLE and slot.not_applicable:
                evidence.append(slot.not_applicable)
            evidence += slot.notes
            evidence += self.evidence.get(part, [])
            files = tuple(dict.fromkeys(f.rel for f in slot.files))
            if part is Part.RNG:
                files = tuple(dict.fromkeys(f.rel for f in self.parts.rng.values()
                                            if f is not None))
            if not files and status is Status.MISSING:
                files = tuple(slot.expected)
            effect = _effect(status, slot.effect)
            out.append(Component(name=part.value, status=status, files=files,
                                 evidence=tuple(evidence), effect=effect,
                                 required=slot.required))
        return tuple(out)


def _effect(status: Status, without: str) -> str:
    """What a resume does with a component in this status."""
    if status is Status.UNSAFE:
        return ("torch.load(weights_only=False) of this file runs the code it names "
                "(weights_only=True refuses it)")
    if status is Status.CORRUPT:
        return "loading fails or gives wrong values" + (f"; without it: {without}"
                                                          if without else "")
    if status in (Status.MISSING, Status.INCONSISTENT):
        return without
    return ""
