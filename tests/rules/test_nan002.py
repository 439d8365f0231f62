"""NAN002 nan-bad-batch: a NaN out of a flat grad norm names the batch to inspect."""

from __future__ import annotations

from nan_runs import (
    NAN,
    bad_batch_run,
    blowup_run,
    flat_grad,
    label,
    label_causes,
    noisy,
    sample,
)
from runs import synthetic_run

from autopsy.api import diagnose
from autopsy.model import Family, Severity


def test_fires_on_a_nan_with_a_flat_grad_norm() -> None:
    d = diagnose(bad_batch_run(nan_at=70))
    assert (d.verdict.code, d.verdict.cause, d.verdict.step) == ("NAN002", "bad_data", 70)
    finding = next(f for f in d.findings if f.code == "NAN002")
    assert finding.severity is Severity.CRITICAL
    assert "inspect the batch at step 70" in finding.advice[0]
    assert any(e.tag == "grad_norm" and "flat" in e.summary for e in finding.evidence)


def test_fires_with_a_logging_interval_and_names_the_window() -> None:
    d = diagnose(bad_batch_run(every=10, nan_at=700))
    assert d.verdict.step == 700
    finding = next(f for f in d.findings if f.code == "NAN002")
    assert "steps 691-700" in finding.advice[0] and "step 690" in finding.advice[0]
    assert "cannot be ruled out" in finding.message


def test_fires_when_only_the_grad_norm_goes_nan_first() -> None:
    loss, grad = noisy(100, 3.0, 1.0, 0.03, 0), flat_grad(100, 1.0, 1)
    grad[59] = NAN
    for i in range(60, 100):
        loss[i] = grad[i] = NAN
    d = diagnose(synthetic_run({"loss": loss, "grad_norm": grad}))
    assert (d.verdict.code, d.verdict.step) == ("NAN002", 60)


def test_fires_as_a_warning_when_the_run_recovered() -> None:
    loss = noisy(100, 3.0, 1.0, 0.03, 0)
    loss[50] = NAN
    d = diagnose(synthetic_run({"loss": loss, "grad_norm": flat_grad(100, 1.0, 1)}))
    finding = next(f for f in d.findings if f.code == "NAN002")
    assert finding.severity is Severity.WARNING and finding.step == 51


def test_fires_on_the_sample_nan_bad_batch() -> None:
    d = diagnose(sample("nan_bad_batch"))
    expected = label("nan_bad_batch") or {}
    assert d.verdict.family is Family.NAN_INF
    assert d.verdict.cause in label_causes(expected, "bad_data")
    assert d.verdict.step == expected.get("first_bad_step", d.verdict.step)


def test_near_miss_passes_a_blowup() -> None:
    assert all(f.code != "NAN002" for f in diagnose(blowup_run()).findings)


def test_near_miss_passes_too_few_grad_points_before_the_nan() -> None:
    d = diagnose(bad_batch_run(nan_at=4))
    assert all(f.code != "NAN002" for f in d.findings)
    assert d.verdict.code == "NAN005"
