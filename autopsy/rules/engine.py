"""The engine: run the selected rules over a Run, record skips, pick the verdict."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from autopsy.model.finding import Family, Finding
from autopsy.model.run import Run
from autopsy.model.verdict import Verdict
from autopsy.rules.context import RuleContext, SkipRule
from autopsy.rules.ranking import is_cost_warning, is_failure, rank
from autopsy.rules.registry import RuleSpec, load_rules, unmet_requirements
from autopsy.rules.settings import Settings


@dataclass(frozen=True)
class Skipped:
    """A rule that did not run, and why."""

    code: str
    name: str
    reason: str

    def to_dict(self) -> dict[str, str]:
        """Return the JSON report's ``skipped`` entry."""
        return {"code": self.code, "name": self.name, "reason": self.reason}


@dataclass(frozen=True)
class Diagnosis:
    """The outcome of the rules over one run."""

    verdict: Verdict
    findings: tuple[Finding, ...]
    skipped: tuple[Skipped, ...]
    ran: tuple[str, ...]

    @property
    def failed(self) -> bool:
        """Whether the verdict is a failure."""
        return self.verdict.family not in (Family.HEALTHY, Family.UNKNOWN)


def _as_findings(result: Iterable[Finding] | Finding | None) -> list[Finding]:
    if result is None:
        return []
    if isinstance(result, Finding):
        return [result]
    return [f for f in result if f is not None]


def _present_tags(run: Run) -> set[str]:
    return set(run.tags)


def run_rules(
    run: Run, settings: Settings, registry: Mapping[str, RuleSpec]
) -> tuple[list[Finding], list[Skipped], list[str]]:
    """Run every selected rule; a rule's crash becomes a skip, never a traceback."""
    tags = _present_tags(run)
    config_keys = set(run.config)
    parts = {name for name, have in (("checkpoints", bool(run.checkpoints)),
                                     ("events", not run.events.empty)) if have}
    findings: list[Finding] = []
    skipped: list[Skipped] = []
    ran: list[str] = []
    shared: dict[str, object] = {}
    for code, spec in registry.items():
        if not settings.selected(spec):
            skipped.append(Skipped(code, spec.name, "not selected"))
            continue
        missing = unmet_requirements(spec, tags, config_keys, parts)
        if missing:
            needs = " and ".join(m.replace("|", " or ").replace("run:", "") for m in missing)
            skipped.append(Skipped(code, spec.name, f"needs {needs}; the run has none"))
            continue
        ctx = RuleContext(spec=spec, thresholds=settings.thresholds(spec), shared=shared)
        try:
            found = _as_findings(spec.func(run, ctx))
        except SkipRule as exc:  # the rule said why it cannot judge this run
            skipped.append(Skipped(code, spec.name, str(exc) or "the rule could not judge"))
            continue
        except Exception as exc:  # one broken rule must not take the report down
            skipped.append(Skipped(code, spec.name, f"rule failed: {type(exc).__name__}: {exc}"))
            continue
        ran.append(code)
        findings.extend(found)
    return findings, skipped, ran


#: Health rules that vouch from less than a falling loss (HLT003: a level excerpt of a run
#: under way): a cost warning the run shows is its verdict before them.
WEAK_HEALTH_RULES: frozenset[str] = frozenset({"HLT003"})


def pick_verdict(findings: list[Finding], skipped: list[Skipped], run: Run) -> Verdict:
    """The verdict: the top-ranked failure; else healthy if a health rule vouched (one of
    :data:`WEAK_HEALTH_RULES` only when no cost warning was found); else the top-ranked
    cost warning (a slow run under the failure bar, with nothing else to say); else
    unknown."""
    failures = [f for f in findings if is_failure(f)]
    if failures:
        return Verdict.from_finding(rank(failures)[0])
    healthy = [f for f in findings if f.family is Family.HEALTHY]
    strong = [f for f in healthy if f.code not in WEAK_HEALTH_RULES]
    if strong:
        return Verdict.from_finding(strong[0])
    costs = [f for f in findings if is_cost_warning(f)]
    if costs:  # the one problem the run shows: a cost under the failure bar, still a cost
        return Verdict.from_finding(rank(costs)[0])
    if healthy:  # only a weak vouch (a level excerpt): healthy, unless a cost said more
        return Verdict.from_finding(healthy[0])
    if run.scalars.empty:
        return Verdict.unknown("the run has no scalar series (loss, grad_norm, ...) to judge")
    # the health rules' own reasons when they gave one (why the run could not be vouched
    # for), else what the other rules lacked
    skips = [s for s in skipped if s.reason != "not selected"]
    skips = [s for s in skips if s.code.startswith("HLT")] or skips
    reasons = [f"{s.code} {s.reason}" for s in skips][:3]
    why = "; ".join(reasons) if reasons else "no rule could vouch for the run's health"
    return Verdict.unknown(f"no failure found, but the run lacks the signals to call it "
                           f"healthy ({why})")


def diagnose(run: Run, settings: Settings | None = None,
             registry: Mapping[str, RuleSpec] | None = None) -> Diagnosis:
    """Run the rules over ``run`` and pick the verdict."""
    rules = registry if registry is not None else load_rules()
    findings, skipped, ran = run_rules(run, settings or Settings(), rules)
    verdict = pick_verdict(findings, skipped, run)
    if verdict.family not in (Family.HEALTHY, Family.UNKNOWN):
        # a vouch for health next to a failure only confuses the report
        findings = [f for f in findings if f.family is not Family.HEALTHY]
    return Diagnosis(verdict=verdict, findings=tuple(rank(findings)), skipped=tuple(skipped),
                     ran=tuple(ran))

