"""Ranking findings and picking the verdict: the root, not the cascade.

A finding that names a cause outranks a bare symptom of the same severity ("grad
norm spiked 40x at the peak LR with no clipping" over "loss is NaN"); a failure
that ends the run outranks a slow degradation; a slow finding never outranks a finding
of another family (:data:`COST_FAMILIES`); then confidence, then the earlier step.
"""

from __future__ import annotations

from collections.abc import Iterable

from autopsy.model.finding import Family, Finding, Severity

SEVERITY_ORDER: dict[Severity, int] = {
    Severity.CRITICAL: 3, Severity.ERROR: 2, Severity.WARNING: 1, Severity.INFO: 0,
}

#: Families in the order a verdict prefers them when severities tie.
FAMILY_ORDER: tuple[Family, ...] = (
    Family.CRASH, Family.OOM, Family.HANG, Family.NAN_INF, Family.RESUME, Family.DIVERGING,
    Family.NOT_DECREASING, Family.OVERFITTING, Family.SLOW, Family.HEALTHY, Family.UNKNOWN,
)

#: Severities that make a finding a failure (a candidate for the verdict).
FAILURE_SEVERITIES: frozenset[Severity] = frozenset({Severity.ERROR, Severity.CRITICAL})


#: Families that never outrank a failure of another family, whatever their severity: a
#: cost (slowness) is never the verdict over a failure that ended or ruined the run.
COST_FAMILIES: frozenset[Family] = frozenset({Family.SLOW})


def rank_key(finding: Finding) -> tuple[int, int, int, int, float, int]:
    """Sort key: smaller is more important."""
    return (
        1 if finding.family in COST_FAMILIES else 0,
        -SEVERITY_ORDER[finding.severity],
        0 if finding.cause else 1,
        FAMILY_ORDER.index(finding.family),
        -finding.confidence,
        finding.step if finding.step is not None else 1 << 62,
    )


def rank(findings: Iterable[Finding]) -> list[Finding]:
    """Findings, most important first."""
    return sorted(findings, key=rank_key)


def is_failure(finding: Finding) -> bool:
    """Whether ``finding`` reports a failure (not a warning, note, or health)."""
    return finding.severity in FAILURE_SEVERITIES and finding.family not in (
        Family.HEALTHY, Family.UNKNOWN,
    )


#: Cost rules whose warnings are already a material share of the run: SLOW001 warns from a
#: data wait of 30% of every step, SLOW004 from a run 25% slower at its end than at its
#: start. The stall rules warn from a few percent (SLOW003 3%, SLOW006 5%: saving and
#: evaluating cost that much in a healthy run) and SLOW005 from an MFU under 25% (common on
#: a healthy run): their warnings are notes, never a verdict by themselves.
MATERIAL_COST_WARNINGS: frozenset[str] = frozenset({"SLOW001", "SLOW004"})


def is_cost_warning(finding: Finding) -> bool:
    """Whether ``finding`` is a material cost (:data:`MATERIAL_COST_WARNINGS`) at warning
    severity: under the failure bar, it is the verdict only when no failure was found and
    no health rule vouched for the run (a run whose only observed problem is a third of
    each step spent waiting for data is slow, not undecidable)."""
    return (finding.severity is Severity.WARNING and finding.family in COST_FAMILIES
            and finding.code in MATERIAL_COST_WARNINGS)
