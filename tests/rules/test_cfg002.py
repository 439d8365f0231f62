"""CFG002 no-clipping: max_grad_norm 0 or None in a training config."""

from __future__ import annotations

from flat_cases import codes, falling, noisy, sample
from runs import synthetic_run

from autopsy.model import ConfigValue, Family, Severity


def test_fires_on_max_grad_norm_zero() -> None:
    run = synthetic_run({"loss": falling(3.0, 1.0, 40), "grad_norm": noisy(0.5, 40)},
                        config={"max_grad_norm": 0.0})
    f = codes(run)["CFG002"]
    assert f.severity is Severity.WARNING and f.family is Family.DIVERGING
    assert f.cause == "no_clipping"
    assert any("max_grad_norm=1.0" in a for a in f.advice)
    assert any(e.tag == "grad_norm" for e in f.evidence)


def test_fires_on_max_grad_norm_none() -> None:
    run = synthetic_run({"loss": falling(3.0, 1.0, 40)}, config={"max_grad_norm": None})
    assert codes(run)["CFG002"].cause == "no_clipping"


def test_near_miss_clipping_on_passes() -> None:
    run = synthetic_run({"loss": falling(3.0, 1.0, 40)}, config={"max_grad_norm": 1.0})
    assert "CFG002" not in codes(run)


def test_near_miss_unknown_clipping_claims_nothing() -> None:
    run = synthetic_run({"loss": falling(3.0, 1.0, 40)}, config={"learning_rate": 1e-4})
    assert "CFG002" not in codes(run)


def test_near_miss_key_in_a_model_config_is_not_training_evidence() -> None:
    run = synthetic_run({"loss": falling(3.0, 1.0, 40)})
    run.config.add(ConfigValue("max_grad_norm", 0, "adapter_config.json"))
    assert "CFG002" not in codes(run)
    hf_model = synthetic_run({"loss": falling(3.0, 1.0, 40)},
                             config={"model_type": "gpt2", "max_grad_norm": 0})
    assert "CFG002" not in codes(hf_model)


def test_fires_on_nan_after_grad_spike_without_outranking_the_nan() -> None:
    run = sample("nan_after_grad_spike")
    from autopsy.api import diagnose

    d = diagnose(run)
    assert "CFG002" in {f.code for f in d.findings}
    assert d.verdict.family is Family.NAN_INF


def test_passes_on_healthy_hf_trainer() -> None:
    assert "CFG002" not in codes(sample("healthy_hf_trainer"))
