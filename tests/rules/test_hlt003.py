"""HLT003 loss-level-mid-run: a level excerpt of a run under way, with nothing failed."""

from __future__ import annotations

import math
from dataclasses import replace

from runs import synthetic_run

from autopsy.api import diagnose
from autopsy.model import Family
from autopsy.model.finding import Severity
from autopsy.rules.engine import pick_verdict

# five mmdetection lines from iteration 1050 on, logged every 50 iterations: a loss of ~1.0
LEVEL = [1.0031, 1.0736, 1.0439, 1.0456, 0.9902]
MID_RUN = [1050, 1100, 1150, 1200, 1250]


def _codes(run) -> list[str]:
    return [f.code for f in diagnose(run).findings]


def test_fires_on_a_level_excerpt_far_into_the_run() -> None:
    d = diagnose(synthetic_run({"loss": LEVEL}, steps=MID_RUN))
    assert (d.verdict.family, d.verdict.code) == (Family.HEALTHY, "HLT003")
    assert d.findings[0].evidence[0].numbers["first_step"] == 1050


def test_fires_on_a_level_accuracy_without_a_loss() -> None:
    d = diagnose(synthetic_run({"accuracy": [0.92, 0.91, 0.915, 0.92, 0.918]},
                               steps=[250030, 250040, 250050, 250060, 250070]))
    assert d.verdict.code == "HLT003"


def test_near_miss_passes_over_a_level_loss_from_the_start() -> None:
    # logged from step 1: the start is shown, a level there is the FLAT rules' to judge
    assert "HLT003" not in _codes(synthetic_run({"loss": LEVEL}))


def test_near_miss_passes_over_a_rising_excerpt() -> None:
    rising = [1.0, 1.05, 1.1, 1.16, 1.22]
    assert "HLT003" not in _codes(synthetic_run({"loss": rising}, steps=MID_RUN))


def test_near_miss_passes_over_a_nan_grad_norm_or_loss() -> None:
    run = synthetic_run({"loss": LEVEL, "grad_norm": [1.0, 1.0, math.nan, 1.0, 1.0]},
                        steps=MID_RUN)
    assert "HLT003" not in _codes(run)
    assert "HLT003" not in _codes(synthetic_run({"loss": [*LEVEL[:4], math.nan]},
                                                steps=MID_RUN))


def test_near_miss_passes_over_a_zero_or_warming_up_learning_rate() -> None:
    zero = synthetic_run({"loss": LEVEL, "lr": [0.0] * 5}, steps=MID_RUN)
    assert "HLT003" not in _codes(zero)
    warming = synthetic_run({"loss": LEVEL, "lr": [6.2e-5, 6.4e-5, 6.6e-5, 6.8e-5, 7.0e-5]},
                            steps=MID_RUN)
    assert "HLT003" not in _codes(warming)
    decaying = synthetic_run({"loss": LEVEL, "lr": [2e-2, 2e-2, 1.9e-2, 1.9e-2, 1.8e-2]},
                             steps=MID_RUN)
    assert "HLT003" in _codes(decaying)


def test_near_miss_passes_over_an_accuracy_of_zero() -> None:
    run = synthetic_run({"loss": [8.89, 8.91, 8.87, 8.93, 8.88], "accuracy": [0, 0, 0.0078, 0, 0]},
                        steps=[3860, 3880, 3900, 3920, 3940])
    assert "HLT003" not in _codes(run)


def test_a_cost_warning_outranks_it_but_not_a_falling_loss() -> None:
    level = diagnose(synthetic_run({"loss": LEVEL}, steps=MID_RUN))
    (vouch,) = [f for f in level.findings if f.code == "HLT003"]
    falling = diagnose(synthetic_run({"loss": [2.0 / (1 + 0.1 * i) for i in range(30)]}))
    (strong,) = [f for f in falling.findings if f.code == "HLT001"]
    # a data wait of a third of each step, under the failure bar: a material cost
    cost = replace(vouch, code="SLOW001", family=Family.SLOW, severity=Severity.WARNING)
    run = synthetic_run({"loss": LEVEL}, steps=MID_RUN)
    assert pick_verdict([vouch, cost], [], run).code == "SLOW001"
    assert pick_verdict([strong, cost], [], run).code == "HLT001"
    assert pick_verdict([vouch], [], run).code == "HLT003"
