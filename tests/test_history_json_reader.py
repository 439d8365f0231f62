"""A Keras history saved as JSON (``json.dump(history.history, f)``), written by Keras, and
the nested variant of a published file (``{"epochs": [...], "metrics": {...}}``)."""

from __future__ import annotations

import json
import math
from pathlib import Path

from repo_paths import SAMPLE_RUNS
from test_keras_readers import _fit

import autopsy
from autopsy.readers import history_json


def test_a_keras_history_dumped_as_json(tmp_path: Path) -> None:
    history = _fit(tmp_path, verbose=0)
    run = tmp_path / "run"
    run.mkdir()
    with open(run / "history.json", "w") as fh:
        json.dump(history, fh)
    assert history_json.sniff(run / "history.json")
    loaded = autopsy.load_run(run)
    assert [s.reader for s in loaded.sources] == ["history_json"]
    loss = loaded.series("loss")
    assert list(loss.index) == [0, 1, 2]
    assert [round(v, 6) for v in loss] == [round(v, 6) for v in history["loss"]]
    assert list(loaded.series("eval_loss").index) == [0, 1, 2]


def test_nan_in_a_dumped_history_is_the_nan_step(tmp_path: Path) -> None:
    history = _fit(tmp_path, verbose=0, poison=True)
    first_nan = next(i for i, v in enumerate(history["loss"]) if not math.isfinite(v))
    run = tmp_path / "run"
    run.mkdir()
    (run / "history.json").write_text(json.dumps(history))  # NaN as Python writes it
    verdict = autopsy.diagnose(autopsy.load_run(run)).verdict
    assert (verdict.family.value, verdict.step) == ("nan_inf", first_nan)


def test_the_nested_form_of_a_published_history() -> None:
    case = SAMPLE_RUNS / "public" / "other_keras_history_json_ptychopinn_loss_nan_epoch3"
    assert (case / "history.json").is_file(), f"missing fixture {case}"
    run = autopsy.load_run(case)
    loss = run.series("loss")
    assert list(loss.index) == [0, 1, 2, 3, 4]
    assert math.isnan(loss[3]) and loss[2] == -3938984.25


def test_uneven_lists_and_odd_values_cost_themselves(tmp_path: Path) -> None:
    run = tmp_path / "run"
    run.mkdir()
    (run / "history.json").write_text(json.dumps({
        "epoch": [1, 2, 3], "loss": [1.0, "x", 0.5, 0.4], "val_loss": [1.2, 1.1, 10**400]}))
    loaded = autopsy.load_run(run)
    assert list(loaded.series("loss").index) == [1, 3]
    assert loaded.series("eval_loss")[3] == math.inf
    kinds = {p.kind for p in loaded.problems}
    assert "uneven_lists" in kinds
    (run / "history.json").write_text("[1, 2]")
    assert not history_json.sniff(run / "history.json")
