"""Bounded memory in the rank-log reader: the point budget, thinning, capped events."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from autopsy.api import diagnose, load_run
from autopsy.readers.ranklogs.budget import (
    DEFAULT_MAX_POINTS,
    ENV,
    MIN_POINTS,
    max_points,
    thin_columns,
    thin_mask,
)
from autopsy.readers.ranklogs.reader import read_group
from autopsy.readers.ranklogs.scan import FIRST_EVENTS, LAST_EVENTS, ScalarColumns, scan_file


def _series(n: int, *, spike: int | None = None, nan_from: int | None = None,
            dip: int | None = None) -> np.ndarray:
    """A smooth falling loss of ``n`` points with optional planted features (by index)."""
    rng = np.random.default_rng(0)
    values = 2.0 * np.exp(-np.arange(n) / (n / 3)) + 0.01 * rng.standard_normal(n) + 0.5
    if spike is not None:
        values[spike] = 50.0
    if dip is not None:
        values[dip] = -5.0
    if nan_from is not None:
        values[nan_from:] = math.nan
    return values


def _cols(values: np.ndarray, rank: int = 0, tag: int = 0) -> dict[str, np.ndarray]:
    n = len(values)
    return {"step": np.arange(1, n + 1, dtype=np.int64), "tag": np.full(n, tag, np.int32),
            "value": values, "wall_time": np.arange(n, dtype=np.float64),
            "rank": np.full(n, rank, np.int64), "segment": np.zeros(n, np.int64)}


def test_one_pass_about_halves_and_keeps_extremes_ends_and_first_nan() -> None:
    values = _series(1000, spike=333, dip=777, nan_from=900)
    cols = _cols(values)
    kept = thin_columns(cols)
    steps = set(kept["step"].tolist())
    assert 400 <= len(kept["step"]) <= 560
    assert {1, 334, 778, 901, 1000} <= steps  # ends, spike, dip, first NaN
    assert np.all(np.diff(kept["step"]) > 0)  # order kept


def test_many_passes_keep_the_features_and_spread_evenly() -> None:
    values = _series(100_000, spike=12_345, nan_from=99_000)
    kept = thin_columns(_cols(values), passes=6)
    steps = kept["step"]
    assert len(steps) < 100_000 / 2**5
    assert {1, 12_346, 99_001, 100_000} <= set(steps.tolist())
    first_half = np.count_nonzero(steps <= 50_000)
    assert 0.8 < first_half / (len(steps) - first_half) < 1.25


def test_series_are_thinned_apart() -> None:
    a = _cols(_series(400, spike=10), rank=0)
    b = _cols(_series(400, spike=200), rank=1)
    both = {k: np.concatenate((a[k], b[k])) for k in a}
    mask = thin_mask(both["rank"], both["tag"], both["segment"], both["value"])
    kept = {k: v[mask] for k, v in both.items()}
    by_rank = {r: set(kept["step"][kept["rank"] == r].tolist()) for r in (0, 1)}
    assert {1, 11, 400} <= by_rank[0] and {1, 201, 400} <= by_rank[1]


def test_a_series_too_short_to_thin_is_kept() -> None:
    cols = _cols(np.array([1.0, 2.0, 3.0]))
    assert len(thin_columns(cols, passes=3)["value"]) == 3


def test_budget_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(ENV, raising=False)
    assert max_points() == DEFAULT_MAX_POINTS
    monkeypatch.setenv(ENV, "250_000")
    assert max_points() == 250_000
    monkeypatch.setenv(ENV, "5")
    assert max_points() == MIN_POINTS
    monkeypatch.setenv(ENV, "lots")
    assert max_points() == DEFAULT_MAX_POINTS


def test_file_columns_stay_under_their_cap_as_points_stream_in() -> None:
    cols = ScalarColumns(cap=2_000)
    values = _series(50_000, spike=25_000, nan_from=49_000)
    for i, v in enumerate(values):
        cols.add_line(i + 1, [("loss", float(v)), ("lr", 1e-3)], float(i), 3, 0)
        assert len(cols) <= 2_000 + 2
    assert cols.raw == 100_000 and cols.level >= 5
    cols.settle()
    rows = cols.rows()
    loss_steps = [r[0] for r in rows if r[1] == "loss"]
    assert {1, 25_001, 49_001, 50_000} <= set(loss_steps)
    early = sum(1 for s in loss_steps if s <= 25_000)
    assert 0.5 < early / (len(loss_steps) - early) < 2.0  # no pile-up of recent points


def _write_rank_log(path: Path, rank: int, steps: int, nan_at: int | None = None) -> None:
    values = _series(steps, spike=steps // 2)
    with path.open("w", encoding="utf-8") as fh:
        for i in range(steps):
            loss = "nan" if nan_at is not None and i + 1 >= nan_at else f"{values[i]:.4f}"
            sec = 1000 + i
            fh.write(f"2026-11-22 10:{sec // 60 % 60:02d}:{sec % 60:02d},000 INFO step {i + 1} "
                     f"loss {loss} mean_loss {loss} grad_norm 0.5 lr 0.100000\n")


def test_files_share_the_budget_and_the_thinning_is_reported(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(ENV, str(MIN_POINTS))
    paths = []
    for rank in range(4):
        path = tmp_path / f"rank{rank}.log"
        _write_rank_log(path, rank, 3_000, nan_at=2_500 if rank == 2 else None)
        paths.append(path)
    part = read_group(paths, [p.name for p in paths])
    scalars = part.scalars
    assert len(scalars) <= MIN_POINTS
    counts = scalars.groupby("source", observed=True).size()
    assert counts.max() / counts.min() < 2.5  # about equal shares
    thinned = [p for p in part.problems if p.kind == "thinned"]
    assert sorted(p.source for p in thinned) == [p.name for p in paths]
    assert all(p.count and p.count > 0 for p in thinned)
    rank2 = scalars[(scalars["rank"] == 2) & (scalars["tag"] == "loss")]
    first_nan = rank2[rank2["value"].isna()]["step"].min()
    assert first_nan == 2_500
    spikes = scalars[(scalars["tag"] == "loss") & (scalars["value"] > 10)]
    assert sorted(spikes["rank"].tolist()) == [0, 1, 2, 3]


def test_below_the_budget_every_point_is_kept(tmp_path: Path) -> None:
    path = tmp_path / "rank0.log"
    _write_rank_log(path, 0, 500)
    part = read_group([path], [path.name])
    per_tag = part.scalars.groupby("tag", observed=True).size()
    assert len(per_tag) >= 3 and (per_tag == 500).all()
    assert not [p for p in part.problems if p.kind == "thinned"]


def test_a_thinned_run_gets_the_same_verdict(tmp_path: Path,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    for rank in range(2):
        _write_rank_log(tmp_path / f"rank{rank}.log", rank, 8_000, nan_at=6_000)
    full = diagnose(load_run(tmp_path)).verdict
    monkeypatch.setenv(ENV, str(MIN_POINTS))
    run = load_run(tmp_path)
    assert any(p.kind == "thinned" for p in run.problems)
    thinned = diagnose(run).verdict
    assert (thinned.family, thinned.step) == (full.family, full.step)
    assert full.family.value == "nan_inf" and full.step == 6_000


def test_repeated_events_are_capped_keeping_the_first_and_the_last(tmp_path: Path) -> None:
    log = tmp_path / "rank1.log"
    n = 100
    log.write_text("".join(
        f"node-1:4242:4300 [1] transport/net_ib.cc:1295 NCCL WARN NET/IB : Got completion "
        f"from peer 10.0.0.{i % 250}<53249> with error 12, opcode 0, len 0, vendor err 129\n"
        for i in range(n)), encoding="utf-8")
    res = scan_file(log, log.name)
    warns = [e for e in res.events if e[3] == "nccl_warn"]
    assert len(warns) == FIRST_EVENTS + LAST_EVENTS
    lines = [e[6] for e in warns]
    assert lines == sorted(lines)
    assert lines[:FIRST_EVENTS] == list(range(1, FIRST_EVENTS + 1))
    assert lines[-LAST_EVENTS:] == list(range(n - LAST_EVENTS + 1, n + 1))
    capped = [p for p in res.problems if p.kind == "events_capped"]
    assert len(capped) == 1 and capped[0].count == n - FIRST_EVENTS - LAST_EVENTS


@pytest.mark.parametrize("seed", range(6))
def test_compiled_thinning_pass_keeps_what_the_numpy_pass_keeps(seed: int,
                                                                 monkeypatch) -> None:
    """The compiled pass (``_shapematch.thin_keep``) and the numpy pass keep the same
    points, ties, NaN, +-inf, interleaved series and widely spread rank numbers included."""
    from autopsy.readers.ranklogs.compiled import ENV as COMPILED_ENV
    from autopsy.readers.ranklogs.compiled import compiled

    assert compiled() is not None, "the compiled module was not built (pip install -e .)"
    rng = np.random.default_rng(seed)
    for trial in range(60):
        n = int(rng.integers(1, 3000))
        rank = rng.integers(-1, 3, n) * (100_000 if trial % 7 == 0 else 1)
        tag = rng.integers(0, 4, n)
        segment = rng.integers(0, 2, n)
        values = rng.standard_normal(n)
        if trial % 5 == 0:
            values = np.round(values)
        values[rng.random(n) < 0.1] = math.nan
        values[rng.random(n) < 0.03] = math.inf
        values[rng.random(n) < 0.03] = -math.inf
        fast = thin_mask(rank, tag, segment, values)
        monkeypatch.setenv(COMPILED_ENV, "regex")
        slow = thin_mask(rank, tag, segment, values)
        monkeypatch.delenv(COMPILED_ENV)
        assert fast.dtype == bool and fast.shape == (n,)
        assert np.array_equal(fast, slow), (trial, np.flatnonzero(fast != slow)[:5])


def test_columns_mixing_single_points_and_numpy_chunks_keep_their_order() -> None:
    """Points added one by one and as numpy columns come back in the order they came."""
    cols = ScalarColumns(cap=1_000_000)
    cols.add(1, "loss", 1.0, 10.0, None, 0)
    cols.add_columns(np.array([2, 3]), np.array([cols.code("loss")] * 2), np.array([2.0, 3.0]),
                     np.array([20.0, 30.0]), np.array([-1, -1]), np.array([0, 0]))
    cols.add_line(4, [("loss", 4.0), ("lr", 0.1)], 40.0, 2, 1)
    cols.add_columns(np.array([5]), np.array([cols.code("lr")]), np.array([0.5]),
                     np.array([50.0]), np.array([3]), np.array([1]))
    assert cols.rows() == [(1, "loss", 1.0, 10.0, None, 0), (2, "loss", 2.0, 20.0, None, 0),
                           (3, "loss", 3.0, 30.0, None, 0), (4, "loss", 4.0, 40.0, 2, 1),
                           (4, "lr", 0.1, 40.0, 2, 1), (5, "lr", 0.5, 50.0, 3, 1)]
    assert len(cols) == 6
