"""The verdict: the one conclusion a report leads with."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from autopsy.model.finding import Family, Finding


@dataclass(frozen=True)
class Verdict:
    """The finding that explains the failure, or an honest "could not decide"."""

    family: Family
    title: str
    message: str
    cause: str | None = None
    code: str | None = None
    step: int | None = None
    ranks: tuple[int, ...] = field(default_factory=tuple)
    confidence: float = 0.0

    @classmethod
    def unknown(cls, reason: str) -> Verdict:
        """A verdict of family ``unknown`` that says why no decision was made."""
        return cls(family=Family.UNKNOWN, title="Could not decide", message=reason)

    @classmethod
    def from_finding(cls, finding: Finding) -> Verdict:
        """The verdict a finding gives when it is the one that explains the run."""
        return cls(
            family=finding.family,
            title=finding.title,
            message=finding.message,
            cause=finding.cause,
            code=finding.code,
            step=finding.step,
            ranks=finding.ranks,
            confidence=finding.confidence,
        )

    def headline(self) -> str:
        """One line for a report's top: ``nan_inf · cause lr_too_high · step 31 · NAN001``."""
        parts = [self.family.value]
        if self.cause:
            parts.append(f"cause {self.cause}")
        if self.step is not None:
            parts.append(f"step {self.step}")
        if self.ranks:
            parts.append("rank " + ",".join(str(r) for r in self.ranks))
        if self.code:
            parts.append(self.code)
        return " · ".join(parts)

    def to_dict(self) -> dict[str, Any]:
        """Return the JSON report's ``verdict`` object."""
        out = asdict(self)
        out["family"] = self.family.value
        out["ranks"] = list(self.ranks)
        return out
