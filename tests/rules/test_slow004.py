"""SLOW004 slowing-down: the step time rises over the run."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from slow_runs import findings, jitter, timed_run

import autopsy
from autopsy.api import diagnose
from autopsy.model import Severity

SAMPLE = Path(__file__).resolve().parents[2] / "sample_runs"


def test_fires_on_a_step_time_that_doubles() -> None:
    secs = np.linspace(0.5, 1.0, 400) * jitter(400, 1.0, rel=0.03)
    (f,) = findings(timed_run({None: secs}), "SLOW004")
    assert f.severity is Severity.ERROR and f.cause == "slowing_down"
    assert f.evidence[0].numbers["rel_change"] > 0.8
    assert 80 < (f.step or 0) < 160  # 25% slower than the start around step 100


def test_fires_on_epoch_times_that_grow_faster_and_faster() -> None:
    # one time per epoch (the first dropped as warm-up), about 2 min growing to 25 min: a
    # rise that speeds up, whose straight line crosses zero inside the run
    secs = [130.0, 134.0, 132.0, 148.0, 146.0, 210.0, 554.0, 954.0, 1209.0, 1612.0]
    (f,) = findings(timed_run({None: secs}), "SLOW004")
    assert f.severity is Severity.ERROR and f.cause == "slowing_down"
    numbers = f.evidence[0].numbers
    assert 130 < numbers["start_s"] < 150 and numbers["end_s"] > 900
    assert "quarters" in f.evidence[0].summary


def test_epoch_times_with_no_trend_near_miss_passes() -> None:
    secs = [130.0, 180.0, 125.0, 170.0, 140.0, 175.0, 128.0, 160.0]
    assert findings(timed_run({None: secs}), "SLOW004") == []


def test_stalls_do_not_make_a_trend_near_miss_passes() -> None:
    secs = jitter(300, 0.5)
    secs[np.arange(200, 300, 10)] += 5.0  # stalls late in the run: SLOW003's, not a trend
    secs[0] = 40.0  # a slow first step
    assert findings(timed_run({None: secs}), "SLOW004") == []


def test_noise_on_a_tiny_cpu_run_passes() -> None:
    d = diagnose(autopsy.load_run(SAMPLE / "chance_level_classifier"))
    assert all(f.code != "SLOW004" for f in d.findings)  # 4 -> 14 ms: under min_lost_s


def _speedometer(tmp_path: Path, speeds: list[float], unit: str = "samples/sec") -> Path:
    """An MXNet ``Speedometer`` log (the message format of mxnet.callback.Speedometer:
    ``Epoch[e] Batch [b]\\tSpeed: X samples/sec\\tTrain-<metric>=V``), 20 batches apart."""
    lines = []
    for i, speed in enumerate(speeds):
        e, b = divmod(i, 5)
        lines.append(f"Epoch[{e}] Batch [{(b + 1) * 20}]\tSpeed: {speed:.2f} {unit}\t"
                     f"Train-CrossEntropy={2.0 * 0.98 ** i:.6f}")
    path = tmp_path / "train.log"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_a_printed_throughput_that_halves_at_the_end_is_a_slowdown(tmp_path: Path) -> None:
    speeds = [95.7, 94.5, 94.3, 90.3, 89.8, 96.1, 93.0, 98.0, 46.5, 23.5]
    d = diagnose(autopsy.load_run(_speedometer(tmp_path, speeds)))
    (f,) = [f for f in d.findings if f.code == "SLOW004"]
    assert f.severity is Severity.ERROR and f.cause == "slowing_down"
    assert f.evidence[0].numbers["points"] == 2 and f.evidence[0].numbers["slowdown"] > 3.5
    assert d.verdict.family.value == "slow"


def test_one_slow_printed_interval_at_the_end_near_miss_passes(tmp_path: Path) -> None:
    speeds = [95.7, 94.5, 94.3, 90.3, 89.8, 96.1, 93.0, 98.0, 94.0, 40.0]
    d = diagnose(autopsy.load_run(_speedometer(tmp_path, speeds)))
    assert all(f.code != "SLOW004" for f in d.findings)


def test_a_throughput_without_a_batch_size_gives_the_trend(tmp_path: Path) -> None:
    """A samples/sec with no batch size in sight: one sample per step bounds every step
    time from below, and the relative slowdown is the throughput's."""
    speeds = list(1 / np.linspace(1.1, 10.0, 30))  # seconds per sample growing steadily
    d = diagnose(autopsy.load_run(_speedometer(tmp_path, speeds)))
    (f,) = [f for f in d.findings if f.code == "SLOW004"]
    assert f.severity is Severity.ERROR and f.evidence[0].numbers["rel_change"] > 3
    assert "lower bound" in f.evidence[0].summary or "lower bound" in (f.evidence[0].source
                                                                         or "")


def test_a_long_slow_stretch_is_measured_whole() -> None:
    """The run slowed to a third of its speed for its last 50,000 of 200,000 printed
    throughputs: the stretch and the pace before it come out whole (a few linear passes;
    one median per candidate length made this quadratic)."""
    import pandas as pd

    from autopsy.rules.slow.slow004_slowing_down import _tail_drop
    from autopsy.rules.slow.thresholds import SLOW004

    secs = np.concatenate([jitter(150_000, 1.0, rel=0.05), jitter(50_000, 3.0, rel=0.05)])
    ctx = {name: t.default for name, t in SLOW004.items()}
    got = _tail_drop(pd.Series(secs, index=np.arange(1, 200_001)), ctx)  # type: ignore[arg-type]
    assert got is not None
    tail, pace = got
    assert len(tail) == 50_000 and int(tail.index[0]) == 150_001
    assert abs(pace - 1.0) < 0.01


def _megatron(tmp_path: Path, ms: list[float]) -> Path:
    """Megatron-LM training lines (the format of ``training_log``: ``iteration N/ M |
    consumed samples: ... | elapsed time per iteration (ms): X | learning rate: ...``),
    five iterations apart, as a reporter pastes a few of them."""
    lines = []
    for i, t in enumerate(ms):
        it = 10 + 5 * i
        lines.append(f" iteration {it:>8}/     600 | consumed samples: {it * 64:>12} | "
                     f"elapsed time per iteration (ms): {t:.1f} | learning rate: "
                     f"{it * 8e-7:.3E} | global batch size:    64 |")
    path = tmp_path / "train.log"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_a_few_step_times_that_rise_at_every_point_are_a_slowdown(tmp_path: Path) -> None:
    d = diagnose(autopsy.load_run(_megatron(tmp_path, [84606.2, 142474.1, 202438.6])))
    (f,) = [f for f in d.findings if f.code == "SLOW004"]
    assert f.cause == "slowing_down" and f.step is None  # rising from the first point
    assert f.evidence[0].numbers["points"] == 3 and f.evidence[0].numbers["ratio"] > 2.3
    assert d.verdict.family.value == "slow"


def test_a_few_step_times_near_misses_pass(tmp_path: Path) -> None:
    for ms in ([84606.2, 86000.0, 202438.6],     # one jump at the end: a stall, not a trend
               [84606.2, 120000.0, 110000.0, 150000.0],  # not up at every point
               [84606.2, 110000.0, 140000.0],    # up at every point, not doubled
               [202438.6, 142474.1, 84606.2],    # faster and faster (warm-up)
               [84606.2, 202438.6]):             # two points: one interval
        d = diagnose(autopsy.load_run(_megatron(tmp_path, ms)))
        assert all(f.code != "SLOW004" for f in d.findings), ms
