"""SLOW001: the model waits for its data: data loading is a large share of every step."""

from __future__ import annotations

import math
from dataclasses import dataclass

import pandas as pd

from autopsy.model.finding import Evidence, Family, Finding, Severity
from autopsy.model.run import Run
from autopsy.rules.context import RuleContext
from autopsy.rules.registry import rule
from autopsy.rules.slow._slow import (
    median,
    seconds,
    tag_times,
    wall_times,
)
from autopsy.rules.slow.thresholds import SLOW001
from autopsy.signals.steptime import rank_series


@dataclass(frozen=True)
class RankShare:
    """One rank's data share: data time over the whole step time."""

    rank: int | None
    data: float
    compute: float
    total: float
    share: float
    how: str
    per_step: pd.Series
    is_share: bool


def _merged(run: Run, tag: str, skip: int) -> dict[int | None, pd.Series]:
    out = rank_series(run, f"{tag}_ms", skip_first=skip, scale=1e-3)
    out.update(rank_series(run, tag, skip_first=skip))
    return out


def _time_share(data: pd.Series, steps: pd.Series | None, compute: pd.Series | None) -> float:
    """The data wait's share of the time of the steps logged with both: a loader that
    stalls for seconds every few steps (its workers cannot keep up) costs its time though
    the median step waits for nothing. 0 when no step has both."""
    other = steps if steps is not None else compute
    if other is None:
        return 0.0
    both = pd.concat([data, other], axis=1, join="inner").dropna()
    if len(both) > 2:
        # the first logged step may be a launch's first (its first prefetch) in a log whose
        # steps do not start at 0 (1-based epochs: "Epoch: [1] [0/1412]" is step 1412),
        # which the warm-up skip cannot recognise: a sum over steps leaves it out
        both = both.iloc[1:]
    if both.empty:
        return 0.0
    waited = float(both.iloc[:, 0].sum())
    total = float(both.iloc[:, 1].sum()) + (waited if steps is None else 0.0)
    return waited / total if total > 0 and waited <= total else 0.0


def rank_shares(run: Run, ctx: RuleContext) -> list[RankShare]:
    """Each rank's data share, from ``data_time`` or from ``compute_time`` and the step time."""
    skip = int(ctx["skip_first"])
    data = _merged(run, "data_time", skip)
    compute = _merged(run, "compute_time", skip)
    walls = wall_times(run, ctx)
    tagged = tag_times(run, ctx)
    # a step time logged once or twice (an averaged line per epoch) is no series for the
    # step-time statistics, but it is the whole step its data time is a share of
    logged = _merged(run, "step_time", skip)
    out = []
    for r in sorted(set(data) | set(compute), key=lambda x: -1 if x is None else x):
        d = median(data[r]) if r in data else math.nan
        c = median(compute[r]) if r in compute else math.nan
        explicit = tagged.get(r)
        wall = walls.get(r) or (walls.get(min(walls, key=lambda x: x or 0)) if r is None
                                and walls else None)
        total, how, step_series = math.nan, "", None
        if explicit is not None:
            total, step_series = median(explicit.seconds), explicit.seconds
            how = f"the {explicit.origin} tag"
            if math.isfinite(d) and d > 1.05 * total:  # that step time leaves the data wait out
                total, how = total + d, f"data_time + the {explicit.origin} tag"
                step_series = None
        elif wall is not None and wall.reliable:
            total, step_series, how = median(wall.seconds), wall.seconds, "wall time per step"
        elif math.isfinite(d) and math.isfinite(c):
            total, how = d + c, "data_time + compute_time"
        elif r in logged and math.isfinite(d) and median(logged[r]) >= d:
            total, how = median(logged[r]), "the step_time tag"
        if not math.isfinite(total) or total <= 0:
            continue
        if math.isfinite(d):
            share = max(d / total, _time_share(data[r], step_series,
                                               compute.get(r) if step_series is None else None))
            per_step = (data[r] / step_series).dropna() if step_series is not None else data[r]
        elif math.isfinite(c):
            share = max(0.0, 1.0 - c / total)
            per_step = (1 - compute[r] / step_series).dropna() if step_series is not None \
                else compute[r]
            d = total - c
        else:
            continue
        out.append(RankShare(r, d, c, total, share, how, per_step, step_series is not None))
    return out


def _onset(s: RankShare, threshold: float, run: Run) -> int | None:
    """The first step from which the share stays high; None when it was high from the
    first logged steps on (the run was starved from its start: no step began it)."""
    per = s.per_step.sort_index()
    if per.empty or not s.is_share:
        return None
    rolled = per.rolling(5, min_periods=1).median()
    high = rolled[rolled >= threshold]
    if high.empty:
        return None
    at = int(high.index[0])
    early = per.index[min(len(per) - 1, 4)]
    return None if at <= early else at


@rule(
    code="SLOW001",
    name="data-starvation",
    family=Family.SLOW,
    causes=("data_starvation",),
    requires=("data_time|data_time_ms|compute_time|compute_time_ms",),
    thresholds=SLOW001,
)
def data_starvation(run: Run, ctx: RuleContext) -> Finding | None:
    """The model waits for its data: loading takes a large share of each step.

    What happened:
        The time a step spends waiting for its batch (``data_time``, as mmengine,
        timm and many loops log it; Megatron's ``batch-generator`` timer), or the
        step time minus the compute time (``compute_time``, forward-backward timers),
        is at least ``share`` of the whole step on most ranks (``warn_share``: a
        warning). The accelerator idles that long every step. The first
        ``skip_first`` steps of each segment (warm-up, the first prefetch) are left
        out. When only a minority of ranks (under ``min_rank_share``) wait for data,
        the job is not starved but has a straggler (SLOW002).

    Why it happens:
        The input pipeline cannot keep up: ``num_workers=0`` (loading in the training
        process), too few workers for the decode or augmentation cost, a slow disk or
        network mount, per-item Python work (tokenising on the fly, opening one file
        per item), no pinned memory, or a collate function doing heavy work.

    How to fix:
        Load in parallel (``DataLoader(num_workers=N, pin_memory=True,
        persistent_workers=True, prefetch_factor=4)``, HF ``dataloader_num_workers``);
        pre-process once (tokenise, decode, resize) and store a ready-to-read format
        (Arrow, WebDataset shards, memory-mapped arrays); cache the data on local
        disk; move augmentation to the GPU; profile ``__getitem__``.

    Evidence shown:
        Per rank: the median data time, compute time and step time, the data share,
        and how the step time was measured; the loader settings the config gives.
        The step is where the share became high when that was after the first few
        logged steps; a run starved from its start has none (no step began it).
    """
    shares = rank_shares(run, ctx)
    if not shares:
        return None
    starved = [s for s in shares if s.share >= ctx["warn_share"]]
    if not starved:
        return None
    ranked = [s for s in shares if s.rank is not None]
    if len(ranked) > 1 and len(starved) < ctx["min_rank_share"] * len(ranked):
        return None  # a minority: a straggler (SLOW002), not a starved job
    starved.sort(key=lambda s: -1 if s.rank is None else s.rank)
    share = float(pd.Series([s.share for s in starved]).median())
    severity = Severity.ERROR if share >= ctx["share"] else Severity.WARNING
    worst = max(starved, key=lambda s: s.share)
    step = min((_onset(s, float(ctx["warn_share"]), run) or 0) for s in starved) or None
    evidence = [Evidence(
        summary=(f"rank {s.rank}: " if s.rank is not None else "")
        + f"data {seconds(s.data)} of a {seconds(s.total)} step ({s.share:.0%})"
        + (f", compute {seconds(s.compute)}" if math.isfinite(s.compute) else "")
        + f"; step time from {s.how}",
        tag="data_time", numbers={"data_s": round(s.data, 6), "step_s": round(s.total, 6),
                                  "share": round(s.share, 4)},
    ) for s in starved[:8]]
    workers = run.config.get_entry("dataloader_num_workers")
    advice = ["load batches in parallel: DataLoader(num_workers=N, pin_memory=True, "
              "persistent_workers=True, prefetch_factor=4) (HF: dataloader_num_workers=N)",
              "pre-process once (tokenise/decode/resize) into a ready-to-read format "
              "(Arrow, WebDataset shards, memory-mapped arrays) on local disk",
              "profile Dataset.__getitem__ and the collate function; move augmentation "
              "to the GPU"]
    if workers is not None and workers.value == 0:
        evidence.append(Evidence(summary="dataloader_num_workers=0: batches are loaded in "
                                 "the training process",
                                 source=workers.source, key="dataloader_num_workers"))
        advice.insert(0, "dataloader_num_workers is 0: start with 4-8 workers per GPU")
    who = " on every rank" if len(starved) > 1 and len(starved) == len(ranked) else (
        f" on ranks {[s.rank for s in starved]}" if len(starved) > 1 else (
            f" on rank {worst.rank}" if worst.rank is not None else ""))
    return ctx.finding(
        message=f"Data loading takes {share:.0%} of the step time{who} "
                f"(data {seconds(worst.data)} of {seconds(worst.total)}): the model waits "
                f"for its data" + (f" from step {step}" if step else "") + ".",
        severity=severity, confidence=0.85 if severity is Severity.ERROR else 0.6,
        cause="data_starvation", step=step,
        ranks=() if len(starved) == len(shares) else [s.rank for s in starved
                                                       if s.rank is not None],
        evidence=evidence, advice=advice,
    )
