"""NAN003 fp16-overflow: a collapsing loss scale, not the scaler's normal start."""

from __future__ import annotations

import pytest
from nan_runs import (
    INF,
    NAN,
    blowup_run,
    flat_grad,
    fp16_scale,
    grad_scaler,
    label,
    label_causes,
    noisy,
    sample,
)
from runs import synthetic_run

from autopsy.api import diagnose
from autopsy.model import Family, Severity

N = 200


def _collapsing_scale() -> list[float]:
    scale = fp16_scale(N, 9)
    for i in range(100, N):
        scale[i] = max(scale[99] / 2 ** (i - 99), 2.0 ** -10)
    return scale


def test_fires_on_a_collapsing_loss_scale() -> None:
    run = synthetic_run({"loss": noisy(N, 3.0, 1.0, 0.03, 0), "loss_scale": _collapsing_scale()},
                        config={"fp16": True})
    d = diagnose(run)
    assert (d.verdict.code, d.verdict.cause, d.verdict.step) == ("NAN003", "fp16_overflow", 101)
    finding = next(f for f in d.findings if f.code == "NAN003")
    assert finding.severity is Severity.ERROR  # finite values, but the scaler gave up
    assert any("bf16=True" in a for a in finding.advice)
    assert any(e.source == "config.json" for e in finding.evidence)


def test_fires_on_runs_of_skipped_steps_in_hf_logs() -> None:
    grad = flat_grad(N, 1.0, 1)
    for i in range(100, N):
        grad[i] = INF
    run = synthetic_run({"loss": noisy(N, 3.0, 1.0, 0.03, 0), "grad_norm": grad},
                        config={"fp16": True})
    d = diagnose(run)
    assert (d.verdict.code, d.verdict.step) == ("NAN003", 101)
    assert d.verdict.family is Family.NAN_INF
    assert all(f.code != "NAN004" for f in d.findings)  # skipped steps, not a hidden NaN


def test_fires_on_a_skipped_steps_counter() -> None:
    skipped = [3.0] * 100 + [3.0 + k for k in range(1, N - 99)]
    run = synthetic_run({"loss": noisy(N, 3.0, 1.0, 0.03, 0), "skipped_steps": skipped})
    assert diagnose(run).verdict.code == "NAN003"


def test_fires_on_an_inf_loss_under_fp16() -> None:
    loss = noisy(N, 3.0, 1.0, 0.03, 0)
    for i in range(150, N):
        loss[i] = INF
    run = synthetic_run({"loss": loss, "grad_norm": flat_grad(N, 1.0, 1)}, config={"fp16": True})
    d = diagnose(run)
    assert (d.verdict.code, d.verdict.step) == ("NAN003", 151)
    assert next(f for f in d.findings if f.code == "NAN003").severity is Severity.CRITICAL


def test_fires_before_a_blowup_explanation_under_fp16() -> None:
    d = diagnose(blowup_run(config={"fp16": True}))
    assert [f.code for f in d.findings if f.code.startswith("NAN")] == ["NAN003"]
    finding = next(f for f in d.findings if f.code == "NAN003")
    assert any("lower the learning rate" in a for a in finding.advice)


def test_fires_on_the_sample_fp16_overflow_collapse() -> None:
    d = diagnose(sample("fp16_overflow_collapse"))
    expected = label("fp16_overflow_collapse") or {}
    assert (d.verdict.family, d.verdict.code) == (Family.NAN_INF, "NAN003")
    assert d.verdict.cause in label_causes(expected, "fp16_overflow")
    assert d.verdict.step == expected.get("first_bad_step", d.verdict.step)
    finding = next(f for f in d.findings if f.code == "NAN003")
    assert finding.severity is Severity.CRITICAL
    assert any(e.tag == "loss_scale" for e in finding.evidence)


def test_near_miss_passes_the_scalers_warmup_skips() -> None:
    run = synthetic_run({"loss": noisy(N, 3.0, 1.0, 0.03, 0), "loss_scale": fp16_scale(N, 9)},
                        config={"fp16": True})
    d = diagnose(run)
    assert all(not f.code.startswith("NAN") for f in d.findings)
    assert d.verdict.family is Family.HEALTHY


def test_near_miss_passes_warmup_and_isolated_skips_in_hf_logs() -> None:
    grad = flat_grad(N, 1.0, 1)
    for i in (*range(12), 120, 160):
        grad[i] = INF
    run = synthetic_run({"loss": noisy(N, 3.0, 1.0, 0.03, 0), "grad_norm": grad},
                        config={"fp16": True})
    assert all(not f.code.startswith("NAN") for f in diagnose(run).findings)


def test_near_miss_passes_a_resumed_run_whose_scaler_starts_again() -> None:
    scale = fp16_scale(100, 9) + fp16_scale(100, 9, seed=1)
    steps = list(range(1, 101)) + list(range(91, 191))
    run = synthetic_run({"loss": noisy(200, 3.0, 1.0, 0.03, 0), "loss_scale": scale},
                        steps=steps, config={"fp16": True},
                        segments={"loss": [0] * 100 + [1] * 100,
                                  "loss_scale": [0] * 100 + [1] * 100})
    assert all(not f.code.startswith("NAN") for f in diagnose(run).findings)


def test_near_miss_passes_a_bf16_run_logging_a_unit_scale() -> None:
    run = synthetic_run({"loss": noisy(N, 3.0, 1.0, 0.03, 0), "loss_scale": [1.0] * N},
                        config={"bf16": True, "fp16": False})
    assert all(not f.code.startswith("NAN") for f in diagnose(run).findings)


def test_near_miss_passes_the_sample_fp16_warmup_skips_healthy() -> None:
    d = diagnose(sample("fp16_warmup_skips_healthy"))
    assert all(not f.code.startswith("NAN") for f in d.findings)
    assert d.verdict.family is not Family.NAN_INF


def test_near_miss_passes_nan_without_fp16() -> None:
    loss = noisy(N, 3.0, 1.0, 0.03, 0)
    loss[150:] = [NAN] * 50
    run = synthetic_run({"loss": loss, "grad_norm": flat_grad(N, 1.0, 1)}, config={"fp16": False})
    assert all(f.code != "NAN003" for f in diagnose(run).findings)


LAYOUTS = ("loss_scale", "skipped_steps", "grad_norm")


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize(("level", "growth", "seed"), [(2.0**10, 2000, 14), (2.0**5, 1000, 15),
                                                        (2.0**14, 200, 3)])
def test_near_miss_passes_a_simulated_healthy_scaler(layout: str, level: float, growth: int,
                                                     seed: int) -> None:
    sim = grad_scaler(3000, level=level, growth=growth, seed=seed)
    for every in (1, 10):
        steps = list(range(every, 3001, every))
        series = {k: sim[k][every - 1 :: every] for k in ("loss", layout)}
        run = synthetic_run(series, steps=steps, config={"fp16": True})
        assert all(not f.code.startswith("NAN") for f in diagnose(run).findings)


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("every", [1, 10])
def test_fires_on_a_simulated_scaler_collapse(layout: str, every: int) -> None:
    sim = grad_scaler(3000, level=2.0**10, growth=2000, seed=0, collapse_at=2000)
    steps = list(range(every, 3001, every))
    series = {k: sim[k][every - 1 :: every] for k in ("loss", layout)}
    d = diagnose(synthetic_run(series, steps=steps, config={"fp16": True}))
    assert (d.verdict.code, d.verdict.cause) == ("NAN003", "fp16_overflow")
    assert 2000 < d.verdict.step <= 2020  # the scale sat a few halvings below the limit


def test_a_collapse_the_scaler_grows_back_from_is_a_warning_and_the_run_healthy() -> None:
    """A published Megatron (Chinese-Transformer-XL) fine-tuning log (public corpus, dev half):
    the loss scale falls 64 -> 0.1 with one interval's lm loss NAN at iteration 700, then the
    loss is finite and falls (5.19 -> 3.98) while the scale grows back to 0.2: a recovered
    scaler, noted, not a failure."""
    from repo_paths import public_run

    import autopsy

    run = autopsy.load_run(public_run(
        "megatron_transformer_xl_finetune_single_nan_loss_scale_0_1_recovers_issue_7"))
    d = diagnose(run)
    assert d.verdict.family is Family.HEALTHY and d.verdict.code == "HLT001"
    (f,) = [f for f in d.findings if f.code == "NAN003"]
    assert f.severity is Severity.WARNING and f.step == 700
    healthy = next(f for f in d.findings if f.code == "HLT001")
    assert any("skipped step" in e.summary for e in healthy.evidence)


def test_the_same_collapse_without_regrowth_stays_an_error() -> None:
    scale = _collapsing_scale()  # falls from step 100 to 2**-10 and stays there
    loss = noisy(N, 3.0, 1.0, 0.03, 0)
    loss[150] = NAN
    run = synthetic_run({"loss": loss, "loss_scale": scale}, config={"fp16": True})
    (f,) = [f for f in diagnose(run).findings if f.code == "NAN003"]
    assert f.severity is Severity.ERROR
    assert diagnose(run).verdict.family is Family.NAN_INF
