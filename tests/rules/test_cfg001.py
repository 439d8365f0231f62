"""CFG001 fp16-not-bf16: a warning for fp16 mixed precision without bf16."""

from __future__ import annotations

from flat_cases import codes, falling
from runs import synthetic_run

from autopsy.api import diagnose
from autopsy.model import Family, Severity


def test_fires_on_fp16_without_bf16_as_a_warning_only() -> None:
    run = synthetic_run({"loss": falling(3.0, 1.0, 40)}, config={"fp16": True, "bf16": False})
    d = diagnose(run)
    f = codes(run)["CFG001"]
    assert f.severity is Severity.WARNING
    assert f.family is Family.NAN_INF and f.cause == "fp16_overflow"
    assert any("bf16=True" in a for a in f.advice)
    assert f.evidence[0].source == "config.json" and f.evidence[0].key == "fp16"
    assert d.verdict.family is Family.HEALTHY  # a risk, never the verdict


def test_near_miss_bf16_passes() -> None:
    run = synthetic_run({"loss": falling(3.0, 1.0, 40)}, config={"fp16": False, "bf16": True})
    assert "CFG001" not in codes(run)


def test_near_miss_fp16_with_bf16_also_set_passes() -> None:
    run = synthetic_run({"loss": falling(3.0, 1.0, 40)}, config={"fp16": True, "bf16": True})
    assert "CFG001" not in codes(run)


def test_passes_on_fp32() -> None:
    run = synthetic_run({"loss": falling(3.0, 1.0, 40)}, config={"fp16": False})
    assert "CFG001" not in codes(run)
