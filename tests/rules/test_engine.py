"""The engine: skips with reasons, crash isolation, ranking, verdict, settings."""

from __future__ import annotations

from pathlib import Path

import pytest
from runs import synthetic_run

from autopsy.errors import UsageError
from autopsy.model import Evidence, Family, Finding, Severity
from autopsy.rules.engine import diagnose
from autopsy.rules.ranking import rank
from autopsy.rules.registry import REGISTRY, RuleSpec, load_rules, rule
from autopsy.rules.settings import Settings, load_settings


def _spec(code: str, func, *, requires=(), thresholds=None, family=Family.NAN_INF,
          causes=("lr_too_high",)) -> RuleSpec:
    return RuleSpec(code=code, name=code.lower(), family=family, causes=causes,
                    requires=tuple(requires), thresholds=thresholds or {}, func=func,
                    module="tests")


def _finding(code: str, severity: Severity, cause: str | None, family=Family.NAN_INF,
             step: int | None = 5, confidence: float = 0.5) -> Finding:
    return Finding(code=code, name=code.lower(), family=family, cause=cause,
                   severity=severity, confidence=confidence, title=code, message=code,
                   step=step)


def test_missing_signal_is_skipped_with_the_reason() -> None:
    registry = {"TST001": _spec("TST001", lambda run, ctx: None, requires=("grad_norm",))}
    d = diagnose(synthetic_run({"loss": [1.0, 0.5]}), registry=registry)
    assert d.skipped[0].code == "TST001"
    assert "grad_norm" in d.skipped[0].reason
    assert d.ran == ()


def test_alternative_and_config_requirements() -> None:
    registry = {
        "TST001": _spec("TST001", lambda run, ctx: None, requires=("grad_norm|loss",)),
        "TST002": _spec("TST002", lambda run, ctx: None, requires=("config:fp16",)),
    }
    d = diagnose(synthetic_run({"loss": [1.0]}, config={"fp16": True}), registry=registry)
    assert d.ran == ("TST001", "TST002")


def test_a_crashing_rule_is_a_skip_not_a_traceback() -> None:
    def boom(run, ctx):
        raise ZeroDivisionError("oops")

    d = diagnose(synthetic_run({"loss": [1.0]}), registry={"TST001": _spec("TST001", boom)})
    assert "rule failed: ZeroDivisionError" in d.skipped[0].reason


def test_a_rule_that_cannot_judge_says_why_in_the_skips() -> None:
    def unsure(run, ctx):
        raise ctx.skip("the hardware is unknown: pass --gpu")

    d = diagnose(synthetic_run({"loss": [1.0]}), registry={"TST001": _spec("TST001", unsure)})
    assert [(s.code, s.reason) for s in d.skipped] == [("TST001",
                                                        "the hardware is unknown: pass --gpu")]
    assert d.ran == ()


def test_slow005_without_a_known_peak_is_skipped_with_the_reason() -> None:
    d = diagnose(synthetic_run({"loss": [2.0, 1.9, 1.8], "step_time": [0.5, 0.5, 0.5]}))
    reasons = {s.code: s.reason for s in d.skipped}
    assert "--gpu" in reasons["SLOW005"]


def test_an_explanation_outranks_a_bare_symptom() -> None:
    symptom = _finding("TST001", Severity.CRITICAL, None, step=481, confidence=0.99)
    cause = _finding("TST002", Severity.CRITICAL, "lr_too_high", step=480, confidence=0.6)
    warning = _finding("TST003", Severity.WARNING, "no_clipping", family=Family.DIVERGING)
    assert [f.code for f in rank([symptom, warning, cause])] == ["TST002", "TST001", "TST003"]


def test_verdict_is_the_top_failure_and_warnings_never_are() -> None:
    registry = {
        "TST001": _spec("TST001", lambda run, ctx: _finding("TST001", Severity.WARNING,
                                                            "lr_too_high")),
        "TST002": _spec("TST002", lambda run, ctx: [
            _finding("TST002", Severity.ERROR, "lr_too_high", family=Family.DIVERGING)]),
    }
    d = diagnose(synthetic_run({"loss": [1.0]}), registry=registry)
    assert d.verdict.code == "TST002"
    assert d.verdict.family is Family.DIVERGING
    assert d.failed
    only_warning = diagnose(synthetic_run({"loss": [1.0]}), registry={"TST001":
                                                                       registry["TST001"]})
    assert only_warning.verdict.family is Family.UNKNOWN


def test_context_builds_findings_with_the_rule_identity() -> None:
    seen = {}

    def rule_func(run, ctx):
        seen["limit"] = ctx["limit"]
        return ctx.finding(message="m", severity=Severity.ERROR, confidence=2.0,
                           cause="lr_too_high", evidence=[Evidence("e")])

    spec = _spec("TST001", rule_func, thresholds={"limit": 3.0})
    settings = Settings(overrides={"TST001": {"limit": 9.0}})
    d = diagnose(synthetic_run({"loss": [1.0]}), settings, registry={"TST001": spec})
    assert seen["limit"] == 9.0
    f = d.findings[0]
    assert (f.code, f.name, f.family, f.confidence) == ("TST001", "tst001", Family.NAN_INF, 1.0)


def test_undeclared_cause_is_a_bug() -> None:
    spec = _spec("TST001", lambda run, ctx: ctx.finding(
        message="m", severity=Severity.ERROR, confidence=1, cause="not_declared"))
    d = diagnose(synthetic_run({"loss": [1.0]}), registry={"TST001": spec})
    assert "not declared" in d.skipped[0].reason


def test_rule_decorator_validates_code_and_name() -> None:
    with pytest.raises(Exception, match="bad rule code"):
        rule(code="nan1", name="x", family=Family.NAN_INF)(lambda run, ctx: None)
    with pytest.raises(Exception, match="kebab"):
        rule(code="ZZZ999", name="Not_Kebab", family=Family.NAN_INF)(lambda run, ctx: None)
    assert "ZZZ999" not in REGISTRY


# ---------------------------------------------------------------- settings

REG = load_rules()


def test_set_overrides_and_coerces() -> None:
    s = load_settings(REG, sets=["HLT001.min_points=20", "hlt001.min_drop=0.5"],
                      search_from=Path("/"))
    got = s.thresholds(REG["HLT001"])
    assert (got["min_points"], got["min_drop"]) == (20, 0.5)
    assert isinstance(got["min_points"], int) and isinstance(got["min_drop"], float)


@pytest.mark.parametrize("item, message", [
    ("HLT001.nope=1", "has no threshold 'nope'"),
    ("XXX999.min_points=1", "unknown rule code"),
    ("HLT001.min_points=abc", "expects an int"),
    ("HLT001.min_points=2.5", "expects an int"),
    ("HLT001min_points=3", "CODE.name=value"),
])
def test_bad_set_items_are_usage_errors(item: str, message: str) -> None:
    with pytest.raises(UsageError, match=message):
        load_settings(REG, sets=[item], search_from=Path("/"))


def test_pyproject_table_is_read_and_cli_wins(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text(
        '[tool.autopsy]\nignore = ["HLT001"]\n\n'
        "[tool.autopsy.rules.HLT001]\nmin_points = 11\nmin_drop = 0.2\n")
    sub = tmp_path / "a" / "b"
    sub.mkdir(parents=True)
    s = load_settings(REG, sets=["HLT001.min_drop=0.3"], search_from=sub)
    assert s.source == str(tmp_path / "pyproject.toml")
    got = s.thresholds(REG["HLT001"])
    assert (got["min_points"], got["min_drop"]) == (11, 0.3)
    assert not s.selected(REG["HLT001"])


@pytest.mark.parametrize("body, message", [
    ("[tool.autopsy]\nthresholds = 1\n", "unknown key"),
    ("[tool.autopsy.rules.HLT001]\nmin_pointz = 3\n", "has no threshold"),
    ("[tool.autopsy]\nselect = \"NAN\"\n", "list of strings"),
    ("[tool.autopsy]\nselect = [\"NOPE\"]\n", "no rule matches"),
    ("[tool.autopsy\n", "invalid TOML"),
])
def test_bad_pyproject_is_a_usage_error(tmp_path: Path, body: str, message: str) -> None:
    path = tmp_path / "pyproject.toml"
    path.write_text(body)
    with pytest.raises(UsageError, match=message):
        load_settings(REG, config=path)


def test_select_by_code_prefix_family_or_name() -> None:
    spec = REG["HLT001"]
    for selector in ("HLT001", "HLT", "healthy", "loss-decreasing"):
        assert Settings(select=(selector,)).selected(spec)
    assert not Settings(select=("NAN",)).selected(spec)


def test_a_prefix_or_family_sets_every_rule_that_has_the_threshold() -> None:
    nan = [c for c, s in REG.items() if c.startswith("NAN") and "spike_ratio" in s.thresholds]
    assert len(nan) >= 2
    s = load_settings(REG, sets=["NAN.spike_ratio=9"], search_from=Path("/"))
    assert all(s.thresholds(REG[c])["spike_ratio"] == 9.0 for c in nan)
    fam = load_settings(REG, sets=["nan_inf.spike_ratio=7"], search_from=Path("/"))
    assert all(fam.thresholds(REG[c])["spike_ratio"] == 7.0 for c in nan)
    with pytest.raises(UsageError, match="has a threshold"):
        load_settings(REG, sets=["NAN.nope=1"], search_from=Path("/"))


def test_a_health_vouch_is_dropped_when_the_verdict_is_a_failure() -> None:
    registry = {
        "TST001": _spec("TST001", lambda run, ctx: _finding("TST001", Severity.INFO, None,
                                                            family=Family.HEALTHY)),
        "TST002": _spec("TST002", lambda run, ctx: _finding("TST002", Severity.ERROR,
                                                            "lr_too_high",
                                                            family=Family.DIVERGING)),
    }
    d = diagnose(synthetic_run({"loss": [1.0]}), registry=registry)
    assert d.verdict.code == "TST002"
    assert [f.code for f in d.findings] == ["TST002"]


def test_the_nan_classification_is_computed_once_per_diagnosis(monkeypatch) -> None:
    import autopsy.rules.nan_inf._event as event

    calls = []
    real = event._classify
    monkeypatch.setattr(event, "_classify", lambda run, th: calls.append(1) or real(run, th))
    run = synthetic_run({"loss": [1.0] * 20 + [float("nan")] * 3,
                         "grad_norm": [1.0] * 23})
    d = diagnose(run)
    assert d.verdict.family is Family.NAN_INF
    assert len(calls) == 1


def test_cached_results_are_made_once_per_engine_run() -> None:
    made: list[int] = []

    def uses_cache(run, ctx):
        ctx.cached("shared.thing", lambda: made.append(1) or len(made))
        return None

    registry = {c: _spec(c, uses_cache) for c in ("TST001", "TST002", "TST003")}
    run = synthetic_run({"loss": [1.0, 0.5]})
    diagnose(run, registry=registry)
    assert made == [1]
    diagnose(run, registry=registry)  # a new engine run makes it again
    assert made == [1, 1]


def test_slow_never_outranks_another_familys_failure() -> None:
    def finding(code: str, family: Family, severity: Severity, cause: str | None) -> Finding:
        return Finding(code=code, name=code.lower(), family=family, cause=cause,
                       severity=severity, confidence=0.9, title=code, message=code)

    slow = finding("SLOW003", Family.SLOW, Severity.CRITICAL, "periodic_stall")
    flat = finding("FLAT005", Family.NOT_DECREASING, Severity.ERROR, None)
    assert [f.code for f in rank([slow, flat])] == ["FLAT005", "SLOW003"]
    other_slow = finding("SLOW001", Family.SLOW, Severity.ERROR, "data_starvation")
    assert [f.code for f in rank([other_slow, slow])] == ["SLOW003", "SLOW001"]


def test_a_slow_warning_is_the_verdict_only_when_nothing_else_decides() -> None:
    """Under the failure bar, a cost is still the run's one observed problem: it beats
    `unknown`, never a health vouch, a failure, or a warning of another family."""
    def rule_of(*found: Finding):
        return lambda run, ctx: list(found)

    slow = _finding("SLOW001", Severity.WARNING, "data_starvation", family=Family.SLOW,
                    step=None)
    spikes = _finding("DIV002", Severity.WARNING, "bad_data", family=Family.DIVERGING)
    healthy = _finding("HLT001", Severity.INFO, None, family=Family.HEALTHY, step=None)
    run = synthetic_run({"loss": [1.0, 1.0, 1.0]})

    def verdict(*found: Finding) -> tuple[str | None, Family]:
        d = diagnose(run, registry={"TST001": _spec("TST001", rule_of(*found))})
        return d.verdict.code, d.verdict.family

    assert verdict(slow, spikes) == ("SLOW001", Family.SLOW)
    assert verdict(slow, healthy) == ("HLT001", Family.HEALTHY)
    assert verdict(spikes)[1] is Family.UNKNOWN
    stalls = _finding("SLOW003", Severity.WARNING, "periodic_stall", family=Family.SLOW)
    assert verdict(stalls)[1] is Family.UNKNOWN  # a few percent: a note, not a verdict
    failure = _finding("FLAT005", Severity.ERROR, None, family=Family.NOT_DECREASING)
    assert verdict(slow, failure) == ("FLAT005", Family.NOT_DECREASING)


def test_unknown_says_why_the_health_rule_could_not_vouch() -> None:
    """A two-point loss: the verdict is unknown and names the health rule's reason (too few
    points), not the config the configuration rules lacked."""
    from runs import synthetic_run

    from autopsy.api import diagnose

    d = diagnose(synthetic_run({"loss": [2.3, 1.9]}))
    assert d.verdict.family is Family.UNKNOWN
    assert "HLT001 the loss has 2 point(s)" in d.verdict.message
    assert "CFG" not in d.verdict.message
