"""LR-schedule reconstruction, on LRs recorded from the real torch/transformers schedulers."""

from __future__ import annotations

import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

import autopsy
from autopsy.signals import Schedule, lr_at, phase_at, reconstruct_schedule

SAMPLES = Path(__file__).resolve().parents[2] / "sample_runs"
torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")
S = torch.optim.lr_scheduler
BASE = 3e-4


def record(make: Callable[[Any], Any], steps: int = 1000, every: int = 1) -> pd.Series:
    """Run a real scheduler on a dummy optimizer; the LR in effect at each step 0..steps-1."""
    opt = torch.optim.SGD([torch.nn.Parameter(torch.zeros(1))], lr=BASE)
    sched = make(opt)
    out = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "lr_scheduler.step() before optimizer.step()"
        for k in range(steps):
            out[k] = opt.param_groups[0]["lr"]
            opt.step()
            sched.step()
    s = pd.Series(out, dtype="float64")
    s.index.name = "step"
    return s.iloc[::every]


def rebuild(make: Callable[[Any], Any], every: int, steps: int = 1000) -> Schedule:
    sched = reconstruct_schedule(record(make, steps, every))
    assert sched is not None
    return sched


EVERY = pytest.mark.parametrize("every", [1, 10])


@EVERY
@pytest.mark.parametrize("warmup", [100, 25])
def test_hf_linear_with_warmup(every: int, warmup: int) -> None:
    s = rebuild(lambda o: transformers.get_linear_schedule_with_warmup(o, warmup, 1000), every)
    assert s.shape == "linear"  # not mistaken for cosine
    assert s.warmup_steps == warmup and s.peak_step == warmup
    assert s.peak == pytest.approx(BASE)
    assert s.restarts == ()
    assert s.first == 0.0


@EVERY
@pytest.mark.parametrize("warmup", [100, 25])
def test_hf_cosine_with_warmup(every: int, warmup: int) -> None:
    s = rebuild(lambda o: transformers.get_cosine_schedule_with_warmup(o, warmup, 1000), every)
    assert s.shape == "cosine"
    assert s.warmup_steps == warmup
    # when the peak was not logged (warm-up 25, every 10) it is where the lines meet
    assert s.peak == pytest.approx(BASE, rel=1e-9 if warmup % every == 0 else 2e-3)
    assert s.restarts == ()


@EVERY
def test_hf_constant_with_warmup(every: int) -> None:
    s = rebuild(lambda o: transformers.get_constant_schedule_with_warmup(o, 100), every)
    assert (s.shape, s.warmup_steps, s.restarts) == ("constant", 100, ())
    assert phase_at(s, 50) == "warmup"
    assert phase_at(s, 900) == phase_at(s, 5000) == "peak"


@EVERY
def test_steplr(every: int) -> None:
    s = rebuild(lambda o: S.StepLR(o, 300, gamma=0.1), every)
    assert (s.shape, s.warmup_steps, s.peak_step, s.restarts) == ("step", 0, 0, ())
    assert s.final == pytest.approx(BASE * 1e-3)


@EVERY
def test_multistep(every: int) -> None:
    assert rebuild(lambda o: S.MultiStepLR(o, [500, 800], gamma=0.1), every).shape == "step"


@EVERY
@pytest.mark.parametrize("gamma", [0.995, 0.9995])
def test_exponential(every: int, gamma: float) -> None:
    s = rebuild(lambda o: S.ExponentialLR(o, gamma), every)
    assert (s.shape, s.warmup_steps, s.restarts) == ("exponential", 0, ())


@EVERY
def test_cosine_annealing_without_restarts(every: int) -> None:
    s = rebuild(lambda o: S.CosineAnnealingLR(o, 1000), every)
    assert (s.shape, s.warmup_steps, s.restarts) == ("cosine", 0, ())


@EVERY
def test_cosine_warm_restarts(every: int) -> None:
    s = rebuild(lambda o: S.CosineAnnealingWarmRestarts(o, 200), every)
    assert s.shape == "cosine"
    assert s.restarts == (200, 400, 600, 800)
    assert phase_at(s, 205) == "restart"
    assert phase_at(s, 150) == "decay"
    s2 = rebuild(lambda o: S.CosineAnnealingWarmRestarts(o, 100, T_mult=2, eta_min=1e-6), every)
    assert s2.restarts == (100, 300, 700)


@EVERY
def test_warmup_from_a_tenth_then_cosine(every: int) -> None:
    def make(o: Any) -> Any:
        return S.SequentialLR(o, [S.LinearLR(o, 0.1, 1.0, 50), S.CosineAnnealingLR(o, 950)], [50])

    s = rebuild(make, every)
    assert (s.shape, s.warmup_steps, s.peak_step, s.restarts) == ("cosine", 50, 50, ())
    assert s.first == pytest.approx(0.1 * BASE)


def test_one_cycle() -> None:
    s = rebuild(lambda o: S.OneCycleLR(o, BASE, total_steps=1000), 1)
    assert (s.shape, s.warmup_steps, s.restarts) == ("cosine", 299, ())
    lin = rebuild(lambda o: S.OneCycleLR(o, BASE, total_steps=1000, anneal_strategy="linear"), 10)
    assert (lin.shape, lin.warmup_steps) == ("linear", 299)


def test_truncated_cosine_is_cosine_and_linear_is_not() -> None:
    cos = record(lambda o: transformers.get_cosine_schedule_with_warmup(o, 50, 1000))
    assert reconstruct_schedule(cos.loc[:400]).shape == "cosine"  # type: ignore[union-attr]
    lin = record(lambda o: transformers.get_linear_schedule_with_warmup(o, 50, 1000))
    assert reconstruct_schedule(lin.loc[:400]).shape == "linear"  # type: ignore[union-attr]


@pytest.mark.parametrize("seed", range(5))
def test_noisy_rounded_linear_decay_is_not_cosine(seed: int) -> None:
    steps = np.arange(0, 600, 10)
    rng = np.random.default_rng(seed)
    y = 3e-5 * (1000 - steps) / 1000 * (1 + rng.normal(0, 0.003, steps.size))
    rounded = pd.Series([float(f"{v:.2e}") for v in y], index=steps)
    s = reconstruct_schedule(rounded)
    assert s is not None and s.shape == "linear"


def test_relaunch_whose_warmup_restarts() -> None:
    """A resume that did not restore the scheduler: the warm-up starts again at step 400."""
    lin = record(lambda o: transformers.get_linear_schedule_with_warmup(o, 50, 1000))
    again = lin.iloc[:600].copy()
    again.index = again.index + 400
    s = reconstruct_schedule(pd.concat([lin.loc[:399], again]))
    assert s is not None
    assert s.restarts == (400,)
    assert (s.shape, s.warmup_steps, s.peak_step) == ("linear", 50, 50)
    assert phase_at(s, 410) == "restart"
    assert phase_at(s, 300) == "decay"


def test_noisy_float32_lr_is_not_restarting() -> None:
    lin = record(lambda o: transformers.get_linear_schedule_with_warmup(o, 50, 1000))
    jitter = lin.astype("float32").astype("float64") * (1 + 1e-7 * np.sin(np.arange(1000)))
    s = reconstruct_schedule(jitter)
    assert s is not None and s.restarts == () and s.shape == "linear"


def test_down_up_down_lr_is_unknown() -> None:
    u = np.linspace(0, 1, 200)  # 1 -> 0.3, back up to 0.45 (too little for a restart), 0.3
    y = np.where(u < 0.5, 1 - 1.4 * u, np.where(u < 0.75, 0.3 + 0.6 * (u - 0.5), 0.6 - 0.6 * u))
    s = reconstruct_schedule(pd.Series(1e-3 * y))
    assert s is not None
    assert (s.shape, s.restarts) == ("unknown", ())
    assert s.residual > 0.05


def test_regular_bumps_are_cosine_restarts() -> None:
    steps = np.arange(500)
    s = reconstruct_schedule(pd.Series(1e-3 * (1 + 0.5 * np.sin(steps / 30) ** 2), index=steps))
    assert s is not None
    assert len(s.restarts) == 5 and s.shape == "cosine"


def test_phase_at_linear() -> None:
    s = rebuild(lambda o: transformers.get_linear_schedule_with_warmup(o, 100, 1000), 1)
    assert [phase_at(s, k) for k in (0, 99, 100, 110, 500)] == [
        "warmup", "warmup", "peak", "peak", "decay"
    ]


def test_too_few_points_and_nan() -> None:
    assert reconstruct_schedule(pd.Series([1e-3])) is None
    assert reconstruct_schedule(pd.Series([np.nan, 1e-3, np.inf])) is None
    s = reconstruct_schedule(pd.Series([1e-3, 1e-3]))
    assert s is not None and (s.shape, s.warmup_steps) == ("constant", 0)


def test_lr_at() -> None:
    lr = pd.Series([1.0, 2.0, np.nan, 3.0], index=[10, 20, 30, 40])
    assert lr_at(lr, 5) is None
    assert lr_at(lr, 10) == 1.0
    assert lr_at(lr, 29) == 2.0
    assert lr_at(lr, 35) == 2.0  # the NaN at 30 is not an LR
    assert lr_at(lr, 10_000) == 3.0


def test_sample_healthy_is_linear_with_warmup_10() -> None:
    run = autopsy.load_run(SAMPLES / "healthy_hf_trainer")
    s = reconstruct_schedule(run.series("learning_rate"))  # logged every 5 steps
    assert s is not None
    assert (s.shape, s.warmup_steps, s.restarts) == ("linear", 10, ())
    assert s.peak == pytest.approx(0.01, rel=1e-4)  # never logged: between steps 10 and 15
    assert s.peak_step == 11  # HF logs at step s the LR of step s - 1


def test_sample_resumed_after_stop_has_no_restart() -> None:
    run = autopsy.load_run(SAMPLES / "resumed_after_stop")
    s = reconstruct_schedule(run.series("learning_rate"))
    assert s is not None
    assert (s.shape, s.warmup_steps, s.peak_step, s.restarts) == ("linear", 4, 5, ())
    assert s.first == 0.0
    # the resumed launch restored the scheduler: on the replayed steps 21-25 (the
    # pre-crash tail of segment 0) its LRs match the first launch's
    seg0, seg1 = (run.series("learning_rate", segment=g) for g in (0, 1))
    overlap = seg0.index.intersection(seg1.index)
    assert overlap.tolist() == list(range(21, 26))
    assert np.allclose(seg0.loc[overlap], seg1.loc[overlap], rtol=1e-6)


def test_sample_constant_runs() -> None:
    nan_run = autopsy.load_run(SAMPLES / "nan_after_grad_spike")
    s = reconstruct_schedule(nan_run.series("learning_rate"))
    assert s is not None and (s.shape, s.warmup_steps) == ("constant", 0)
    assert s.peak == pytest.approx(12.0)
    assert phase_at(s, 25) == "peak"
    over = autopsy.load_run(SAMPLES / "overfitting_small_data")
    s2 = reconstruct_schedule(over.series("learning_rate"))
    assert s2 is not None and s2.shape == "constant" and s2.warmup_steps > 0
