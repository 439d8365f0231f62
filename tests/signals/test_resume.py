"""Resume signals: boundaries, the LR and the loss across them, repeated loss patterns."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from autopsy.model import Run, concat_scalars, empty_events, make_scalars
from autopsy.signals.resume import (
    Boundary,
    boundaries,
    loss_jump,
    lr_break,
    new_side,
    noise,
    pattern_repeat,
    sides,
    value_at,
)


def _s(points: dict[int, float]) -> pd.Series:
    return pd.Series(list(points.values()), index=pd.Index(list(points), name="step"))


def _wiggles(n: int, seed: int) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal(n)


def test_boundaries_pair_consecutive_segments() -> None:
    frames = [make_scalars([1, 2, 3, 4, 5], "loss", [1.0] * 5, segment=0),
              make_scalars([4, 5, 6], "loss", [1.0] * 3, segment=1),
              make_scalars([1, 2], "loss", [1.0] * 2, segment=2)]
    run = Run(root=Path("x"), scalars=concat_scalars(frames), events=empty_events())
    got = boundaries(run)
    assert got == [Boundary(0, 1, 4, 1, 5), Boundary(1, 2, 1, 4, 6)]
    assert got[0].replayed == 2 and got[1].replayed == 6


def test_value_at_takes_the_last_point_at_or_before() -> None:
    s = _s({1: 1.0, 5: 2.0, 9: float("nan")})
    assert value_at(s, 7) == (2.0, 5)
    assert value_at(s, 0) is None


def test_lr_break_sees_a_warmup_again() -> None:
    prev = _s({s: 1e-3 * (1 - s / 200) for s in range(1, 56)})
    new = _s({s: 1e-3 * (s - 50) / 10 for s in range(51, 70)})
    br = lr_break(prev, new, 51)
    assert br is not None and br.warmup_again
    assert br.step == 51 and br.got == pytest.approx(1e-4)
    assert br.expected == pytest.approx(1e-3 * (1 - 51 / 200))
    assert br.climb >= 10


def test_lr_break_interpolates_sparse_logging_inside_a_warmup() -> None:
    prev = _s({s: 1e-4 * s for s in range(10, 101, 10)})  # warm-up logged every 10 steps
    new = _s({s: 1e-4 * s for s in range(45, 101, 10)})  # an exact resume at step 45
    br = lr_break(prev, new, 45)
    assert br is not None and br.ratio == pytest.approx(1.0) and not br.warmup_again


def test_lr_break_none_without_lr_before() -> None:
    assert lr_break(_s({}), _s({5: 1.0}), 5) is None


def test_noise_of_a_trend_is_its_wiggle() -> None:
    y = np.linspace(2, 1, 200) + 0.01 * _wiggles(200, 0)
    assert 0.007 < noise(y) < 0.013


def test_loss_jump_measures_ratio_score_and_decay() -> None:
    w = _wiggles(200, 1)
    base = {s: 1.0 + 0.01 * w[s] for s in range(1, 121)}
    prev = _s({s: base[s] for s in range(1, 56)})
    new = _s({s: base[s] + (2.0 * math.exp(-(s - 51) / 3) if s > 51 else 0.0)
              for s in range(51, 121)})
    lj = loss_jump(prev, new, 51)
    assert lj is not None and lj.same_steps
    assert lj.ratio > 1.5 and lj.score > 50 and lj.decayed


def test_loss_jump_ignores_a_single_blip() -> None:
    w = _wiggles(200, 2)
    prev = _s({s: 1.0 + 0.01 * w[s] for s in range(1, 56)})
    new_points = {s: 1.0 + 0.01 * w[s] for s in range(51, 121)}
    new_points[52] = 3.0
    lj = loss_jump(prev, _s(new_points), 51)
    assert lj is not None and lj.ratio < 1.1


def test_loss_jump_none_with_too_few_points() -> None:
    assert loss_jump(_s({1: 1.0, 2: 1.0}), _s({3: 1.0}), 3) is None


def test_pattern_repeat_sees_the_same_batches_again() -> None:
    w = _wiggles(100, 3)
    prev = _s({s: 2.0 - s / 100 + 0.05 * w[s - 1] for s in range(1, 61)})
    # resumed at 41 but fed the epoch from its start: the wiggles of steps 1, 2, ... again
    new = _s({s: 1.4 - s / 200 + 0.04 * w[s - 41] for s in range(41, 101)})
    pr = pattern_repeat(prev, new, 1, 41)
    assert pr is not None and pr.from_start > 0.8
    assert pr.same_step < 0.5


def test_pattern_repeat_low_for_new_batches() -> None:
    w = _wiggles(200, 4)
    prev = _s({s: 2.0 - s / 100 + 0.05 * w[s] for s in range(1, 61)})
    new = _s({s: 2.0 - s / 100 + 0.05 * w[s] for s in range(41, 101)})  # an exact resume
    pr = pattern_repeat(prev, new, 1, 41)
    assert pr is not None and abs(pr.from_start) < 0.5 and pr.same_step > 0.9


def _file(steps: range, t0: float, source: str, tag: str = "loss") -> pd.DataFrame:
    return make_scalars(list(steps), tag, [1.0] * len(steps),
                        wall_time=[t0 + s for s in steps], source=source)


def test_event_files_that_continue_each_other_are_a_boundary() -> None:
    frames = [_file(range(1, 31), 0.0, "runs/a/events.out.tfevents.1"),
              _file(range(31, 61), 500.0, "runs/b/events.out.tfevents.2")]
    run = Run(root=Path("x"), scalars=concat_scalars(frames), events=empty_events())
    (b,) = boundaries(run)
    assert (b.previous, b.segment, b.resume_step, b.previous_last) == (0, 0, 31, 30)
    assert b.previous_source == "runs/a/events.out.tfevents.1"
    prev, new = sides(run, b, "loss")
    assert list(prev.index) == list(range(1, 31)) and list(new.index) == list(range(31, 61))


def test_new_side_of_a_boundary_inside_a_segment() -> None:
    frames = [_file(range(1, 31), 0.0, "runs/a/events.out.tfevents.1"),
              _file(range(31, 61), 500.0, "runs/b/events.out.tfevents.2")]
    run = Run(root=Path("x"), scalars=concat_scalars(frames), events=empty_events())
    (b,) = boundaries(run)
    assert new_side(run, b) == (531.0, 60)


def test_files_written_at_the_same_time_are_no_boundary() -> None:
    frames = [_file(range(1, 61), 0.0, "runs/train/events.out.tfevents.1"),
              _file(range(10, 61, 10), 5.0, "runs/eval/events.out.tfevents.1", "eval_loss")]
    run = Run(root=Path("x"), scalars=concat_scalars(frames), events=empty_events())
    assert boundaries(run) == []


def test_segments_only_trainer_state_copies_make_are_no_boundary() -> None:
    frames = [make_scalars(range(1, 41), "loss", [1.0] * 40, segment=0,
                           source="trainer_state.json"),
              make_scalars(range(21, 31), "loss", [2.0] * 10, segment=1,
                           source="checkpoint-30/trainer_state.json")]
    run = Run(root=Path("x"), scalars=concat_scalars(frames), events=empty_events())
    assert boundaries(run) == []
