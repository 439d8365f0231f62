"""The committed sample runs' labels: present, well formed, and true to the runs' own data.

Nothing is trained here: the runs under ``sample_runs/`` are read with ``autopsy.load_run``
and compared with the ``<name>.label.json`` files ``sample_runs/make.py`` wrote beside them.
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Any

import pytest

import autopsy

SAMPLE_RUNS = Path(__file__).resolve().parent.parent / "sample_runs"
FAMILIES = {
    "nan_inf", "diverging", "not_decreasing", "overfitting", "oom", "slow", "hang", "crash",
    "resume", "healthy", "unknown",
}
REQUIRED = ("family", "cause", "first_bad_step", "culprit_rank")
#: Families whose first bad step is null when the run does not show one (docs/labels.md).
STEP_MAY_BE_NULL = {"oom", "slow", "hang", "crash", "resume"}
#: ``public/`` is the real-world corpus (its own labels and test, ``test_public_corpus``).
RUN_NAMES = sorted(p.name for p in SAMPLE_RUNS.iterdir() if p.is_dir() and not
                   p.name.startswith((".", "__")) and p.name != "public")
#: the torchrun runs of ``sample_runs/multirank.py`` (their labels carry ``world_size``)
MULTI_RANK = sorted(
    n for n in RUN_NAMES
    if "world_size" in json.loads((SAMPLE_RUNS / f"{n}.label.json").read_text(encoding="utf-8"))
)
SINGLE = [n for n in RUN_NAMES if n not in MULTI_RANK]
#: the checkpoint runs of ``sample_runs/checkpoints.py`` (their labels carry ``components``)
CHECKPOINT = sorted(
    n for n in RUN_NAMES
    if "components" in json.loads((SAMPLE_RUNS / f"{n}.label.json").read_text(encoding="utf-8"))
)
STEP_LINE = re.compile(r"\bstep (\d+) loss ")
TEE_PREFIX = re.compile(r"^\[default(\d+)\]:")


def _label(name: str) -> dict[str, Any]:
    """The label of one sample run."""
    return json.loads((SAMPLE_RUNS / f"{name}.label.json").read_text(encoding="utf-8"))


def _points(run: Any, tag: str) -> list[tuple[int, float]]:
    """``[(step, value)]`` of one tag, every point (all segments), by step."""
    df = run.scalars
    df = df[df["tag"] == tag].sort_values("step")
    return [(int(s), float(v)) for s, v in zip(df["step"], df["value"], strict=True)]


def _first_nonfinite(points: list[tuple[int, float]]) -> int | None:
    """The first step whose value is NaN or ±Inf."""
    return next((s for s, v in points if not math.isfinite(v)), None)


def test_there_are_sample_runs() -> None:
    assert len(RUN_NAMES) >= 13
    assert not (SAMPLE_RUNS / "labels.json").exists(), "replaced by per-run label files"


@pytest.mark.parametrize("name", RUN_NAMES)
def test_every_run_has_a_well_formed_label(name: str) -> None:
    label = _label(name)
    for key in REQUIRED:
        assert key in label, f"{name}: {key} missing"
    assert label["family"] in FAMILIES
    cause = label["cause"]
    assert cause is None or isinstance(cause, str) or (
        isinstance(cause, list) and cause and all(isinstance(c, str) for c in cause)
    )
    if label["family"] == "healthy":
        assert cause is None and label["first_bad_step"] is None
    else:
        assert cause is not None
        step = label["first_bad_step"]
        assert isinstance(step, int) or (step is None and label["family"] in STEP_MAY_BE_NULL)
    if name in MULTI_RANK and label["family"] != "healthy":
        assert label["culprit_rank"] in range(label["world_size"])
    elif name in CHECKPOINT and label["culprit_rank"] is not None:
        # the rank whose part of the checkpoint (its RNG file) is missing
        assert label["culprit_rank"] in range(label["checkpoint_world_size"])
        assert label["family"] == "resume"
    else:
        assert label["culprit_rank"] is None  # single-process runs, healthy multi-rank run


@pytest.mark.parametrize("name", SINGLE)
def test_label_agrees_with_the_run(name: str) -> None:
    label = _label(name)
    run = autopsy.load_run(SAMPLE_RUNS / name)
    loss = _points(run, "loss")
    grad_norm = _points(run, "grad_norm")
    assert loss, f"{name}: no loss read"
    family, step = label["family"], label["first_bad_step"]
    fp16 = "loss_scale" in set(run.scalars["tag"])
    if family == "nan_inf" and fp16:
        # skipped steps have an inf/NaN grad norm by design: the failure is the inf loss
        assert _first_nonfinite(loss) == step
    elif family == "nan_inf":
        firsts = [s for s in (_first_nonfinite(loss), _first_nonfinite(grad_norm)) if s]
        assert min(firsts) == step
    elif family == "healthy":
        assert all(math.isfinite(v) for _, v in loss)
    elif family == "not_decreasing":
        assert loss[0][0] == step  # the first logged step
    elif family == "overfitting":
        eval_loss = _points(run, "eval_loss")
        best_step, best = min(eval_loss, key=lambda p: p[1])
        assert best_step == step and eval_loss[-1][1] > best
    elif family == "diverging":
        assert all(math.isfinite(v) for _, v in loss)
        before = [v for s, v in loss if s < step]
        after = [v for s, v in loss if s >= step]
        assert max(after) > 10 * min(before)


def test_nan_runs_show_what_their_labels_say() -> None:
    hidden = autopsy.load_run(SAMPLE_RUNS / "hidden_nan_hf_filter")
    assert all(math.isfinite(v) for _, v in _points(hidden, "loss")), "the filter hides NaN"
    bad = _label("hidden_nan_hf_filter")["first_bad_step"]
    assert dict(_points(hidden, "loss"))[bad] == 0.0
    plain = autopsy.load_run(SAMPLE_RUNS / "nan_after_grad_spike")
    first_nan = _label("nan_after_grad_spike")["first_bad_step"]
    assert math.isnan(dict(_points(plain, "loss"))[first_nan])
    batch = _label("nan_bad_batch")
    grads = _points(autopsy.load_run(SAMPLE_RUNS / "nan_bad_batch"), "grad_norm")
    calm = [v for s, v in grads if s < batch["first_bad_step"]]
    assert max(calm[-10:]) < 3 * sorted(calm)[len(calm) // 2]


def test_fp16_runs_log_their_scale_and_config() -> None:
    collapse = autopsy.load_run(SAMPLE_RUNS / "fp16_overflow_collapse")
    assert collapse.config["fp16"] is True
    scale = _points(collapse, "loss_scale")
    label = _label("fp16_overflow_collapse")
    assert scale[-1][1] == pytest.approx(label["loss_scale_last"])
    assert scale[-1][1] < 1e-6 < scale[0][1]
    healthy = autopsy.load_run(SAMPLE_RUNS / "fp16_warmup_skips_healthy")
    skips = _points(healthy, "skipped_steps")
    assert skips[-1][1] == len(_label("fp16_warmup_skips_healthy")["warmup_skipped_steps"])


def test_resumed_run_has_two_segments() -> None:
    run = autopsy.load_run(SAMPLE_RUNS / "resumed_after_stop")
    label = _label("resumed_after_stop")
    segments = run.scalars.groupby("segment")["step"].agg(["min", "max"])
    assert len(segments) == label["segments"] == 2
    assert [[int(a), int(b)] for a, b in segments.itertuples(index=False)] == label[
        "segment_steps"
    ]


def test_spike_run_labels_its_spikes() -> None:
    label = _label("loss_spikes_recover")
    assert label["warnings"] == ["loss-spikes"]
    loss = dict(_points(autopsy.load_run(SAMPLE_RUNS / "loss_spikes_recover"), "loss"))
    for step in label["spike_steps"]:
        assert loss[step] > 3 * loss[step - 1]
        assert loss[step + 3] < 1.5 * loss[step - 1]


def test_plain_loop_config_is_read() -> None:
    run = autopsy.load_run(SAMPLE_RUNS / "diverging_finite")
    assert run.config["learning_rate"] == pytest.approx(3.0)
    assert run.config["max_grad_norm"] == pytest.approx(1.0)
    assert run.config["warmup_steps"] == 80


def _rank_logs(run_dir: Path) -> dict[int, str]:
    """``{rank: text}``: torchrun's ``--log-dir`` files, else the ``[defaultN]:`` lines."""
    files = sorted(run_dir.glob("logs/*/attempt_0/*/stderr.log"))
    if files:
        return {int(f.parent.name): f.read_text(encoding="utf-8") for f in files}
    out: dict[int, list[str]] = {}
    for line in (run_dir / "train.log").read_text(encoding="utf-8").splitlines():
        m = TEE_PREFIX.match(line)
        if m:
            out.setdefault(int(m.group(1)), []).append(line[m.end():])
    return {r: "\n".join(lines) for r, lines in out.items()}


def test_there_are_multi_rank_runs() -> None:
    assert len(MULTI_RANK) >= 6
    families = {_label(n)["family"] for n in MULTI_RANK}
    assert {"healthy", "crash", "hang"} <= families


@pytest.mark.parametrize("name", MULTI_RANK)
def test_multi_rank_label_agrees_with_the_logs(name: str) -> None:
    label = _label(name)
    logs = _rank_logs(SAMPLE_RUNS / name)
    assert sorted(logs) == list(range(label["world_size"]))
    assert (label["log_layout"] == "redirects") == (SAMPLE_RUNS / name / "logs").is_dir()
    for rank, text in logs.items():
        steps = [int(s) for s in STEP_LINE.findall(text)]
        assert max(steps) == label["ranks"][str(rank)]["last_step"], f"{name}: rank {rank}"
        error = label["ranks"][str(rank)]["first_error"]
        assert (error is None) == ("Error: " not in text)
        assert ("Timed out waiting" in text) == (rank in label["timed_out_ranks"])
    culprit, step = label["culprit_rank"], label["first_bad_step"]
    if label["family"] in ("healthy", "slow"):  # slow: every rank ran to the end
        assert not label["timed_out_ranks"] and label["torchelastic_root_cause_rank"] is None
        assert "ChildFailedError" not in (SAMPLE_RUNS / name / "train.log").read_text("utf-8")
    else:
        # hang: the last step completed before it stopped; crash: the step in progress
        completed = step if label["family"] == "hang" else step - 1
        assert label["ranks"][str(culprit)]["last_step"] == completed
        assert "ChildFailedError" in (SAMPLE_RUNS / name / "train.log").read_text("utf-8")


def test_multi_rank_culprits_show_their_situation() -> None:
    exc = _rank_logs(SAMPLE_RUNS / "ddp_rank_exception")[2]
    assert "ValueError: batch at step 15" in exc
    assert list((SAMPLE_RUNS / "ddp_rank_exception").glob("logs/*/attempt_0/2/error.json"))
    stall = _label("ddp_rank_stall_timeout")
    assert stall["culprit_rank"] not in stall["timed_out_ranks"]
    assert stall["torchelastic_root_cause_rank"] != stall["culprit_rank"]  # names a victim
    detail = _rank_logs(SAMPLE_RUNS / "ddp_collective_mismatch_detail")
    assert all("Detected mismatch between collectives" in t for t in detail.values())
    silent = _rank_logs(SAMPLE_RUNS / "ddp_collective_mismatch_silent")
    assert not any("Detected mismatch" in t for t in silent.values())
    uneven = _label("ddp_uneven_batches")
    assert uneven["batches_per_rank"]["0"] == uneven["first_bad_step"]
