"""What a rule gets besides the Run: its thresholds, and a finding builder."""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

from autopsy.model.finding import Evidence, Finding, Severity
from autopsy.rules.registry import RuleSpec, ThresholdValue

T = TypeVar("T")


class SkipRule(Exception):
    """Raised by a rule that cannot judge this run; the engine records it as skipped,
    with the message as the reason (never a silent pass)."""


@dataclass(frozen=True)
class RuleContext:
    """The context of one rule's run: its spec and its effective thresholds."""

    spec: RuleSpec
    thresholds: Mapping[str, ThresholdValue]
    #: One dict shared by every rule of one engine run, for results several rules need
    #: (a family's shared classification); key entries by the thresholds they used.
    shared: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)

    def __getitem__(self, name: str) -> Any:
        return self.thresholds[name]

    def cached(self, key: Hashable, make: Callable[[], T]) -> T:
        """``shared[key]``, made by ``make()`` the first time in this engine run (a result
        several rules need, e.g. the per-rank status; put the thresholds used in ``key``)."""
        if key not in self.shared:
            self.shared[key] = make()
        return self.shared[key]  # type: ignore[no-any-return]

    def skip(self, reason: str) -> SkipRule:
        """The exception to raise when the run lacks what this rule needs:
        ``raise ctx.skip("the hardware is unknown: pass --gpu")``."""
        return SkipRule(reason)

    def finding(
        self,
        *,
        message: str,
        severity: Severity,
        confidence: float,
        cause: str | None = None,
        step: int | None = None,
        ranks: Iterable[int] = (),
        evidence: Iterable[Evidence] = (),
        advice: Iterable[str] = (),
        title: str | None = None,
    ) -> Finding:
        """Build a finding of this rule (code, name, family and title filled in)."""
        if cause is not None and self.spec.causes and cause not in self.spec.causes:
            raise ValueError(f"{self.spec.code}: cause {cause!r} not declared")
        return Finding(
            code=self.spec.code,
            name=self.spec.name,
            family=self.spec.family,
            cause=cause,
            severity=severity,
            confidence=float(max(0.0, min(1.0, confidence))),
            title=title or self.spec.title,
            message=message,
            step=None if step is None else int(step),
            ranks=tuple(int(r) for r in ranks),
            evidence=tuple(evidence),
            advice=tuple(advice),
        )
