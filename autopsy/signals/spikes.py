"""Robust spike score: each point against the median/MAD of the window before it."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

MAD_SCALE = 1.4826  # MAD × 1.4826 estimates the standard deviation of normal data
_CHUNK = 65536  # rows per vectorised block (bounds memory to ~CHUNK × window floats)


@dataclass(frozen=True)
class Spike:
    """One upward spike.

    Attributes:
        step: the step of the point.
        value: its value.
        baseline: median of the finite points in the trailing window before it.
        ratio: ``value / baseline`` (inf when the baseline is 0 and the value positive).
        score: robust z-score, ``(value - baseline) / (1.4826 * max(MAD, floor))``.
    """

    step: int
    value: float
    baseline: float
    ratio: float
    score: float


def _window_stats(fin: np.ndarray, window: int, min_periods: int) -> tuple[np.ndarray, ...]:
    """Median and MAD of ``fin[max(0, k - window):k]`` for every ``k`` in ``0..len(fin)``.

    Rows with fewer than ``min_periods`` points are NaN.
    """
    nf = fin.size
    med = np.full(nf + 1, np.nan)
    mad = np.full(nf + 1, np.nan)
    # Short windows (k < window): few rows, NaN-padded.
    head = min(window, nf + 1)
    for k in range(max(min_periods, 1), head):
        w = fin[:k]
        med[k] = np.median(w)
        mad[k] = np.median(np.abs(w - med[k]))
    # Full windows (k >= window): a strided view, in blocks.
    if nf >= window:
        view = np.lib.stride_tricks.sliding_window_view(fin, window)  # row r = fin[r:r+window]
        for lo in range(0, view.shape[0], _CHUNK):
            block = view[lo : lo + _CHUNK]
            m = _row_medians(block)
            med[lo + window : lo + window + block.shape[0]] = m
            mad[lo + window : lo + window + block.shape[0]] = _row_medians(
                np.abs(block - m[:, None])
            )
    return med, mad


def _row_medians(block: np.ndarray) -> np.ndarray:
    """``np.median(block, axis=1)`` for finite rows, by sorting each row (several times
    faster than the partition ``np.median`` uses, for the short rows of a window)."""
    rows = np.sort(block, axis=1)
    w = rows.shape[1]
    if w % 2:
        return rows[:, w // 2].copy()
    return (rows[:, w // 2 - 1] + rows[:, w // 2]) / 2


def spike_scores(s: pd.Series, *, window: int = 20, min_periods: int = 5) -> pd.DataFrame:
    """Score every point against the finite points just before it.

    For each point, the window is the last ``window`` *finite* points strictly before it
    (the point itself excluded; NaN/Inf never enter a window). With ``baseline`` the
    window's median and ``mad`` its median absolute deviation from that median::

        score = (value - baseline) / (1.4826 * max(mad, 1e-12 + 1e-3 * |baseline|))
        ratio = value / baseline   (inf if baseline == 0 < value; NaN if baseline == 0 >= value)

    The floor on the MAD keeps a perfectly flat window's score large but finite. Rows
    whose window holds fewer than ``min_periods`` points have NaN baseline, mad, score and
    ratio. Non-finite points keep the baseline and mad of their window but get NaN score
    and ratio (use :mod:`autopsy.signals.nonfinite` for those).

    Returns a frame indexed by step (sorted), columns ``value, baseline, mad, score, ratio``.
    """
    if window < 1 or min_periods < 1:
        raise ValueError("window and min_periods must be >= 1")
    s = s.sort_index(kind="stable")
    values = s.to_numpy(dtype="float64", na_value=np.nan)
    finite = np.isfinite(values)
    fin = values[finite]
    med, mad = _window_stats(fin, window, min(min_periods, window))
    k = np.cumsum(finite) - finite  # finite points strictly before each point
    baseline, spread = med[k], mad[k]
    floor = 1e-12 + 1e-3 * np.abs(baseline)
    with np.errstate(divide="ignore", invalid="ignore"):
        score = (values - baseline) / (MAD_SCALE * np.maximum(spread, floor))
        ratio = values / baseline
    ratio = np.where((baseline == 0) & (values > 0), np.inf, ratio)
    ratio = np.where((baseline == 0) & ~(values > 0), np.nan, ratio)
    score[~finite] = np.nan
    ratio[~finite] = np.nan
    return pd.DataFrame(
        {"value": values, "baseline": baseline, "mad": spread, "score": score, "ratio": ratio},
        index=pd.Index(s.index, name="step"),
    )


def find_spikes(
    s: pd.Series,
    *,
    window: int = 20,
    min_periods: int = 5,
    min_score: float = 6.0,
    min_ratio: float = 3.0,
) -> list[Spike]:
    """Upward spikes: points with ``score >= min_score`` AND ``ratio >= min_ratio``, by step.

    Scores and ratios are those of :func:`spike_scores`.
    """
    df = spike_scores(s, window=window, min_periods=min_periods)
    hit = df[(df["score"] >= min_score) & (df["ratio"] >= min_ratio)]
    return [
        Spike(
            step=int(step),
            value=float(row.value),
            baseline=float(row.baseline),
            ratio=float(row.ratio),
            score=float(row.score),
        )
        for step, row in zip(hit.index, hit.itertuples(index=False), strict=True)
    ]
