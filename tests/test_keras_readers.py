"""Keras output, written by Keras itself (3.x, torch backend): the ``CSVLogger`` file, a
saved ``history`` CSV, and the progress lines of ``fit(verbose=1|2)``."""

from __future__ import annotations

import contextlib
import io
import math
import os
from pathlib import Path
from typing import Any

import pytest

import autopsy

os.environ.setdefault("KERAS_BACKEND", "torch")


def _fit(root: Path, verbose: int, lr: float = 0.1, poison: bool = False) -> dict[str, Any]:
    """Fit a tiny classifier for 3 epochs; write training.log, history.csv, train.log."""
    import keras
    import numpy as np
    import pandas as pd

    keras.utils.set_random_seed(0)
    rng = np.random.default_rng(0)
    x = rng.normal(size=(256, 8)).astype("float32")
    y = (x[:, 0] > 0).astype("int32")
    if poison:  # a NaN input in the second epoch's data: the loss goes NaN
        x[200:] = np.nan
    model = keras.Sequential([keras.Input((8,)), keras.layers.Dense(16, activation="relu"),
                              keras.layers.Dense(2, activation="softmax")])
    model.compile(optimizer=keras.optimizers.SGD(lr), loss="sparse_categorical_crossentropy",
                  metrics=["accuracy"])
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        hist = model.fit(x, y, epochs=3, batch_size=32, shuffle=False, verbose=verbose,
                         validation_split=0.25 if not poison else 0.0, callbacks=[
                             keras.callbacks.CSVLogger(str(root / "training.log"))])
    (root / "train.log").write_text(out.getvalue(), encoding="utf-8")
    pd.DataFrame(hist.history).to_csv(root / "history.csv")
    pd.DataFrame(hist.history).to_csv(root / "history_noindex.csv", index=False)
    return hist.history


@pytest.mark.parametrize("name", ["training.log", "history.csv", "history_noindex.csv"])
def test_keras_csv_files(tmp_path: Path, name: str) -> None:
    """CSVLogger's file, and a saved History with and without pandas' index column (rows are
    epochs from 0 either way)."""
    history = _fit(tmp_path, verbose=0)
    for other in {"training.log", "history.csv", "history_noindex.csv", "train.log"} - {name}:
        (tmp_path / other).unlink()
    run = autopsy.load_run(tmp_path)
    assert [s.reader for s in run.sources] == ["epoch_csv"]
    for raw, tag in (("loss", "loss"), ("val_loss", "eval_loss")):
        series = run.series(tag)
        assert list(series.index) == [0, 1, 2]  # Keras counts epochs from 0
        assert list(series.values) == pytest.approx(history[raw])
    acc = run.scalars[run.scalars["raw_tag"] == "val_accuracy"]["value"]
    assert list(acc) == pytest.approx(history["val_accuracy"])


@pytest.mark.parametrize("verbose", [1, 2])
def test_keras_progress_lines(tmp_path: Path, verbose: int) -> None:
    history = _fit(tmp_path, verbose=verbose)
    for name in ("training.log", "history.csv", "history_noindex.csv"):
        (tmp_path / name).unlink()
    run = autopsy.load_run(tmp_path)
    for raw, tag in (("loss", "loss"), ("val_loss", "eval_loss")):
        series = run.series(tag)
        assert list(series.index) == [1, 2, 3]  # as printed: "Epoch 1/3"
        # verbose=2 prints the epoch's values (4 digits); verbose=1 the bar's last
        # running mean, which Keras 3 rounds the same way
        if verbose == 2:
            assert list(series.values) == pytest.approx(history[raw], abs=1e-4)
        else:
            assert all(math.isfinite(v) for v in series.values)


def test_keras_nan_loss_found_in_each_writer(tmp_path: Path) -> None:
    history = _fit(tmp_path, verbose=2, poison=True)
    first_nan = next(i for i, v in enumerate(history["loss"]) if not math.isfinite(v))
    for keep, step in (("training.log", first_nan), ("train.log", first_nan + 1)):
        run_dir = tmp_path / keep.replace(".", "_")
        run_dir.mkdir()
        (run_dir / keep).write_bytes((tmp_path / keep).read_bytes())
        verdict = autopsy.diagnose(autopsy.load_run(run_dir)).verdict
        assert (verdict.family.value, verdict.step) == ("nan_inf", step), keep


def test_a_finished_bar_gives_the_epoch_time(tmp_path: Path) -> None:
    """The time a finished bar says the epoch took, in each Keras's format: Keras 1
    (``- 12s - loss``), tf.keras 2 (``- 5s 3ms/step``, ``- 2s 35us/sample``) and Keras 3
    (``━━━━ 5s 3ms/step``); a bar still running (ETA) or an epoch under half a second
    (``0s``) gives none."""
    bars = [
        "60000/60000 [==============================] - 12s - loss: 0.3000 - acc: 0.9100",
        "1875/1875 [==============================] - 5s 3ms/step - loss: 0.2000",
        "60000/60000 [==============================] - 2s 35us/sample - loss: 0.1500",
        "1875/1875 ━━━━━━━━━━━━━━━━━━━━ 9s 5ms/step - accuracy: 0.9600 - loss: 0.1000",
        "1875/1875 ━━━━━━━━━━━━━━━━━━━━ 0s 1ms/step - accuracy: 0.9700 - loss: 0.0900",
    ]
    lines = []
    for epoch, bar in enumerate(bars, start=1):
        lines += [f"Epoch {epoch}/6", bar]
    lines += ["Epoch 6/6", "1000/1875 [==============>...............] - ETA: 2s - loss: 0.0800"]
    (tmp_path / "train.log").write_text("\n".join(lines) + "\n", encoding="utf-8")
    run = autopsy.load_run(tmp_path)
    times = run.series("step_time")
    assert dict(times) == {1: 12.0, 2: 5.0, 3: 2.0, 4: 9.0}
    assert list(run.series("loss").index) == [1, 2, 3, 4, 5, 6]


def test_keras_fit_called_in_a_loop_steps_each_call(tmp_path: Path) -> None:
    """``model.fit(..., epochs=1)`` in a loop: Keras 3 prints a finished bar and no header
    each call; the calls are steps 1, 2, 3 (not three values of one batch count)."""
    import keras
    import numpy as np

    keras.utils.set_random_seed(0)
    rng = np.random.default_rng(0)
    x = rng.normal(size=(64, 8)).astype("float32")
    y = (x[:, 0] > 0).astype("int32")
    model = keras.Sequential([keras.Input((8,)), keras.layers.Dense(2, activation="softmax")])
    model.compile(optimizer=keras.optimizers.SGD(0.1), loss="sparse_categorical_crossentropy")
    out = io.StringIO()
    losses = []
    with contextlib.redirect_stdout(out):
        for _ in range(3):
            hist = model.fit(x, y, epochs=1, batch_size=32, shuffle=False, verbose=2)
            losses.append(hist.history["loss"][0])
    text = out.getvalue()
    assert "Epoch" not in text and len(text.splitlines()) == 3
    (tmp_path / "train.log").write_text(text, encoding="utf-8")
    series = autopsy.load_run(tmp_path).series("loss")
    assert list(series.index) == [1, 2, 3]
    assert list(series.values) == pytest.approx(losses, abs=1e-4)


def test_keras2_epoch_1_of_1_headers_in_a_loop(tmp_path: Path) -> None:
    """Keras 2 printed ``Epoch 1/1`` before each one-epoch ``fit`` call (keras#13710's
    incremental loop, its exact lines): each call is the next step."""
    (tmp_path / "train.log").write_text(
        ">559\nEpoch 1/1\n1/1 [==============================] - 233s 233s/step - loss: 0.1518\n"
        ">560\nEpoch 1/1\n1/1 [==============================] - 234s 234s/step - loss: 0.1627\n"
        ">561\nEpoch 1/1\n1/1 [==============================] - 240s 240s/step - loss: 0.1735\n",
        encoding="utf-8")
    run = autopsy.load_run(tmp_path)
    assert list(run.series("loss").items()) == [(1, 0.1518), (2, 0.1627), (3, 0.1735)]
    assert list(run.series("step_time").values) == [233.0, 234.0, 240.0]
    # a single one-epoch run keeps its epoch 1
    (tmp_path / "train.log").write_text(
        "Epoch 1/1\n1/1 [==============================] - 233s 233s/step - loss: 0.1518\n",
        encoding="utf-8")
    assert list(autopsy.load_run(tmp_path).series("loss").items()) == [(1, 0.1518)]


@pytest.mark.parametrize("metric", ["sparse_categorical_accuracy", "binary_accuracy"])
def test_keras_accuracy_metrics_named_by_kind_are_the_accuracy(tmp_path: Path,
                                                                  metric: str) -> None:
    """``compile(metrics=[keras.metrics.SparseCategoricalAccuracy()])`` (or the name string)
    makes Keras log ``sparse_categorical_accuracy`` and ``val_sparse_categorical_accuracy``:
    the training and the eval accuracy the rules judge."""
    import keras
    import numpy as np

    keras.utils.set_random_seed(0)
    rng = np.random.default_rng(0)
    x = rng.normal(size=(256, 8)).astype("float32")
    y = (x[:, 0] > 0).astype("int32")
    binary = metric == "binary_accuracy"
    model = keras.Sequential([keras.Input((8,)), keras.layers.Dense(
        1 if binary else 2, activation="sigmoid" if binary else "softmax")])
    model.compile(optimizer=keras.optimizers.SGD(0.1),
                  loss="binary_crossentropy" if binary else "sparse_categorical_crossentropy",
                  metrics=[metric])
    with contextlib.redirect_stdout(io.StringIO()):
        hist = model.fit(x, y, epochs=4, batch_size=32, verbose=0, validation_split=0.25,
                         callbacks=[keras.callbacks.CSVLogger(str(tmp_path / "training.log"))])
    header = (tmp_path / "training.log").read_text().splitlines()[0]
    assert f"val_{metric}" in header  # what Keras itself wrote
    run = autopsy.load_run(tmp_path)
    assert list(run.series("accuracy").values) == pytest.approx(hist.history[metric])
    assert list(run.series("eval_accuracy").values) == pytest.approx(
        hist.history[f"val_{metric}"])
