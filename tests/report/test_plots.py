"""The report's plots: pure (run, findings) -> Figure, marks taken from the findings."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from repo_paths import SAMPLE_RUNS

from autopsy.api import diagnose, load_run
from autopsy.model.finding import Evidence, Family, Finding, Severity
from autopsy.report import plots
from autopsy.rules.engine import Diagnosis
from autopsy.signals.ranks import rank_status

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


@pytest.fixture(scope="module")
def nan_run() -> tuple[object, Diagnosis]:
    run = load_run(SAMPLE_RUNS / "nan_after_grad_spike")
    return run, diagnose(run)


@pytest.fixture(scope="module")
def fp16_run() -> tuple[object, Diagnosis]:
    run = load_run(SAMPLE_RUNS / "fp16_overflow_collapse")
    return run, diagnose(run)


def _vlines_at(fig) -> set[float]:
    """x positions of the full-height vertical lines (axvline) of a figure's first axes."""
    ax = fig.axes[0]
    out = set()
    for line in ax.get_lines():
        xs, ys = line.get_xdata(), line.get_ydata()
        if len(xs) == 2 and xs[0] == xs[1] and list(ys) == [0, 1]:
            out.add(float(xs[0]))
    return out


def _circled(fig) -> set[float]:
    """x positions of the hollow circles (the marked evidence points)."""
    ax = fig.axes[0]
    return {float(line.get_xdata()[0]) for line in ax.get_lines()
            if line.get_marker() == "o" and line.get_markerfacecolor() == "none"}


def test_decimate_keeps_every_spike_and_bounds_the_points() -> None:
    x = np.arange(1_000_000, dtype=np.float64)
    y = np.ones_like(x)
    spikes = [17, 333_333, 999_998]
    y[spikes] = [50.0, 80.0, 99.0]
    y[500_000] = -7.0
    xd, yd = plots.decimate(x, y, max_points=2000)
    assert len(xd) <= 2000
    for s in [*spikes, 500_000]:
        assert s in set(xd.tolist()), s
    assert yd.max() == 99.0 and yd.min() == -7.0
    assert np.all(np.diff(xd) > 0), "points stay in step order"


def test_decimate_drops_non_finite_and_leaves_short_lines_alone() -> None:
    x = np.arange(10, dtype=np.float64)
    y = np.array([1, 2, np.nan, 4, np.inf, 6, 7, 8, 9, 10], dtype=np.float64)
    xd, yd = plots.decimate(x, y)
    assert xd.tolist() == [0, 1, 3, 5, 6, 7, 8, 9]
    assert np.isfinite(yd).all()


def test_loss_plot_marks_the_first_bad_step_and_ticks_nan_points(nan_run) -> None:
    run, diagnosis = nan_run
    fig = plots.loss_plot(run, diagnosis.findings)
    assert fig is not None
    assert diagnosis.verdict.step == 8
    assert 8.0 in _vlines_at(fig)
    labels = fig.axes[0].get_legend_handles_labels()[1]
    assert "loss NaN/Inf (33)" in labels


def test_grad_norm_plot_is_log_and_circles_the_spikes_the_evidence_names(nan_run) -> None:
    run, diagnosis = nan_run
    fig = plots.grad_norm_plot(run, diagnosis.findings)
    assert fig is not None
    assert fig.axes[0].get_yscale() == "log"
    # NAN001's grad-norm evidence: the spike at step 6, the peak at step 7
    assert {6.0, 7.0} <= _circled(fig)


def test_marks_come_from_the_findings_not_from_the_data(nan_run) -> None:
    run, _ = nan_run
    invented = Finding(
        code="TST001", name="test", family=Family.DIVERGING, cause=None,
        severity=Severity.ERROR, confidence=1.0, title="t", message="m", step=7,
        evidence=(Evidence("spike", tag="grad_norm", steps=(6, 8), numbers={"step": 7}),),
    )
    fig = plots.grad_norm_plot(run, [invented])
    assert _circled(fig) == {7.0}
    assert plots.grad_norm_plot(run, []) is not None
    assert _circled(plots.grad_norm_plot(run, [])) == set()


def test_fp16_run_gets_a_loss_scale_plot_with_skipped_steps(fp16_run) -> None:
    run, diagnosis = fp16_run
    fig = plots.loss_scale_plot(run, diagnosis.findings)
    assert fig is not None
    labels = [t for ax in fig.axes for t in ax.get_legend_handles_labels()[1]]
    assert "loss_scale" in labels and "skipped_steps" in labels
    assert fig.axes[0].get_yscale() == "log"


def test_only_the_plots_the_run_has_data_for(nan_run) -> None:
    run, diagnosis = nan_run
    assert plots.loss_scale_plot(run, diagnosis.findings) is None  # not an fp16 run
    names = [p.name for p in plots.render_plots(run, diagnosis.findings)]
    # no step time is logged: it comes from the wall times of the logged steps
    assert names == ["loss", "grad_norm", "learning_rate", "step_time"]
    no_clock = load_run(SAMPLE_RUNS / "nan_after_grad_spike")
    no_clock.scalars = no_clock.scalars.assign(wall_time=float("nan"))
    assert plots.speed_plot(no_clock, diagnosis.findings) is None


def test_restarts_are_lined_and_each_segment_drawn(tmp_path: Path) -> None:
    run = load_run(SAMPLE_RUNS / "resumed_after_stop")
    segments = run.segments()
    assert len(segments) == 2
    fig = plots.lr_plot(run, [])
    assert float(segments[1]["first_step"]) in _vlines_at(fig)
    loss = plots.loss_plot(run, [])
    labels = loss.axes[0].get_legend_handles_labels()[1]
    assert "loss (segment 0)" in labels and "loss (segment 1)" in labels


def test_step_time_plot_draws_one_line_per_rank() -> None:
    run = load_run(SAMPLE_RUNS / "slow_rank_straggler_4ranks")
    fig = plots.speed_plot(run, diagnose(run).findings)
    assert fig is not None
    labels = [label.removesuffix(" (culprit)")
              for label in fig.axes[0].get_legend_handles_labels()[1]]
    assert {f"data_time rank {r}" for r in range(4)} <= set(labels)


def test_rank_timeline_colours_endings_and_marks_the_culprit() -> None:
    run = load_run(SAMPLE_RUNS / "ddp_rank_stall_timeout")
    diagnosis = diagnose(run)
    status = rank_status(run)
    fig = plots.rank_timeline_plot(status, diagnosis.findings)
    assert fig is not None
    ax = fig.axes[0]
    labels = ax.get_legend_handles_labels()[1]
    assert "timed_out" in labels and "silent" in labels and "first error" in labels
    culprit = diagnosis.verdict.ranks[0]
    ticks = {t.get_text(): t for t in ax.get_yticklabels()}
    assert ticks[f"rank {culprit}"].get_fontweight() == "bold"
    assert ticks["rank 0"].get_fontweight() != "bold"


def test_render_plots_gives_pngs_and_clears_the_figures(nan_run) -> None:
    run, diagnosis = nan_run
    rendered = plots.render_plots(run, diagnosis.findings)
    assert rendered
    for p in rendered:
        assert p.png.startswith(PNG_MAGIC)
        assert p.width == 900 and p.height > 100
    fig = plots.loss_plot(run, diagnosis.findings)
    plots.to_png(fig)
    assert fig.axes == []  # cleared once rendered


def test_matplotlib_is_lazy_and_pyplot_never_used() -> None:
    code = (
        "import sys\n"
        "import autopsy.report.plots as p, autopsy.report.html_report\n"
        "assert 'matplotlib' not in sys.modules, 'imported at module load'\n"
        "from autopsy.api import load_run, diagnose\n"
        f"run = load_run({str(SAMPLE_RUNS / 'nan_after_grad_spike')!r})\n"
        "assert p.render_plots(run, diagnose(run).findings)\n"
        "assert 'matplotlib' in sys.modules\n"
        "assert 'matplotlib.pyplot' not in sys.modules, 'pyplot keeps global figures'\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr


def test_a_large_job_shows_its_culprit_and_odd_ranks_first() -> None:
    import pandas as pd

    n = 256
    status = pd.DataFrame({
        "last_step": [100] * n, "ended": ["timed_out"] * n, "first_error_kind": [None] * n,
        "first_error_step": pd.array([None] * n, dtype="Int64"), "root": [False] * n,
    }, index=pd.Index(range(n), name="rank"))
    status.loc[200, "ended"] = "oom"
    status.loc[250, "ended"] = "silent"
    picked = plots.pick_ranks(status, culprits={231})
    assert len(picked) == plots.MAX_TIMELINE_RANKS
    assert {200, 231, 250} <= set(picked.index)
    assert list(picked.index) == sorted(picked.index)
    fig = plots.rank_timeline_plot(status, [])
    assert "64 of 256" in fig.axes[0].get_xlabel()
    ticks = [t.get_text() for t in fig.axes[0].get_yticklabels()]
    assert "rank 200" in ticks and "rank 250" in ticks


def test_without_a_timing_tag_step_time_comes_from_wall_times() -> None:
    run = load_run(SAMPLE_RUNS / "slow_periodic_checkpoint_stalls")
    assert not run.has("step_time") and not run.has("throughput")
    diagnosis = diagnose(run)
    fig = plots.speed_plot(run, diagnosis.findings)
    assert fig is not None
    assert "wall times" in fig.axes[0].get_title(loc="left")
    line = next(ln for ln in fig.axes[0].get_lines() if ln.get_label() == "seconds per step")
    x, y = line.get_xdata(), line.get_ydata()
    slow = {int(s) for s, v in zip(x, y, strict=True) if v > 10 * np.median(y)}
    assert slow == {20, 40, 60, 80, 100, 120}  # the checkpoint stalls
    stall = next(f for f in diagnosis.findings if f.family is Family.SLOW)
    assert float(stall.step) in _vlines_at(fig)


def test_the_straggler_rank_stands_out() -> None:
    run = load_run(SAMPLE_RUNS / "slow_rank_straggler_4ranks")
    diagnosis = diagnose(run)
    assert diagnosis.verdict.ranks == (2,)
    fig = plots.speed_plot(run, diagnosis.findings)
    lines = {ln.get_label(): ln for ln in fig.axes[0].get_lines()}
    culprit = lines["data_time rank 2 (culprit)"]
    other = lines["data_time rank 0"]
    assert culprit.get_linewidth() > other.get_linewidth()
    assert lines["compute_time rank 2 (culprit)"].get_linestyle() != culprit.get_linestyle()


def test_a_plot_that_fails_is_left_out_with_the_reason(nan_run, monkeypatch) -> None:
    run, diagnosis = nan_run

    def broken(run, findings):
        raise RuntimeError("odd data")

    monkeypatch.setattr(plots, "RUN_PLOTS", (("loss", "Loss", broken), *plots.RUN_PLOTS[1:]))
    errors: list[str] = []
    rendered = plots.render_plots(run, diagnosis.findings, errors=errors)
    assert [p.name for p in rendered][:1] == ["grad_norm"]
    assert errors == ["plot loss left out: RuntimeError: odd data"]


def test_lr_plot_shows_the_warmup_and_the_step_a_resume_finding_names() -> None:
    run = load_run(SAMPLE_RUNS / "resume_scheduler_not_restored")
    diagnosis = diagnose(run)
    assert diagnosis.verdict.code == "RES010"
    fig = plots.lr_plot(run, diagnosis.findings)
    labels = fig.axes[0].get_legend_handles_labels()[1]
    assert "warm-up (10 steps)" in labels
    assert 41.0 in _vlines_at(fig)  # the restart
    texts = [t.get_text() for t in fig.axes[0].texts]
    assert f"RES010: step {diagnosis.verdict.step}" in texts and "restart 1" in texts


def test_many_ranks_draw_the_first_sixteen_and_every_culprit() -> None:
    culprit = Finding(code="TST002", name="t", family=Family.SLOW, cause="straggler",
                      severity=Severity.ERROR, confidence=1.0, title="t", message="m",
                      ranks=(30,))
    drawn = plots._ranks_to_draw(list(range(40)), [culprit])
    assert drawn == [*range(plots.MAX_RANK_LINES), 30]
