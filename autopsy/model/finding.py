"""Findings: what the rules conclude, each with its evidence and advice."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from typing import Any


class Family(str, Enum):
    """The closed set of failure families."""

    NAN_INF = "nan_inf"
    DIVERGING = "diverging"
    NOT_DECREASING = "not_decreasing"
    OVERFITTING = "overfitting"
    OOM = "oom"
    SLOW = "slow"
    HANG = "hang"
    CRASH = "crash"
    RESUME = "resume"
    HEALTHY = "healthy"
    UNKNOWN = "unknown"


class Severity(str, Enum):
    """How bad a finding is."""

    INFO = "info"
    WARNING = "warning"
    ERROR = "error"
    CRITICAL = "critical"


@dataclass(frozen=True)
class Evidence:
    """One piece of evidence: a summary line and where it came from.

    ``source`` is a file (with ``line`` where known), ``tag`` and ``steps`` a
    window of a series, ``key`` a checkpoint key; ``numbers`` the values used.
    """

    summary: str
    source: str | None = None
    line: int | None = None
    tag: str | None = None
    steps: tuple[int, int] | None = None
    key: str | None = None
    numbers: dict[str, float | int | str | None] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """Return a JSON-able dict."""
        return {
            "summary": self.summary,
            "source": self.source,
            "line": self.line,
            "tag": self.tag,
            "steps": list(self.steps) if self.steps is not None else None,
            "key": self.key,
            "numbers": dict(self.numbers),
        }


@dataclass(frozen=True)
class Finding:
    """A rule's conclusion about a run."""

    code: str
    name: str
    family: Family
    cause: str | None
    severity: Severity
    confidence: float
    title: str
    message: str
    step: int | None = None
    ranks: tuple[int, ...] = ()
    evidence: tuple[Evidence, ...] = ()
    advice: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        """Return a JSON-able dict."""
        return {
            "code": self.code,
            "name": self.name,
            "family": self.family.value,
            "cause": self.cause,
            "severity": self.severity.value,
            "confidence": self.confidence,
            "title": self.title,
            "message": self.message,
            "step": self.step,
            "ranks": list(self.ranks),
            "evidence": [e.to_dict() for e in self.evidence],
            "advice": list(self.advice),
        }
