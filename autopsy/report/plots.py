"""The report's plots: pure functions from (run, findings) to a matplotlib figure.

Each ``*_plot`` function returns a :class:`matplotlib.figure.Figure`, or ``None`` when
the run lacks the data for it. Nothing here judges the run: what is marked comes from
the findings (their step, their evidence's tag, step window and numbers) and from what
the run was told (``warmup_steps`` in its config) or how it was read (its segments).

Figures are made without pyplot (no global state, no GUI backend: the Agg canvas
only), drawn from at most :data:`MAX_DRAWN` points per line (min/max per bucket, so a
spike survives the decimation), and cleared once rendered by :func:`to_png`.
matplotlib is imported only when a plot is made, never by the text or JSON reports.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from autopsy.model.finding import Family, Finding
from autopsy.model.run import Run

if TYPE_CHECKING:  # pragma: no cover
    import numpy as np
    import pandas as pd
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

#: Most points drawn per line; longer series are reduced to min/max per bucket.
MAX_DRAWN = 2000
#: Most ranks drawn as separate lines (rank 0..N-1); the report's tables have them all.
MAX_RANK_LINES = 16
#: Most ranks in the per-rank timeline (the table lists them all).
MAX_TIMELINE_RANKS = 64
#: Size of one plot, inches, and its resolution.
FIGSIZE = (9.0, 3.2)
DPI = 100

#: An evidence window wider than this share of the plotted steps is not shaded (it is the run).
SHADE_MAX_SHARE = 0.5
#: Evidence numbers that name a step worth marking with a point.
STEP_NUMBERS = ("step", "peak_step", "first_bad_step", "collapse_step", "spike_step")

# colours (colour-blind-safe Okabe-Ito palette)
BLUE, ORANGE, GREEN, RED, PURPLE, GREY = (
    "#0072B2", "#E69F00", "#009E73", "#D55E00", "#CC79A7", "#777777")

#: How each rank ending is coloured in the per-rank timeline.
ENDING_COLOURS: dict[str, str] = {
    "oom": RED, "killed": RED, "raised": RED, "timed_out": ORANGE, "silent": PURPLE,
    "terminated": GREY, "exited": GREY, "ok": GREEN,
}


@dataclass(frozen=True)
class RenderedPlot:
    """One plot rendered to PNG: a file-safe ``name``, a short ``title``, the bytes, and a
    ``caption`` that says what is marked."""

    name: str
    title: str
    png: bytes
    width: int
    height: int
    caption: str = ""


# ---------------------------------------------------------------------------- helpers


def decimate(x: np.ndarray, y: np.ndarray, max_points: int = MAX_DRAWN
             ) -> tuple[np.ndarray, np.ndarray]:
    """Reduce a line to at most ``max_points`` points for drawing, keeping its extremes.

    The points are cut into ``max_points // 2`` buckets of consecutive points and each
    bucket keeps its minimum and maximum (in step order), so a one-point spike stays
    visible. Non-finite values are dropped (they are marked separately).
    """
    import numpy as np

    keep = np.isfinite(y)
    x, y = x[keep], y[keep]
    n = len(x)
    if n <= max_points:
        return x, y
    size = -(-n // max(1, max_points // 2))  # points per bucket
    rows = -(-n // size)
    pad = rows * size - n
    lo = np.concatenate([y, np.full(pad, np.inf)]).reshape(rows, size).argmin(axis=1)
    hi = np.concatenate([y, np.full(pad, -np.inf)]).reshape(rows, size).argmax(axis=1)
    base = np.arange(rows) * size
    picked = np.unique(np.concatenate([base + lo, base + hi]))
    return x[picked], y[picked]


def _xy(series: pd.Series) -> tuple[np.ndarray, np.ndarray]:
    import numpy as np

    return (np.asarray(series.index, dtype=np.float64),
            np.asarray(series.to_numpy(), dtype=np.float64))


def _new_figure(height: float = FIGSIZE[1]) -> tuple[Figure, Axes]:
    from matplotlib.figure import Figure

    fig = Figure(figsize=(FIGSIZE[0], height), dpi=DPI, layout="constrained")
    ax = fig.add_subplot()
    ax.grid(True, alpha=0.3, linewidth=0.6)
    ax.set_xlabel("step")
    for side in ("top", "right"):
        ax.spines[side].set_visible(False)
    return fig, ax


def _line(ax: Axes, series: pd.Series, *, label: str, colour: Any, log: bool = False,
          marker: str | None = None, width: float = 1.4, style: str = "-") -> int:
    """Draw a series (decimated); return how many finite points it had."""
    import numpy as np

    x, y = _xy(series)
    if log:
        y = np.where(y > 0, y, np.nan)
    xd, yd = decimate(x, y)
    if len(xd):
        ax.plot(xd, yd, color=colour, label=label, linewidth=width, linestyle=style,
                marker=marker if len(xd) <= 60 else None, markersize=3)
    return int(np.isfinite(y).sum())


def _mark_non_finite(ax: Axes, series: pd.Series, label: str) -> None:
    """Red ticks along the top of the axes at every step whose value is NaN or Inf."""
    import numpy as np

    x, y = _xy(series)
    bad = x[~np.isfinite(y)]
    if not len(bad):
        return
    if len(bad) > MAX_DRAWN:
        bad = bad[np.linspace(0, len(bad) - 1, MAX_DRAWN).astype(np.int64)]
    ax.plot(bad, np.full(len(bad), 0.97), linestyle="none", marker="v", color=RED,
            markersize=5, transform=ax.get_xaxis_transform(), clip_on=False,
            label=f"{label} NaN/Inf ({len(x[~np.isfinite(y)]):,})")


def segment_starts(run: Run) -> list[tuple[int, int]]:
    """``(segment, first_step)`` of every segment after the first: the run's restarts."""
    return [(s["segment"], s["first_step"]) for s in run.segments()[1:]]


def _shade_segments(ax: Axes, run: Run) -> None:
    """Shade every other segment and draw a dashed line where each restart begins."""
    segs = run.segments()
    if len(segs) < 2:
        return
    for i, seg in enumerate(segs):
        if i % 2 == 1:
            ax.axvspan(seg["first_step"], seg["last_step"], color=GREY, alpha=0.08, lw=0)
        if i > 0:
            ax.axvline(seg["first_step"], color=GREY, linestyle="--", linewidth=1)
            ax.annotate(f"restart {seg['segment']}", (seg["first_step"], 1.0),
                        xycoords=("data", "axes fraction"), xytext=(3, -10),
                        textcoords="offset points", fontsize=8, color=GREY)


def _failures(findings: Iterable[Finding]) -> list[Finding]:
    return [f for f in findings if f.family not in (Family.HEALTHY, Family.UNKNOWN)]


def _culprits(findings: Iterable[Finding]) -> set[int]:
    """The ranks the failure findings name."""
    return {r for f in _failures(findings) for r in f.ranks}


def marks_for(findings: Iterable[Finding], tags: Sequence[str]
              ) -> list[tuple[Finding, int | None, tuple[int, int] | None, list[int]]]:
    """What the findings say about these tags: ``(finding, step, window, points)``.

    For each failure finding with evidence on one of ``tags``: its step (when the
    evidence's window holds it), the evidence windows, and the steps its numbers name
    (:data:`STEP_NUMBERS`), e.g. a grad-norm spike's step and peak.
    """
    out = []
    for f in _failures(findings):
        for ev in f.evidence:
            if ev.tag not in tags:
                continue
            points = []
            for key in STEP_NUMBERS:
                value = ev.numbers.get(key)
                if isinstance(value, (int, float)) and not isinstance(value, bool) \
                        and math.isfinite(value):
                    points.append(int(value))
            out.append((f, f.step, ev.steps, points))
    return out


def _mark_findings(ax: Axes, findings: Sequence[Finding], tags: Sequence[str],
                   series: pd.Series | None = None, *, first_bad: bool = False) -> None:
    """Shade the evidence windows on ``tags``, dot the steps they name, line the first bad step.

    With ``first_bad``, a red vertical line marks each finding's step (its first bad step).
    """
    import numpy as np

    lined: set[int] = set()
    dotted: set[int] = set()
    lo, hi = ax.dataLim.intervalx
    span = float(hi - lo) if np.isfinite(hi - lo) and hi > lo else math.inf
    for f, step, window, points in marks_for(findings, tags):
        # a window is shaded only for a finding about a moment (a step), and only when it
        # singles out a part of the run, not the whole of it
        if (step is not None and window is not None and window[1] > window[0]
                and window[1] - window[0] <= SHADE_MAX_SHARE * span):
            ax.axvspan(window[0], window[1], color=RED, alpha=0.07, lw=0)
        if first_bad and step is not None and step not in lined:
            lined.add(step)
            ax.axvline(step, color=RED, linewidth=1.2)
            ax.annotate(f"{f.code}: step {step}", (step, 1.0),
                        xycoords=("data", "axes fraction"), xytext=(3, -22),
                        textcoords="offset points", fontsize=8, color=RED)
        if series is None:
            continue
        for p in points:
            if p in dotted or p not in series.index:
                continue
            value = float(series.loc[p])
            if not np.isfinite(value):
                continue
            dotted.add(p)
            ax.plot([p], [value], marker="o", markersize=8, markerfacecolor="none",
                    markeredgecolor=RED, markeredgewidth=1.5, linestyle="none")
            ax.annotate(f"{value:.3g} @ {p}", (p, value), xytext=(-8, -4), ha="right",
                        textcoords="offset points", fontsize=8, color=RED)


def _finish(fig: Figure, ax: Axes, title: str) -> Figure:
    ax.set_title(title, loc="left", fontsize=11)
    if ax.get_legend_handles_labels()[0]:
        ax.legend(fontsize=8, loc="best", framealpha=0.8)
    return fig


# ---------------------------------------------------------------------------- the plots


def loss_plot(run: Run, findings: Sequence[Finding]) -> Figure | None:
    """Train and eval loss; the first bad step marked, NaN/Inf points ticked, segments shaded.

    With restarts, each segment is its own line, so the pre-restart tail stays visible.
    """
    tags = [t for t in ("loss", "eval_loss") if run.has(t)]
    if not tags:
        return None
    fig, ax = _new_figure()
    segs = run.segments()
    drawn = 0
    for tag, colour in (("loss", BLUE), ("eval_loss", ORANGE)):
        if tag not in tags:
            continue
        if len(segs) > 1:
            for i, seg in enumerate(segs):
                part = run.series(tag, segment=seg["segment"])
                if part.empty:
                    continue
                label = f"{tag} (segment {seg['segment']})"
                drawn += _line(ax, part, label=label, colour=colour if i == len(segs) - 1
                               else GREY, marker="o" if tag == "eval_loss" else None)
        else:
            drawn += _line(ax, run.series(tag), label=tag, colour=colour,
                           marker="o" if tag == "eval_loss" else None)
        _mark_non_finite(ax, run.series(tag), tag)
    _shade_segments(ax, run)
    _mark_findings(ax, findings, tags, run.series("loss") if "loss" in tags else None,
                   first_bad=True)
    ax.set_ylabel("loss")
    _robust_ylim(ax, run.series("loss") if "loss" in tags else run.series("eval_loss"))
    return _finish(fig, ax, "Loss" + (" (train and eval)" if len(tags) == 2 else ""))


def _robust_ylim(ax: Axes, series: pd.Series) -> None:
    """Keep a blow-up (1e8 after a loss of 3) from flattening the rest of a linear plot."""
    import numpy as np

    y = series.to_numpy(dtype=np.float64)
    y = y[np.isfinite(y)]
    if len(y) < 10:
        return
    lo, hi = np.percentile(y, [1, 95])
    top = float(y.max())
    if hi > lo and top > hi + 20 * (hi - lo):
        if float(y.min()) > 0:
            ax.set_yscale("log")
        else:
            ax.set_yscale("symlog", linthresh=max(abs(hi), 1e-12))


def grad_norm_plot(run: Run, findings: Sequence[Finding]) -> Figure | None:
    """The grad norm on a log scale, with the spikes the findings name circled."""
    if not run.has("grad_norm"):
        return None
    series = run.series("grad_norm")
    fig, ax = _new_figure()
    positive = series[(series > 0) & series.map(math.isfinite)]
    wide = len(positive) > 1 and float(positive.max()) > 20 * float(positive.min())
    if wide:
        ax.set_yscale("log")
    if _line(ax, series, label="grad_norm", colour=BLUE, log=wide) == 0:
        ax.text(0.5, 0.5, "no positive finite grad-norm value", transform=ax.transAxes,
                ha="center", color=GREY)
    _mark_non_finite(ax, series, "grad_norm")
    clip = run.config.get("max_grad_norm")
    if isinstance(clip, (int, float)) and not isinstance(clip, bool) and clip > 0:
        ax.axhline(float(clip), color=GREEN, linestyle=":", linewidth=1.2,
                   label=f"max_grad_norm {clip:g}")
    _shade_segments(ax, run)
    _mark_findings(ax, findings, ["grad_norm"], series, first_bad=False)
    ax.set_ylabel("grad norm (log)" if wide else "grad norm")
    return _finish(fig, ax, "Gradient norm")


def _warmup_steps(run: Run, findings: Sequence[Finding]) -> int | None:
    """The warm-up length the run was configured with, else one a finding's evidence gives."""
    value = run.config.get("warmup_steps")
    if isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0:
        return int(value)
    for f in findings:
        for ev in f.evidence:
            got = ev.numbers.get("warmup_steps")
            if ev.tag == "learning_rate" and isinstance(got, (int, float)) and got > 0:
                return int(got)
    return None


def lr_plot(run: Run, findings: Sequence[Finding]) -> Figure | None:
    """The learning rate as logged, with the configured warm-up shaded and restarts lined."""
    if not run.has("learning_rate"):
        return None
    series = run.series("learning_rate")
    fig, ax = _new_figure()
    _line(ax, series, label="learning_rate", colour=BLUE)
    warmup = _warmup_steps(run, findings)
    if warmup:
        first = int(series.index.min()) if len(series) else 0
        ax.axvspan(first, warmup, color=ORANGE, alpha=0.15, lw=0,
                   label=f"warm-up ({warmup} steps)")
    _shade_segments(ax, run)
    _mark_findings(ax, findings, ["learning_rate"], series, first_bad=True)
    ax.set_ylabel("learning rate")
    ax.ticklabel_format(axis="y", style="sci", scilimits=(-3, 3))
    return _finish(fig, ax, "Learning-rate schedule")


def loss_scale_plot(run: Run, findings: Sequence[Finding]) -> Figure | None:
    """fp16: the loss scale (log) and the skipped steps, or overflow-skip events, under it."""
    has_scale = run.has("loss_scale")
    has_skips = run.has("skipped_steps")
    skip_events = _event_steps(run, "overflow_skip")
    if not (has_scale or has_skips or len(skip_events)):
        return None
    fig, ax = _new_figure()
    if has_scale:
        series = run.series("loss_scale")
        ax.set_yscale("log")
        _line(ax, series, label="loss_scale", colour=BLUE, log=True)
        _mark_non_finite(ax, series, "loss_scale")
        _mark_findings(ax, findings, ["loss_scale"], series, first_bad=True)
        ax.set_ylabel("loss scale (log)")
    if has_skips:
        skips = run.series("skipped_steps")
        other = ax.twinx() if has_scale else ax
        _line(other, skips, label="skipped_steps", colour=ORANGE, width=1.0)
        other.set_ylabel("skipped steps")
        if other is not ax:
            other.spines["top"].set_visible(False)
            h1, l1 = ax.get_legend_handles_labels()
            h2, l2 = other.get_legend_handles_labels()
            other.legend(h1 + h2, l1 + l2, fontsize=8, loc="best", framealpha=0.8)
    if len(skip_events):
        ax.plot(skip_events, [0.03] * len(skip_events), linestyle="none", marker="|",
                color=ORANGE, markersize=10, transform=ax.get_xaxis_transform(),
                label=f"overflow-skip events ({len(skip_events):,})")
    _shade_segments(ax, run)
    title = "fp16 loss scale and skipped steps"
    if has_skips and has_scale:
        ax.set_title(title, loc="left", fontsize=11)
        return fig
    return _finish(fig, ax, title)


def _event_steps(run: Run, kind: str) -> list[int]:
    events = run.events
    if events.empty:
        return []
    steps = events.loc[events["kind"] == kind, "step"].dropna()
    return sorted({int(s) for s in steps})


#: Timing tags, in the order they are drawn: seconds per step, then rates.
TIME_TAGS = ("step_time", "data_time", "compute_time")
RATE_TAGS = ("throughput", "train_steps_per_second", "tokens_per_second", "samples_per_second")


def _ranks_of(run: Run, tag: str) -> list[int]:
    df = run.scalars
    ranks = df.loc[df["tag"] == tag, "rank"].dropna().unique()
    return sorted(int(r) for r in ranks)


def speed_plot(run: Run, findings: Sequence[Finding]) -> Figure | None:
    """Step time (data and compute time too) or throughput; one line per rank when several."""
    present = [t for t in TIME_TAGS if run.has(t)]
    unit = "seconds"
    if not present:
        present = [t for t in RATE_TAGS if run.has(t) and len(run.series(t)) > 1][:1]
        unit = "per second"
    if not present:
        return _wall_step_time_plot(run, findings)
    fig, ax = _new_figure()
    colours = [BLUE, ORANGE, GREEN, PURPLE, RED, GREY]
    for i, tag in enumerate(present):
        ranks = _ranks_of(run, tag)
        if len(ranks) > 1:
            from matplotlib import colormaps

            cmap = colormaps["tab20"]
            for j, r in enumerate(_ranks_to_draw(ranks, findings)):
                culprit = r in _culprits(findings)
                _line(ax, run.series(tag, rank=r),
                               label=f"{tag} rank {r}" + (" (culprit)" if culprit else ""),
                               colour=RED if culprit else cmap(j % 20),
                               width=2.2 if culprit else 1.0, style=("-", "--", ":")[i % 3])
        else:
            _line(ax, run.series(tag), label=tag, colour=colours[i % len(colours)])
    _shade_segments(ax, run)
    _mark_findings(ax, findings, present, run.series(present[0]), first_bad=False)
    _mark_slow(ax, findings)
    ax.set_ylabel(unit)
    title = "Step time" if unit == "seconds" else "Throughput"
    fig = _finish(fig, ax, title)
    _trim_legend(ax)
    return fig


def _ranks_to_draw(ranks: list[int], findings: Sequence[Finding]) -> list[int]:
    """The first :data:`MAX_RANK_LINES` ranks, and every culprit rank beyond them."""
    culprits = _culprits(findings) & set(ranks)
    return sorted(set(ranks[:MAX_RANK_LINES]) | culprits)


def _trim_legend(ax: Axes) -> None:
    """With many per-rank lines, the legend names only the culprits (and says how many)."""
    handles, labels = ax.get_legend_handles_labels()
    if len(labels) <= 8:
        return
    keep = [(h, lab) for h, lab in zip(handles, labels, strict=True) if "culprit" in lab]
    legend = ax.get_legend()
    if legend is not None:
        legend.remove()
    if keep:
        ax.legend([h for h, _ in keep], [lab for _, lab in keep], fontsize=8, loc="best",
                  framealpha=0.8, title=f"{len(labels)} lines, one per rank and tag",
                  title_fontsize=7)


def _wall_step_time_plot(run: Run, findings: Sequence[Finding]) -> Figure | None:
    """Seconds per step from the wall times of the logged steps, when no timing is logged."""
    if run.scalars.empty or not run.scalars["wall_time"].notna().any():
        return None
    from autopsy.signals.steptime import all_wall_step_times

    times = {r: t for r, t in all_wall_step_times(run, skip_first=0).items()
             if t.reliable and len(t.seconds) > 1}
    if not times:
        return None
    fig, ax = _new_figure()
    every = sorted(times, key=lambda r: -1 if r is None else r)
    ranked = every[:MAX_RANK_LINES] if None in times else _ranks_to_draw(
        [r for r in every if r is not None], findings)
    if len(ranked) > 1:
        from matplotlib import colormaps

        cmap = colormaps["tab20"]
        for j, r in enumerate(ranked):
            culprit = r in _culprits(findings)
            _line(ax, times[r].seconds, label=f"rank {r}" + (" (culprit)" if culprit else ""),
                  colour=RED if culprit else cmap(j % 20), width=2.2 if culprit else 1.0)
    else:
        _line(ax, times[ranked[0]].seconds, label="seconds per step", colour=BLUE)
    _shade_segments(ax, run)
    first = times[ranked[0]].seconds
    _mark_findings(ax, findings, ["step_time", "wall_time"], first)
    _mark_slow(ax, findings)
    ax.set_ylabel("seconds per step")
    fig = _finish(fig, ax, "Step time, from the wall times of the logged steps")
    _trim_legend(ax)
    return fig


def _mark_slow(ax: Axes, findings: Sequence[Finding]) -> None:
    """A red line at the step of each finding of the ``slow`` family (where it begins)."""
    seen: set[int] = set()
    for f in findings:
        if f.family is Family.SLOW and f.step is not None and f.step not in seen:
            seen.add(f.step)
            ax.axvline(f.step, color=RED, linewidth=1.2)
            ax.annotate(f"{f.code}: step {f.step}", (f.step, 1.0),
                        xycoords=("data", "axes fraction"), xytext=(3, -12),
                        textcoords="offset points", fontsize=8, color=RED)


def rank_timeline_plot(status: pd.DataFrame, findings: Sequence[Finding]) -> Figure | None:
    """Per rank: a bar up to its last step, coloured by how it ended, its first error marked.

    ``status`` is :func:`autopsy.signals.ranks.rank_status`'s table. The culprit ranks of the
    findings get a bold label.
    """
    import numpy as np

    if status is None or status.empty or len(status) < 2:
        return None
    culprits = _culprits(findings)
    rows = pick_ranks(status, culprits)
    height = min(1.2 + 0.32 * len(rows), 14.0)
    fig, ax = _new_figure(height)
    ax.grid(True, axis="x", alpha=0.3)
    ax.grid(False, axis="y")
    labels = []
    seen_endings: dict[str, str] = {}
    for y, (_rank, row) in enumerate(rows.iterrows()):
        last = row.get("last_step")
        last_step = float(last) if last is not None and not _missing(last) else 0.0
        ended = str(row.get("ended") or "ok")
        colour = ENDING_COLOURS.get(ended, GREY)
        ax.barh(y, max(last_step, 0.5), left=0, height=0.6, color=colour, alpha=0.75,
                label=ended if ended not in seen_endings else None)
        seen_endings[ended] = colour
        err_step = row.get("first_error_step")
        if err_step is not None and not _missing(err_step):
            ax.plot([float(err_step)], [y], marker="X", color="black", markersize=8,
                    linestyle="none",
                    label="first error" if "first error" not in labels else None)
            labels.append("first error")
        kind = row.get("first_error_kind")
        text = ended + (f" · {kind}" if kind is not None and not _missing(kind) else "")
        ax.annotate(text, (max(last_step, 0.5), y), xytext=(12, -3), textcoords="offset points",
                    fontsize=8)
    ticks = [f"rank {r}" for r in rows.index]
    ax.set_yticks(np.arange(len(rows)), ticks)
    for tick, rank in zip(ax.get_yticklabels(), rows.index, strict=True):
        if _safe_int(rank) in culprits:
            tick.set_fontweight("bold")
            tick.set_color(RED)
    ax.invert_yaxis()
    shown = (f" ({len(rows)} of {len(status)}: culprits and ranks that ended unlike most "
             "first)" if len(rows) < len(status) else "")
    ax.set_xlabel("last step logged" + shown)
    xmax = ax.get_xlim()[1]
    ax.set_xlim(0, xmax * 1.25 + 1)
    return _finish(fig, ax, "Ranks: how far each got and how it ended")


def pick_ranks(status: pd.DataFrame, culprits: set[int],
               limit: int = MAX_TIMELINE_RANKS) -> pd.DataFrame:
    """The rows of the timeline: all ranks when at most ``limit``; else the culprits, the
    root ranks and those that ended unlike the most common ending, then the lowest ranks."""
    if len(status) <= limit:
        return status
    ended = status["ended"].astype(str)
    usual = ended.mode().iloc[0] if not ended.empty else ""
    ranks = [_safe_int(r) for r in status.index]
    root = status["root"].astype(bool) if "root" in status else ended == ""
    first = [i for i, r in enumerate(ranks) if r in culprits]
    first += [i for i in range(len(ranks)) if bool(root.iloc[i]) or ended.iloc[i] != usual]
    order = list(dict.fromkeys([*first, *range(len(ranks))]))[:limit]
    return status.iloc[sorted(order)]


def _missing(value: Any) -> bool:
    text = str(value)
    return text in ("<NA>", "nan", "None", "NaT")


def _safe_int(value: Any) -> int | None:
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


# ---------------------------------------------------------------------------- rendering

#: The run plots, in report order: (file-safe name, caption, function). The caption says
#: what is marked; the plot's own title is its first sentence.
RUN_PLOTS: tuple[tuple[str, str, Callable[[Run, Sequence[Finding]], Figure | None]], ...] = (
    ("loss", "Loss (train and eval). Red line: a finding's first bad step; red triangles: "
             "NaN/Inf points; circles: steps the evidence names; grey: earlier segments.",
     loss_plot),
    ("grad_norm", "Gradient norm. Log scale when it spans decades; circles: the spikes the "
                  "findings name; shaded: their evidence window; dotted: max_grad_norm.",
     grad_norm_plot),
    ("learning_rate", "Learning-rate schedule. As logged; orange: the configured warm-up; "
                      "dashed: restarts (segment boundaries); red line: a finding's step.",
     lr_plot),
    ("loss_scale", "fp16 loss scale and skipped steps. The loss scale on a log axis, the "
                   "skipped steps on the right.", loss_scale_plot),
    ("step_time", "Step time. As logged (data and compute time too), else throughput, else "
                  "seconds per step from the logged steps' wall times; per rank when several; "
                  "red line: where a slow finding begins.", speed_plot),
)
#: The caption of the per-rank timeline.
RANKS_CAPTION = ("Ranks. The last step each rank logged, coloured by how it ended; X: its "
                 "first error; red label: a culprit rank.")

#: Every plot's file-safe name (the Markdown report's PNG files are named after them).
PLOT_NAMES: tuple[str, ...] = ("ranks", *(name for name, _, _ in RUN_PLOTS))


def to_png(fig: Figure) -> tuple[bytes, int, int]:
    """Render a figure to PNG bytes (Agg canvas), clear it; return (bytes, width, height)."""
    import io

    from matplotlib.backends.backend_agg import FigureCanvasAgg

    canvas = FigureCanvasAgg(fig)
    buf = io.BytesIO()
    canvas.print_png(buf)
    width, height = (int(v) for v in canvas.get_width_height())
    fig.clear()
    return buf.getvalue(), width, height


def render_plots(run: Run, findings: Sequence[Finding],
                 rank_status: pd.DataFrame | None = None,
                 errors: list[str] | None = None) -> list[RenderedPlot]:
    """Every plot the run has data for, rendered to PNG, in report order.

    A plot that fails to draw (odd data) is left out rather than taking the report down;
    why is appended to ``errors`` when given.
    """
    out: list[RenderedPlot] = []
    jobs: list[tuple[str, str, Callable[[], Figure | None]]] = []
    if rank_status is not None:
        jobs.append(("ranks", RANKS_CAPTION, lambda: rank_timeline_plot(rank_status, findings)))
    jobs.extend((name, title, _bind(func, run, findings)) for name, title, func in RUN_PLOTS)
    for name, title, make in jobs:
        try:
            fig = make()
            if fig is None:
                continue
            png, width, height = to_png(fig)
        except Exception as exc:  # one odd series must not take the report down
            if errors is not None:
                errors.append(f"plot {name} left out: {type(exc).__name__}: {exc}")
            continue
        out.append(RenderedPlot(name=name, title=title.split(". ", 1)[0], png=png, width=width,
                                height=height, caption=title))
    return out


def _bind(func: Callable[[Run, Sequence[Finding]], Figure | None], run: Run,
          findings: Sequence[Finding]) -> Callable[[], Figure | None]:
    return lambda: func(run, findings)
