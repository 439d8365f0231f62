"""Step times from tags or wall time, stalls and their cost, arrival lags, accelerator peaks."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from autopsy.model import ConfigValue, Run, RunConfig, concat_scalars, empty_events, make_scalars
from autopsy.signals.hardware import ACCELERATORS, Precision, find_accelerator, peak_flops
from autopsy.signals.steptime import (
    all_wall_step_times,
    arrival_lags,
    config_periods,
    find_stalls,
    median_of_others,
    step_times,
    summarize,
    tag_step_times,
    wall_step_times,
)

T0 = 1_800_000_000.0


def _run(frames: list[pd.DataFrame], config: dict[str, object] | None = None) -> Run:
    cfg = RunConfig(ConfigValue(k, v, "cfg") for k, v in (config or {}).items())
    return Run(root=Path("x"), scalars=concat_scalars(frames), events=empty_events(), config=cfg)


def _clock(secs: list[float] | np.ndarray, *, steps: list[int] | None = None,
           rank: int | None = None, segment: int = 0, start: float = T0,
           source: str = "ev") -> pd.DataFrame:
    ends = start + np.cumsum(np.asarray(secs, dtype="float64"))
    st = steps if steps is not None else list(range(1, len(ends) + 1))
    return make_scalars(st, "loss", np.ones(len(st)), wall_time=ends, rank=rank, segment=segment,
                        source=source)


def test_wall_deltas_are_divided_by_the_step_gap_and_the_first_interval_dropped() -> None:
    # logged every 10 steps, 0.2 s per step: each interval is 2 s; the first holds warm-up
    walls = [T0, T0 + 30.0] + [T0 + 30.0 + 2.0 * k for k in range(1, 6)]
    frame = make_scalars([10, 20, 30, 40, 50, 60, 70], "loss", np.ones(7), wall_time=walls,
                         source="ev")
    times = wall_step_times(_run([frame]))
    assert times is not None and times.origin == "wall_time"
    assert list(times.seconds.index) == [30, 40, 50, 60, 70]
    assert times.seconds.to_numpy() == pytest.approx([0.2] * 5, rel=1e-4)
    assert times.dropped == (20,)
    assert times.total == pytest.approx(10.0)


def test_no_interval_spans_a_restart_and_each_segment_drops_its_warm_up() -> None:
    before = _clock([0.1] * 10)
    # the restart: an hour later, steps 6..15 again, the first interval slow (warm-up)
    after = _clock([5.0] + [0.1] * 9, steps=list(range(6, 16)), segment=1, start=T0 + 3600)
    times = wall_step_times(_run([before, after]))
    assert times is not None
    assert times.seconds.max() == pytest.approx(0.1, rel=1e-4)
    assert 7 in times.dropped and 2 in times.dropped  # each segment's first interval
    assert list(times.seconds.index) == sorted(set(times.seconds.index))  # later segment wins


def test_explicit_step_time_tags_win_and_milliseconds_are_scaled() -> None:
    clock = _clock([9.0] * 6)
    ms = make_scalars(range(1, 7), "elapsed time per iteration (ms)", [900.0] + [250.0] * 5)
    times = step_times(_run([clock, ms]))
    assert times is not None and times.origin == "step_time_ms"
    assert times.seconds.to_numpy() == pytest.approx([0.25] * 5)  # step 1 (900 ms) left out
    assert tag_step_times(_run([clock])) is None


def test_one_clock_per_rank_two_sources_are_never_mixed() -> None:
    tb = _clock([0.5] * 20, source="events")
    text = _clock([0.5] * 10, start=T0 + 7.3, source="train.log")  # another clock, offset
    times = wall_step_times(_run([tb, text]))
    assert times is not None and times.source == "events"
    assert times.seconds.to_numpy() == pytest.approx([0.5] * 18, rel=1e-4)


def test_periodic_stalls_are_found_with_their_cost_and_matched_to_save_steps() -> None:
    secs = np.full(120, 0.1)
    secs[np.arange(19, 120, 20)] += 2.0  # steps 20, 40, ..., 120 hold a 2 s save
    run = _run([_clock(secs)], {"save_steps": 20, "eval_steps": 7})
    times = step_times(run)
    assert times is not None
    stalls = find_stalls(times, periods=config_periods(run))
    assert stalls is not None
    assert stalls.steps == (20, 40, 60, 80, 100, 120)
    assert stalls.period == 20 and stalls.matched == "save_steps"
    assert stalls.extra_seconds == pytest.approx(12.0, rel=1e-4)
    assert stalls.share == pytest.approx(12.0 / times.total)


def test_stalls_in_the_next_interval_match_too_and_cheap_evals_are_no_stall() -> None:
    secs = np.full(100, 0.1)
    secs[np.arange(20, 100, 20)] += 1.0  # the step after each save (HF: log, then save)
    assert find_stalls(step_times(_run([_clock(secs)])), periods={"save_steps": 20}).matched \
        == "save_steps"
    cheap = np.full(100, 0.1) * (1 + 0.05 * np.random.default_rng(0).standard_normal(100))
    cheap[np.arange(19, 100, 20)] += 0.03  # a 30 ms eval: under min_extra
    assert find_stalls(step_times(_run([_clock(cheap)]))) is None


def test_a_slow_first_step_is_never_a_stall() -> None:
    secs = [30.0, 8.0] + [0.1] * 50
    times = step_times(_run([_clock(secs)]))
    assert times is not None and times.seconds.max() == pytest.approx(0.1, rel=1e-4)
    assert find_stalls(times, min_count=1) is None


def test_summary_is_robust_and_the_trend_sees_a_slowdown() -> None:
    rng = np.random.default_rng(1)
    secs = np.linspace(0.5, 1.0, 200) * (1 + 0.02 * rng.standard_normal(200))
    stats = summarize(step_times(_run([_clock(secs)])).seconds)
    assert stats is not None and stats.trend is not None
    assert stats.median == pytest.approx(0.75, rel=0.05)
    assert stats.trend.low > 0 and stats.trend.rel_change == pytest.approx(1.0, rel=0.15)
    flat = summarize(step_times(_run([_clock(np.full(50, 0.3))])).seconds)
    assert flat is not None and flat.spread == 0.0 and flat.trend.slope == pytest.approx(0.0)


def test_arrival_lags_name_the_rank_that_logs_last() -> None:
    frames = [_clock([0.3] * 30, rank=r, start=T0 + (0.2 if r == 2 else 0.0), source=f"r{r}")
              for r in range(4)]
    lags = arrival_lags(_run(frames))
    assert list(lags.columns) == [0, 1, 2, 3] and len(lags) == 30
    assert lags[2].to_numpy() == pytest.approx([0.2] * 30, abs=1e-4)
    assert lags[0].to_numpy() == pytest.approx([0.0] * 30, abs=1e-4)
    per_rank = all_wall_step_times(_run(frames))
    assert sorted(per_rank) == [0, 1, 2, 3]
    assert arrival_lags(_run([_clock([0.3] * 5)])).empty


@pytest.mark.parametrize("k", [2, 3, 4, 5, 8, 9])
def test_median_of_others_is_the_median_without_each_cell(k: int) -> None:
    rng = np.random.default_rng(k)
    values = np.vstack([rng.random((20, k)), rng.integers(0, 3, size=(20, k)).astype(float)])
    brute = np.column_stack([np.median(np.delete(values, j, axis=1), axis=1)
                             for j in range(k)])
    assert np.array_equal(median_of_others(values), brute)


@pytest.mark.parametrize(("name", "key"), [
    ("h100", "h100_sxm"), ("NVIDIA H100 80GB HBM3", "h100_sxm"), ("H100 PCIe", "h100_pcie"),
    ("h200", "h200"), ("NVIDIA A100-SXM4-40GB", "a100_40gb"), ("A100 80GB", "a100_80gb"),
    ("a10g", "a10g"), ("NVIDIA L4", "l4"), ("Tesla V100-SXM2-16GB", "v100"), ("Tesla T4", "t4"),
    ("AMD Instinct MI300X", "mi300x"),
])
def test_accelerator_names_are_recognised(name: str, key: str) -> None:
    acc = find_accelerator(name)
    assert acc is not None and acc.key == key


def test_unknown_accelerators_and_peaks_by_precision() -> None:
    assert find_accelerator("NVIDIA L40S") is None and find_accelerator("") is None
    assert peak_flops("h100", "bf16") == pytest.approx(989.4e12)
    assert peak_flops("a100", Precision.FP32) == pytest.approx(19.5e12)
    assert peak_flops("t4", "bf16") == pytest.approx(8.1e12)  # no bf16 hardware: fp32
    assert peak_flops("nope") is None
    assert all(a.fp16 >= a.fp32 for a in ACCELERATORS.values())


def test_throughput_becomes_step_time_when_its_unit_is_known() -> None:
    from autopsy.signals.steptime import all_throughput_step_times, throughput_unit

    assert [throughput_unit(r) for r in ("it/s", "samples/sec", "tokens_per_second", "wps",
                                         "throughput")] == ["steps", "samples", "tokens",
                                                            "tokens", None]
    its = make_scalars(range(1, 11), "it/s", [1.0] + [4.0] * 9)  # no time stamps at all
    sps = make_scalars(range(1, 11), "samples/sec", [64.0] * 10)
    bare = make_scalars(range(1, 11), "throughput", [10.0] * 10)
    got = all_throughput_step_times(_run([its]))
    assert got[None].seconds.to_numpy() == pytest.approx([0.25] * 9)
    assert all_throughput_step_times(_run([sps])) == {}  # samples per step unknown
    got = all_throughput_step_times(_run([sps]), samples_per_step=32)
    assert got[None].seconds.to_numpy() == pytest.approx([0.5] * 9)
    assert all_throughput_step_times(_run([bare]), samples_per_step=32) == {}


def test_a_stall_inside_a_coarse_logging_interval_is_found() -> None:
    # 0.5 s steps logged every 10 steps; a 2 s save every 50 steps
    per_step = np.full(300, 0.5) * (1 + 0.01 * np.random.default_rng(3).standard_normal(300))
    per_step[np.arange(49, 300, 50)] += 2.0
    ends = T0 + np.cumsum(per_step)
    steps = np.arange(10, 301, 10)
    frame = make_scalars(steps, "loss", np.ones(len(steps)), wall_time=ends[steps - 1],
                         source="ev")
    run = _run([frame], {"save_steps": 50})
    stalls = find_stalls(step_times(run), periods=config_periods(run))
    assert stalls is not None and stalls.steps == (50, 100, 150, 200, 250, 300)
    assert stalls.matched == "save_steps"
    assert stalls.extra_seconds == pytest.approx(12.0, rel=0.05)
