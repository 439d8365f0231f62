"""CFG003 no-warmup-high-lr: no warm-up with an LR above the regime's range."""

from __future__ import annotations

from flat_cases import codes, falling, sample
from runs import synthetic_run

from autopsy.api import diagnose
from autopsy.model import Family, Severity


def test_fires_on_config_without_warmup_and_a_high_lr() -> None:
    run = synthetic_run({"loss": falling(3.0, 1.0, 40)},
                        config={"learning_rate": 3e-4, "warmup_steps": 0, "warmup_ratio": 0.0,
                                "max_steps": 2000})
    f = codes(run)["CFG003"]
    assert f.severity is Severity.WARNING and f.family is Family.DIVERGING
    assert f.cause == "no_warmup"
    assert "full fine-tuning" in f.message
    assert any("warmup_steps=60" in a and "2000 steps" in a for a in f.advice)


def test_fires_from_a_logged_lr_that_starts_at_its_peak() -> None:
    lr = [1e-3 * (1 - i / 100) for i in range(100)]
    run = synthetic_run({"loss": falling(3.0, 1.0, 100), "learning_rate": lr},
                        config={"per_device_train_batch_size": 8})  # a trainer's arguments
    f = codes(run)["CFG003"]
    assert any(e.tag == "learning_rate" and "warm-up 0" in e.summary for e in f.evidence)
    assert any("1-5% of the" in a for a in f.advice)


def test_a_run_whose_config_names_no_regime_is_not_held_to_fine_tuning() -> None:
    # a CNN trained from scratch (a text log: no trainer arguments, no optimizer name) at
    # an SGD-like 0.02 and an Adam pre-training 1e-3: usual for their regimes
    for peak in (0.02, 1e-3):
        lr = [peak * (1 - i / 100) for i in range(100)]
        run = synthetic_run({"loss": falling(3.0, 1.0, 100), "learning_rate": lr})
        assert "CFG003" not in codes(run), peak
    lr = [0.5 * (1 - i / 100) for i in range(100)]  # high for any regime: still said
    f = codes(synthetic_run({"loss": falling(3.0, 1.0, 100), "learning_rate": lr}))["CFG003"]
    assert "any regime" in f.message and "names no regime" in f.message


def test_fires_on_nan_after_grad_spike_without_outranking_the_nan() -> None:
    d = diagnose(sample("nan_after_grad_spike"))
    f = next(f for f in d.findings if f.code == "CFG003")
    assert "SGD" in f.message
    assert d.verdict.family is Family.NAN_INF


def test_near_miss_warmup_in_config_passes() -> None:
    run = synthetic_run({"loss": falling(3.0, 1.0, 40)},
                        config={"learning_rate": 3e-4, "warmup_steps": 100})
    assert "CFG003" not in codes(run)


def test_near_miss_logged_warmup_ramp_passes_even_if_config_says_zero() -> None:
    lr = [1e-3 * min(1.0, (i + 1) / 10) for i in range(100)]
    run = synthetic_run({"loss": falling(3.0, 1.0, 100), "learning_rate": lr},
                        config={"warmup_steps": 0})
    assert "CFG003" not in codes(run)


def test_near_miss_no_warmup_at_a_modest_lr_passes() -> None:
    run = synthetic_run({"loss": falling(3.0, 1.0, 40)},
                        config={"learning_rate": 2e-5, "warmup_steps": 0})
    assert "CFG003" not in codes(run)
    lora = synthetic_run({"loss": falling(3.0, 1.0, 40)},
                         config={"learning_rate": 2e-4, "warmup_steps": 0, "finetune_mode": "lora"})
    assert "CFG003" not in codes(lora)


def test_passes_on_healthy_hf_trainer() -> None:
    assert "CFG003" not in codes(sample("healthy_hf_trainer"))


def test_a_config_number_too_large_for_a_float_is_no_crash() -> None:
    for huge in (10**30, 10**400):
        run = synthetic_run({"loss": falling(3.0, 1.0, 40), "learning_rate": [1e-5] * 40},
                            config={"learning_rate": huge, "warmup_steps": 0, "max_steps": huge})
        d = diagnose(run)
        failed = [s for s in d.skipped if s.reason.startswith("rule failed")]
        assert failed == [], failed
