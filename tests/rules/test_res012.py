"""RES012 grad-scaler-not-restored: the fp16 loss scale back at its initial value."""

from __future__ import annotations

from resume_runs import SAMPLE_RUNS, audit, finding, loss_curve, segmented_run

import autopsy
from autopsy.api import diagnose

BEFORE, AFTER = range(1, 56), range(51, 121)


def _resumed(scale_after: dict[int, float], config: dict[str, object] | None = None,
             **kw: object) -> object:
    settled = {s: 65536.0 if s < 20 else 8192.0 for s in BEFORE}  # dropped, then settled
    return segmented_run([
        {"loss": loss_curve(BEFORE), "loss_scale": settled},
        {"loss": loss_curve(AFTER), "loss_scale": scale_after},
    ], config=config, **kw)  # type: ignore[arg-type]


def test_fires_when_the_scale_restarts_at_65536_and_drops_again() -> None:
    scale = {s: 65536.0 if s < 54 else 8192.0 for s in AFTER}
    scale[54] = 32768.0
    scale[55] = 16384.0
    f = finding(_resumed(scale, checkpoints=[audit(50, missing=["grad_scaler"])]), "RES012")
    assert f is not None and f.cause == "grad_scaler_not_restored" and f.step == 51
    assert f.severity.value == "error" and "dropped 3 time(s)" in f.message
    assert "checkpoint-50 has no grad scaler state" in f.message


def test_fires_as_a_warning_with_the_configs_initial_scale() -> None:
    scale = {s: 1024.0 for s in AFTER}
    f = finding(_resumed(scale, config={"init_loss_scale": 1024.0}), "RES012")
    assert f is not None and f.severity.value == "warning"
    assert f.evidence[0].numbers["initial_scale"] == 1024.0


def test_near_miss_passes_when_the_scale_goes_on() -> None:
    assert finding(_resumed({s: 8192.0 for s in AFTER}), "RES012") is None


def test_near_miss_passes_when_the_scale_never_left_its_start() -> None:
    run = segmented_run([
        {"loss": loss_curve(BEFORE), "loss_scale": {s: 65536.0 for s in BEFORE}},
        {"loss": loss_curve(AFTER), "loss_scale": {s: 65536.0 for s in AFTER}},
    ])
    assert finding(run, "RES012") is None


def test_fires_on_the_real_sample_run() -> None:
    run = autopsy.load_run(SAMPLE_RUNS / "resume_grad_scaler_lost")
    v = diagnose(run).verdict
    assert (v.code, v.cause, v.step) == ("RES012", "grad_scaler_not_restored", 61)
    f = finding(run, "RES012")
    assert f is not None and f.evidence[0].numbers["initial_scale"] == 2.0**24
