"""NAN004 nan-hidden-in-loss: a NaN grad norm behind a finite logged loss."""

from __future__ import annotations

from nan_runs import INF, NAN, flat_grad, label, label_causes, noisy, sample
from runs import synthetic_run

from autopsy.api import diagnose
from autopsy.model import Family, Severity


def _hidden(loss_after: float | None, spike: bool) -> dict[str, list[float]]:
    loss, grad = noisy(100, 3.0, 1.0, 0.03, 0), flat_grad(100, 1.0, 1)
    if spike:
        for i in range(59, 63):
            grad[i] = 10.0 ** (1 + 2 * (i - 59))
    for i in range(63, 100):
        grad[i] = NAN
        if loss_after is not None:
            loss[i] = loss_after
    return {"loss": loss, "grad_norm": grad, "learning_rate": [3e-3] * 100}


def test_fires_on_loss_zero_with_a_nan_grad_norm_after_a_spike() -> None:
    run = synthetic_run(_hidden(0.0, spike=True),
                        config={"logging_nan_inf_filter": True, "max_grad_norm": 0.0})
    d = diagnose(run)
    assert (d.verdict.code, d.verdict.cause, d.verdict.step) == ("NAN001", "lr_too_high", 64)
    note = next(f for f in d.findings if f.code == "NAN004")
    assert note.severity is Severity.WARNING and note.step == 64
    assert "hides" in note.message
    assert any("logging_nan_inf_filter=False" in a for a in note.advice)
    assert any("max_grad_norm=1.0" in a for a in note.advice)  # the blow-up advice too
    assert any("logged as 0" in e.summary for e in note.evidence)
    assert any(e.source == "config.json" for e in note.evidence)
    assert "hidden" in next(f for f in d.findings if f.code == "NAN001").message


def test_fires_on_a_smoothed_finite_loss_with_a_flat_grad_norm() -> None:
    d = diagnose(synthetic_run(_hidden(None, spike=False)))
    assert d.verdict.code == "NAN002" and d.verdict.step == 64
    assert any(f.code == "NAN004" for f in d.findings)


def test_fires_on_the_sample_hidden_nan_hf_filter() -> None:
    d = diagnose(sample("hidden_nan_hf_filter"))
    expected = label("hidden_nan_hf_filter") or {}
    assert d.verdict.family is Family.NAN_INF
    assert any(f.code == "NAN004" for f in d.findings)
    assert d.verdict.step == expected.get("first_bad_step", d.verdict.step)
    assert d.verdict.cause in label_causes(expected, d.verdict.cause)


def test_near_miss_passes_when_the_loss_shows_the_nan() -> None:
    data = _hidden(NAN, spike=True)
    assert all(f.code != "NAN004" for f in diagnose(synthetic_run(data)).findings)


def test_near_miss_passes_fp16_skipped_steps() -> None:
    grad = flat_grad(100, 1.0, 1)
    for i in range(8):
        grad[i] = INF
    run = synthetic_run({"loss": noisy(100, 3.0, 1.0, 0.03, 0), "grad_norm": grad},
                        config={"fp16": True})
    assert all(f.code != "NAN004" for f in diagnose(run).findings)
