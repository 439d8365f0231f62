"""The table readers on files published by real runs (dev-half cases of the public corpus,
``sample_runs/public``): every value autopsy reads is the one the file holds, at the step the
file gives, compared with an independent read (``csv``/``json`` of the standard library)."""

from __future__ import annotations

import csv
import itertools
import json
import math
from pathlib import Path

import pytest
from corpus_labels import PUBLIC, split_of

import autopsy


def _csv_column(path: Path, step_col: str, col: str) -> list[tuple[int, float]]:
    with open(path, newline="", encoding="utf-8") as fh:
        rows = list(csv.reader(fh))
    header = [h.strip() for h in rows[0]]
    s, c = header.index(step_col), header.index(col)
    return [(int(float(r[s])), float(r[c])) for r in rows[1:]
            if len(r) > c and r[c].strip() and r[s].strip()]


def _jsonl_column(path: Path, step_key: str, key: str) -> list[tuple[int, float]]:
    out = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip():
            doc = json.loads(line)
            if step_key in doc and key in doc:
                out.append((int(doc[step_key]), float(doc[key])))
    return out


def _yolo_txt_total(path: Path) -> list[tuple[int, float]]:
    out = []
    for line in path.read_text(encoding="utf-8").splitlines():
        fields = line.split()
        if fields and "/" in fields[0]:
            out.append((int(fields[0].split("/")[0]), float(fields[5])))
    return out


CASES = [
    ("ultralytics_csv_healthy_helmet_yolo_50ep", "results.csv", "train/box_loss",
     lambda p: _csv_column(p, "epoch", "train/box_loss")),
    ("ultralytics_csv_overfit_tongue_cls_tiny_val_loss_4x", "results.csv", "train/loss",
     lambda p: _csv_column(p, "epoch", "train/loss")),
    ("yolo_txt_healthy_mushrooms_yolov5_30ep", "runs/train/exp/results.txt", "train/loss_sum",
     _yolo_txt_total),
    ("detectron2_json_healthy_balloon_maskrcnn_levi_magny", "output/metrics.json", "total_loss",
     lambda p: _jsonl_column(p, "iteration", "total_loss")),
    ("mmengine_json_healthy_mmpretrain_cls_acc_dip_recovers", "scalars.json", "loss",
     lambda p: _jsonl_column(p, "step", "loss")),
    ("keras_csv_irfanet_three_epochs_healthy", "training.log", "loss",
     lambda p: _csv_column(p, "epoch", "loss")),
    ("keras_csv_ecg_val_loss_best_epoch7_then_doubles_overfitting", "training.log", "val_loss",
     lambda p: _csv_column(p, "epoch", "val_loss")),
    ("lightning_csv_overfit_demand_forecast_val_loss_rises",
     "lightning_logs/version_0/metrics.csv", "val_loss",
     lambda p: _csv_column(p, "step", "val_loss")),
    ("csv_metrics_overfit_pokemon_lenet", "training_history.csv", "train_loss",
     lambda p: _csv_column(p, "epoch", "train_loss")),
]


@pytest.mark.parametrize("case,name,raw_tag,expected", CASES, ids=[c[0] for c in CASES])
def test_published_table_values(case: str, name: str, raw_tag: str, expected) -> None:  # type: ignore[no-untyped-def]
    assert split_of(case) == "dev"
    folder = PUBLIC / case
    want = expected(folder / name)
    assert want, "the independent read found the column"
    run = autopsy.load_run(folder)
    rows = run.scalars[run.scalars["raw_tag"].astype(str) == raw_tag]
    got = list(zip(rows["step"].astype(int), rows["value"], strict=True))
    assert [s for s, _ in got] == [s for s, _ in want]
    assert all(a == pytest.approx(b) or (math.isnan(a) and math.isnan(b))
               for (_, a), (_, b) in zip(got, want, strict=True))


def test_ultralytics_time_is_elapsed_and_gives_epoch_durations() -> None:
    """Ultralytics 8.1+ writes ``time`` as seconds since training started: the reader
    keeps it as ``elapsed_time`` and gives each epoch's duration (its increase)."""
    folder = PUBLIC / "ultralytics_csv_healthy_helmet_yolo_50ep"
    elapsed = _csv_column(folder / "results.csv", "epoch", "time")
    assert len(elapsed) == 50
    run = autopsy.load_run(folder)
    raw = run.scalars["raw_tag"].astype(str)
    kept = run.scalars[raw == "elapsed_time"]
    assert list(zip(kept["step"].astype(int), kept["value"], strict=True)) == \
        pytest.approx(elapsed)
    durations = run.series("step_time")
    want = [(s, b - a) for (_, a), (s, b) in itertools.pairwise(elapsed)]
    assert list(durations.index) == [s for s, _ in want]
    assert list(durations.to_numpy()) == pytest.approx([d for _, d in want])
    assert (raw == "time").sum() == 0


def test_an_ultralytics_classification_results_csv_is_read_as_ultralytics() -> None:
    """A classification run's ``results.csv`` (one ``train/loss``, no box/cls parts) is
    Ultralytics' too: its cumulative ``time`` is not a step time."""
    folder = PUBLIC / "ultralytics_csv_overfit_volley_pass_cls_val_loss_10x"
    run = autopsy.load_run(folder)
    assert [(s.path, s.reader) for s in run.sources] == [("results.csv", "ultralytics_csv")]
    elapsed = _csv_column(folder / "results.csv", "epoch", "time")
    durations = run.series("step_time")
    assert float(durations.sum()) == pytest.approx(elapsed[-1][1] - elapsed[0][1])


def test_a_bad_time_cell_costs_only_its_own_epoch_durations(tmp_path: Path) -> None:
    """One ``time`` cell that is ``nan`` (a corrupted copy of the published file): its
    epoch and the next lose their durations, the later ones keep theirs."""
    lines = (PUBLIC / "ultralytics_csv_healthy_helmet_yolo_50ep" / "results.csv").read_text(
        encoding="utf-8").splitlines()
    cells = lines[3].split(",")  # epoch 3
    cells[1] = "nan"
    lines[3] = ",".join(cells)
    run_dir = tmp_path / "exp"
    run_dir.mkdir()
    (run_dir / "results.csv").write_text("\n".join(lines) + "\n", encoding="utf-8")
    steps = list(autopsy.load_run(run_dir).series("step_time").index)
    assert 3 not in steps and 4 not in steps and 5 in steps and steps[-1] == 50
    assert len(steps) == 47
