"""NAN005 non-finite-values: the fallback that never misses a NaN, and never outranks a cause."""

from __future__ import annotations

import pytest
from nan_runs import INF, NAN, bad_batch_run, blowup_run, nan_explanations, noisy, sample
from runs import synthetic_run

from autopsy.api import diagnose
from autopsy.model import Family, Severity


def _loss_only(bad: float = NAN, at: int = 50) -> list[float]:
    loss = noisy(100, 3.0, 1.0, 0.03, 0)
    for i in range(at, 100):
        loss[i] = bad
    return loss


def test_fires_on_a_nan_with_no_grad_norm_and_no_explosion() -> None:
    d = diagnose(synthetic_run({"loss": _loss_only()}, config={"max_grad_norm": 0.0}))
    assert (d.verdict.family, d.verdict.code, d.verdict.step) == (Family.NAN_INF, "NAN005", 51)
    assert d.verdict.cause is None
    finding = next(f for f in d.findings if f.code == "NAN005")
    assert finding.severity is Severity.CRITICAL
    assert any("max_grad_norm=0.0" in e.summary for e in finding.evidence)
    assert any("log the grad norm" in a for a in finding.advice)


def test_fires_on_inf_without_fp16() -> None:
    d = diagnose(synthetic_run({"loss": _loss_only(INF)}))
    assert d.verdict.code == "NAN005" and "+Inf" in d.verdict.message


@pytest.mark.parametrize("make", [blowup_run, bad_batch_run,
                                  lambda: blowup_run(grad=False)])
def test_near_miss_passes_when_an_explanation_exists(make: object) -> None:
    d = diagnose(make())  # type: ignore[operator]
    assert all(f.code != "NAN005" for f in d.findings)
    assert len(nan_explanations(d.findings)) == 1
    assert d.verdict.cause is not None


def test_near_miss_passes_a_finite_run() -> None:
    d = diagnose(synthetic_run({"loss": noisy(100, 3.0, 1.0, 0.03, 0)}))
    assert all(not f.code.startswith("NAN") for f in d.findings)


@pytest.mark.parametrize("name", ["healthy_hf_trainer", "resumed_after_stop",
                                  "overfitting_small_data"])
def test_passes_on_sample_runs_without_nan(name: str) -> None:
    assert all(f.code != "NAN005" for f in diagnose(sample(name)).findings)
