"""FLAT005 loss-flat: flat near the initial value, cause not established."""

from __future__ import annotations

import pytest
from flat_cases import codes, falling, noisy, sample
from runs import synthetic_run

from autopsy.api import diagnose
from autopsy.model import Family


def test_fires_without_grad_norm_or_lr_and_says_what_is_missing() -> None:
    run = synthetic_run({"loss": noisy(2.0, 50, noise=0.03)})
    d = diagnose(run)
    assert d.verdict.family is Family.NOT_DECREASING
    assert d.verdict.code == "FLAT005"
    assert d.verdict.cause is None
    assert "grad_norm" in d.verdict.message and "learning rate" in d.verdict.message


def test_fires_when_everything_known_rules_the_causes_out() -> None:
    run = synthetic_run({"loss": noisy(1.0, 50), "grad_norm": noisy(0.5, 50)},
                        config={"learning_rate": 3e-5, "num_labels": 10})
    f = codes(run)["FLAT005"]
    assert "rule out" in f.message


def test_near_miss_plateau_after_a_large_fall_passes() -> None:
    # converged: fell from 3.0 to 1.0 in the first tenth, then flat for the rest
    loss = falling(3.0, 1.0, 20, noise=0.0)[:6] + noisy(1.0, 94, noise=0.02)
    run = synthetic_run({"loss": loss, "grad_norm": noisy(0.5, 100)})
    assert not any(c.startswith("FLAT") for c in codes(run))


def test_near_miss_slow_steady_decline_passes() -> None:
    run = synthetic_run({"loss": noisy(2.0, 300, noise=0.03, slope=-0.15)})
    assert not any(c.startswith("FLAT") for c in codes(run))


def test_near_miss_late_plateau_passes() -> None:
    run = synthetic_run({"loss": falling(3.0, 0.5, 200)})
    assert not any(c.startswith("FLAT") for c in codes(run))


@pytest.mark.parametrize("name", ["healthy_hf_trainer", "overfitting_small_data",
                                  "resumed_after_stop", "nan_after_grad_spike",
                                  "loss_spikes_recover", "fp16_warmup_skips_healthy",
                                  "diverging_finite", "nan_bad_batch", "hidden_nan_hf_filter",
                                  "fp16_overflow_collapse"])
def test_passes_on_sample_runs_that_learn(name: str) -> None:
    assert not any(c.startswith("FLAT") for c in codes(sample(name)))


CASES = {
    "zero": ({"loss": [0.0] * 30, "grad_norm": [0.0] * 30}, {}),
    "frozen": ({"loss": noisy(2.0, 30), "grad_norm": [0.0] * 30}, {"learning_rate": 1e-9}),
    "low_lr_at_chance": ({"loss": noisy(1.386, 30, noise=0.01), "grad_norm": noisy(1.0, 30)},
                         {"learning_rate": 1e-9, "num_labels": 4}),
    "chance": ({"loss": noisy(1.386, 30, noise=0.01), "grad_norm": noisy(1.0, 30)},
               {"learning_rate": 2e-5, "num_labels": 4}),
    "generic": ({"loss": noisy(1.0, 30)}, {}),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_exactly_one_flat_rule_fires(case: str) -> None:
    series, config = CASES[case]
    flat = [c for c in codes(synthetic_run(series, config=config)) if c.startswith("FLAT")]
    assert len(flat) == 1, flat


def test_fires_on_an_epoch_log_whose_loss_never_changes() -> None:
    from runs import synthetic_run

    from autopsy.api import diagnose

    d = diagnose(synthetic_run({"loss": [0.4874] * 5}))
    assert (d.verdict.family.value, d.verdict.code) == ("not_decreasing", "FLAT005")


def test_near_miss_passes_on_a_fitted_loss_printed_as_zero() -> None:
    from runs import synthetic_run

    from autopsy.api import diagnose

    d = diagnose(synthetic_run({"loss": [0.9, 0.2, 0.01, 0.0, 0.0, 0.0]}))
    assert all(f.family.value != "not_decreasing" for f in d.findings)


def test_near_miss_window_cut_from_mid_run_passes() -> None:
    """A flat stretch whose log starts far from step 0 (a reporter pasting steps 3290-3430 of
    a long run) may be a plateau after learning: FLAT005 does not call it never-learned;
    the same stretch from step 10 on is flagged."""
    loss = noisy(2.15, 15, noise=0.04)
    late = synthetic_run({"loss": loss}, steps=list(range(3290, 3440, 10)))
    assert "FLAT005" not in codes(late)
    early = synthetic_run({"loss": noisy(2.15, 15, noise=0.04)}, steps=list(range(10, 160, 10)))
    assert "FLAT005" in codes(early)
