"""CFG005 stopped-early: the run ended before its planned steps."""

from __future__ import annotations

from flat_cases import codes, falling, sample
from runs import synthetic_run

from autopsy.api import diagnose
from autopsy.model import Family, Severity


def test_fires_when_global_step_is_short_of_max_steps() -> None:
    run = synthetic_run({"loss": falling(3.0, 1.0, 40)},
                        config={"max_steps": 100, "global_step": 40})
    f = codes(run)["CFG005"]
    assert f.severity is Severity.WARNING and f.family is Family.CRASH
    assert f.step == 40 and "40 of 100" in f.message
    assert diagnose(run).verdict.family is Family.HEALTHY  # a warning, not the verdict


def test_fires_from_the_largest_logged_step_without_global_step() -> None:
    run = synthetic_run({"loss": falling(3.0, 1.0, 30)}, config={"max_steps": 500})
    assert codes(run)["CFG005"].step == 30


def test_near_miss_finished_run_passes() -> None:
    run = synthetic_run({"loss": falling(3.0, 1.0, 40)},
                        config={"max_steps": 40, "global_step": 40})
    assert "CFG005" not in codes(run)


def test_near_miss_last_steps_not_logged_passes() -> None:
    # logging every 5 steps over 103 steps: the last logged step is 100
    run = synthetic_run({"loss": falling(3.0, 1.0, 20)}, steps=range(5, 105, 5),
                        config={"max_steps": 103, "logging_steps": 5})
    assert "CFG005" not in codes(run)


def test_passes_on_sample_runs_that_finished() -> None:
    for name in ("healthy_hf_trainer", "resumed_after_stop", "nan_after_grad_spike"):
        assert "CFG005" not in codes(sample(name)), name
