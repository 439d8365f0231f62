"""Training logs printed by home-made loops: the PyTorch examples' prints, blocks, tables and
bare columns (``autopsy.readers.ranklogs.structured``).

The PyTorch example logs are printed here with the examples' own format strings (mnist's
``train``/``test``, the CIFAR-10 tutorial's running loss, the sentiment-analysis tutorials'
epoch summary), so the lines are exactly what those scripts print; the public corpus holds
published logs of the other layouts (``generic_log_speech_primer_*``, ``yanmtt_*``,
``generic_log_bert_large_classifier_*``).
"""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd
import pytest

import autopsy
from autopsy.readers import ranklogs
from autopsy.readers.ranklogs.structured import BARE_MIN_ROWS


def _read(tmp_path: Path, text: str, name: str = "train.log") -> tuple[pd.DataFrame, list]:
    log = tmp_path / name
    log.write_text(text, encoding="utf-8")
    part = ranklogs.read(log, name)
    assert part.scalars is not None
    return part.scalars, part.problems


def _series(s: pd.DataFrame, tag: str) -> list[tuple[int, float]]:
    rows = s[s["tag"] == tag]
    return [(int(a), round(float(b), 9)) for a, b in zip(rows["step"], rows["value"],
                                                          strict=True)]


def _mnist_log() -> str:
    out = []
    dataset, batch = 60000, 64
    for epoch in (1, 2):
        for batch_idx, loss in ((0, 2.3 / epoch), (10, 1.1 / epoch), (20, 0.6 / epoch)):
            # the example's own format strings, kept as it writes them (so: no f-strings)
            out.append('Train Epoch: {} [{}/{} ({:.0f}%)]\tLoss: {:.6f}'.format(  # noqa: UP032
                epoch, batch_idx * batch, dataset, 100. * batch_idx / 938, loss))
        out.append('\nTest set: Average loss: {:.4f}, Accuracy: {}/{} ({:.0f}%)\n'.format(  # noqa: UP032
            0.05 / epoch, 9800 + epoch, 10000, 100. * (9800 + epoch) / 10000))
    return "\n".join(out) + "\n"


def test_pytorch_mnist_example_steps_by_samples_and_reads_its_test_line(tmp_path: Path) -> None:
    s, _ = _read(tmp_path, _mnist_log())
    # epoch × dataset + samples seen: one increasing step per line, not the epoch twice
    assert _series(s, "loss") == pytest.approx(
        [(60000, 2.3), (60640, 1.1), (61280, 0.6), (120000, 1.15), (120640, 0.55),
         (121280, 0.3)])
    assert _series(s, "eval_loss") == ([(61280, 0.05), (121280, 0.025)])
    assert _series(s, "eval_accuracy") == ([(61280, 0.9801), (121280, 0.9802)])


def test_pytorch_cifar_tutorial_running_loss(tmp_path: Path) -> None:
    lines = []
    for epoch in range(2):
        for i, running in ((1999, 4374.0), (3999, 3774.0), (5999, 3374.0)):
            lines.append(f'[{epoch + 1}, {i + 1:5d}] loss: {running / 2000 / (epoch + 1):.3f}')
    s, _ = _read(tmp_path, "\n".join(lines) + "\n")
    got = _series(s, "loss")
    steps = [step for step, _ in got]
    assert len(got) == 6 and steps == sorted(set(steps))  # a new epoch continues the count
    assert [v for _, v in got] == pytest.approx([2.187, 1.887, 1.687, 1.093, 0.944, 0.844])


def test_epoch_blocks_of_a_sentiment_tutorial(tmp_path: Path) -> None:
    lines = []
    for epoch, (tl, ta, vl, va) in enumerate([(0.693, 0.5012, 0.690, 0.518),
                                              (0.601, 0.6012, 0.650, 0.618)]):
        lines.append(f'Epoch: {epoch + 1:02} | Epoch Time: 0m 57s')
        lines.append(f'\tTrain Loss: {tl:.3f} | Train Acc: {ta * 100:.2f}%')
        lines.append(f'\t Val. Loss: {vl:.3f} |  Val. Acc: {va * 100:.2f}%')
    s, _ = _read(tmp_path, "\n".join(lines) + "\n")
    assert _series(s, "loss") == ([(1, 0.693), (2, 0.601)])
    assert _series(s, "eval_loss") == ([(1, 0.690), (2, 0.650)])
    assert _series(s, "accuracy") == ([(1, 50.12), (2, 60.12)])


def test_key_value_blocks_with_a_nan_give_the_nan_event(tmp_path: Path) -> None:
    text = ("called epoch end, epoch num:  4\nEpoch    :  5\nLOSS     :  24.569025\n\n"
            "called epoch end, epoch num:  5\nEpoch    :  6\nLOSS     :  20.572273\n\n"
            "Epoch    :  7\nLOSS     :  nan\n")
    log = tmp_path / "train.log"
    log.write_text(text, encoding="utf-8")
    part = ranklogs.read(log, "train.log")
    got = _series(part.scalars, "loss")
    assert [step for step, _ in got] == [5, 6, 7]
    assert math.isnan(got[-1][1])
    events = part.events
    assert events[events["kind"] == "nan_loss"]["step"].tolist() == [7]


def test_header_table_with_space_aligned_rows(tmp_path: Path) -> None:
    text = ("epoch  train_loss  val_loss  val_acc\n"
            "    1      0.5123     0.6012   0.51\n"
            "    2      0.4123     0.5512   0.61\n"
            "    3      0.3123     0.5812   0.64\n")
    s, _ = _read(tmp_path, text)
    assert _series(s, "loss") == ([(1, 0.5123), (2, 0.4123), (3, 0.3123)])
    assert _series(s, "eval_loss") == ([(1, 0.6012), (2, 0.5512), (3, 0.5812)])


def test_decorated_header_before_each_epoch_takes_the_epoch_line(tmp_path: Path) -> None:
    text = "".join(f"Epoch: 0{e} | Epoch Time: 0m 57s\n"
                   "*******train_loss,train_acc,valid_loss,valid_ac********** \n"
                   f"{5.2 - e / 10}\t2.79\t4.97\t3.6057\n" for e in (1, 2, 3))
    s, _ = _read(tmp_path, text)
    assert _series(s, "loss") == ([(1, 5.1), (2, 5.0), (3, 4.9)])
    assert _series(s, "eval_loss") == ([(1, 4.97), (2, 4.97), (3, 4.97)])


def test_bare_step_value_lines_are_a_loss_with_a_problem(tmp_path: Path) -> None:
    rows = [f"{76900 + 10 * i} {2.6 + i / 100}" for i in range(BARE_MIN_ROWS - 1)]
    text = "...\n" + "\n".join(rows) + "\nSaving the model\n76990 nan\n"
    s, problems = _read(tmp_path, text)
    got = _series(s, "loss")
    assert len(got) == BARE_MIN_ROWS and math.isnan(got[-1][1])
    assert any(p.kind == "assumed_name" and p.count == BARE_MIN_ROWS for p in problems)


def test_too_few_bare_lines_or_integer_columns_are_not_a_loss(tmp_path: Path) -> None:
    few = "\n".join(f"{i} {i / 3:.3f}" for i in range(1, BARE_MIN_ROWS)) + "\n"
    s, _ = _read(tmp_path, few)
    assert s.empty
    counts = "\n".join(f"{i} {i * 7}" for i in range(1, 3 * BARE_MIN_ROWS)) + "\n"
    s, problems = _read(tmp_path, counts, "counts.log")
    assert s.empty and not any(p.kind == "assumed_name" for p in problems)


def test_structured_reading_never_doubles_a_log_the_line_parsers_read(tmp_path: Path) -> None:
    text = ("step 10 loss 2.0\nstep 20 loss 1.5\n"
            "Epoch: 3\nTrain Loss: 9.9\n")  # a block after lines that were read: not taken
    s, _ = _read(tmp_path, text)
    assert _series(s, "loss") == ([(10, 2.0), (20, 1.5)])


def test_a_whole_run_directory_gets_a_verdict_from_blocks(tmp_path: Path) -> None:
    run = tmp_path / "run"
    run.mkdir()
    lines = []
    for epoch in range(1, 13):
        lines.append(f"Epoch: {epoch:02} | Epoch Time: 0m 57s")
        loss = 0.69 - 0.03 * epoch if epoch < 10 else float("nan")
        lines.append(f"\tTrain Loss: {loss:.3f} | Train Acc: {50 + epoch:.2f}%")
    (run / "train.log").write_text("\n".join(lines) + "\n", encoding="utf-8")
    diagnosis = autopsy.diagnose(autopsy.load_run(run))
    assert diagnosis.verdict.family.value == "nan_inf"
    assert diagnosis.verdict.step == 10


def test_bare_counter_with_a_colon_and_two_unnamed_losses(tmp_path: Path) -> None:
    # a GAN loop's print("{}: {}\t{}".format(step, d_loss, g_loss)), blown up from the start
    text = "".join(f"{10 * i}: {'inf' if i == 0 else 'nan'}\tnan\n" for i in range(12))
    log = tmp_path / "train.log"
    log.write_text(text + "......\n", encoding="utf-8")
    part = ranklogs.read(log, "train.log")
    assert len(_series(part.scalars, "loss_1")) == 12 == len(_series(part.scalars, "loss_2"))
    events = part.events
    assert events[events["kind"] == "nan_loss"]["step"].tolist() == [0]


def test_timestamped_step_lines_with_an_accuracy_only(tmp_path: Path) -> None:
    lines = ["2018-04-14T05:55:41.833979 Training for 20000 epochs."]
    for i in range(13):
        lines.append(f"2018-04-14T05:{56 + i // 2:02d}:{(i % 2) * 30:02d}.271397 Step: "
                     f"{200 * i}; Accuracy: {0.04 + (i % 3) / 100}; Time (200 Steps): 37.5")
    s, _ = _read(tmp_path, "\n".join(lines) + "\n")
    got = _series(s, "accuracy")
    assert [step for step, _ in got] == [200 * i for i in range(13)]
    walls = s[s["tag"] == "accuracy"]["wall_time"].tolist()
    assert walls[1] - walls[0] == pytest.approx(30.0)


def test_a_loops_own_history_csv_without_an_epoch_column(tmp_path: Path) -> None:
    # pandas.DataFrame(history).to_csv(path, index=False): the writer many loops use
    history = {"train_loss": [1.74, 1.58, 1.51, 1.46], "train_acc": [52.9, 61.6, 64.3, 66.9],
               "val_loss": [1.85, 1.78, 1.77, 1.76], "val_acc": [64.0, 68.2, 69.7, 69.6]}
    run = tmp_path / "run"
    run.mkdir()
    pd.DataFrame(history).to_csv(run / "training_history.csv", index=False)
    s = autopsy.load_run(run).scalars
    assert _series(s, "loss") == [(0, 1.74), (1, 1.58), (2, 1.51), (3, 1.46)]
    assert _series(s, "eval_loss")[-1] == (3, 1.76)


def test_a_d3rlpy_per_metric_csv(tmp_path: Path) -> None:
    # d3rlpy's CSV logger: one file per metric, rows f"{epoch},{step},{value}"
    run = tmp_path / "run"
    run.mkdir()
    (run / "critic_loss.csv").write_text(
        "".join(f"{e},{e * 1000},{28.4 + e}\n" for e in range(1, 11)), encoding="utf-8")
    (run / "notes.csv").write_text("1,2,3\n4,5,6\n", encoding="utf-8")  # no metric name
    loaded = autopsy.load_run(run)
    got = _series(loaded.scalars, "loss")
    assert got[0] == (1000, 29.4) and got[-1] == (10000, 38.4) and len(got) == 10
    assert {s.path for s in loaded.sources} == {"critic_loss.csv"}


def test_a_keras_excerpt_cut_mid_epoch_keeps_epoch_numbers(tmp_path: Path) -> None:
    # Keras 1 prints finished epochs as "n/n [====] - 6702s - loss: ..." and, while an epoch
    # runs, "k/n [===>...] - ETA: 4147s - loss: ..."; an excerpt without "Epoch N/M" lines
    bars = [f"370784/370784 [==============================] - 6702s - loss: {v:.4f} - acc: "
            f"0.41 - val_loss: {v - 0.02:.4f} - val_acc: 0.39" for v in (1.89, 1.93, 2.0, 2.05)]
    bars.append("137856/370784 [==========>...................] - ETA: 4147s - loss: 2.1578 "
                "- acc: 0.3390")
    s, _ = _read(tmp_path, "\n".join(bars) + "\n")
    assert [step for step, _ in _series(s, "loss")] == [1, 2, 3, 4, 5]
    assert _series(s, "loss")[-1] == (5, 2.1578)


def test_an_epoch_level_loss_that_rises_every_epoch_is_diverging(tmp_path: Path) -> None:
    run = tmp_path / "run"
    run.mkdir()
    history = {"epoch": [0, 1, 2, 3, 4], "loss": [1.889, 1.933, 1.999, 2.048, 2.106],
               "val_loss": [1.87, 1.909, 1.961, 1.945, 2.077]}
    pd.DataFrame(history).to_csv(run / "training.log", index=False)  # CSVLogger's columns
    verdict = autopsy.diagnose(autopsy.load_run(run)).verdict
    assert verdict.family.value == "diverging" and verdict.code == "DIV001"
    # the same rise with one step back is no steady climb: not called a divergence
    history["loss"][2] = 1.92
    pd.DataFrame(history).to_csv(run / "training.log", index=False)
    assert autopsy.diagnose(autopsy.load_run(run)).verdict.family.value != "diverging"


def test_a_long_bare_run_is_streamed_and_integer_runs_are_bounded() -> None:
    from autopsy.readers.ranklogs.structured import BARE_MAX_PENDING, BLOCK_MAX_NAMES, _Reader

    got: list[tuple[int, list]] = []
    reader = _Reader(emit=lambda m, line, wall: got.append((m.step, m.values)))
    n = 50_000
    for i in range(n):
        reader.line(f"{i} {1.0 / (i + 1):.6f}", i + 1)
        assert len(reader.bare) <= BARE_MIN_ROWS  # never the whole run
    reader.flush_bare()
    assert [s for s, _ in got] == list(range(n))  # every row once, in order
    assert got[-1][1] == [("loss", round(1.0 / n, 6))]

    ints = _Reader(emit=lambda m, line, wall: None)
    for i in range(3 * BARE_MAX_PENDING):
        ints.line(f"{i} {i * 7}", i + 1)
        assert len(ints.bare) <= BARE_MAX_PENDING + 1

    block = _Reader(emit=lambda m, line, wall: got.append((m.step, m.values)))
    block.line("Epoch 1", 1)
    block.line(" ".join(f"loss{i}: {i}.5" for i in range(4 * BLOCK_MAX_NAMES)), 2)
    assert len(block.block) == BLOCK_MAX_NAMES


def _stepless_loop(epochs: int = 6, nan_from: int | None = None) -> tuple[str, list[float]]:
    """A hand-written loop that prints its epoch losses with no epoch number, as many do:
    ``print(f"Train Loss: {loss:.4f}, Train Acc: {acc:.2f}")`` then the validation line;
    trained for real on a tiny classifier."""
    import torch
    from torch import nn

    torch.manual_seed(0)
    x = torch.randn(256, 8)
    y = (x[:, 0] > 0).long()
    model = nn.Linear(8, 2)
    opt = torch.optim.SGD(model.parameters(), lr=0.5)
    lines, losses = [], []
    for epoch in range(epochs):
        out = model(x)
        loss = nn.functional.cross_entropy(out, y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        train_loss = float("nan") if nan_from is not None and epoch >= nan_from else loss.item()
        acc = (out.argmax(1) == y).float().mean().item()
        losses.append(float(f"{train_loss:.4f}"))
        lines.append(f"Train Loss: {train_loss:.4f}, Train Acc: {acc:.2f}")
        with torch.no_grad():
            val = nn.functional.cross_entropy(model(x[:64]), y[:64]).item()
        lines.append(f"Val Loss: {val:.4f}")
    return "\n".join(lines) + "\n", losses


def test_stepless_lines_are_numbered_by_their_count(tmp_path: Path) -> None:
    from autopsy.readers.ranklogs.structured import STEPLESS_MIN_LINES

    text, losses = _stepless_loop()
    s, problems = _read(tmp_path, text)
    assert _series(s, "loss") == [(i, v) for i, v in enumerate(losses, 1)]
    assert [step for step, _ in _series(s, "eval_loss")] == list(range(1, 7))
    assert [step for step, _ in _series(s, "accuracy")] == list(range(1, 7))
    (p,) = [p for p in problems if p.kind == "assumed_step"]
    assert p.count == 12 and STEPLESS_MIN_LINES <= 6


def test_near_miss_too_few_stepless_lines_or_a_log_with_steps(tmp_path: Path) -> None:
    text, _ = _stepless_loop(epochs=1)  # one training and one validation line
    s, problems = _read(tmp_path, text)
    assert s.empty and not any(p.kind == "assumed_step" for p in problems)
    # a log whose steps the line parsers read is never numbered by count
    stepped = "".join(f"step {i} loss {1 / i:.4f}\nloss: {2 / i:.4f}\n" for i in range(1, 6))
    s, problems = _read(tmp_path, stepped, "stepped.log")
    assert _series(s, "loss")[:2] == [(1, 1.0), (2, 0.5)]
    assert not any(p.kind == "assumed_step" for p in problems)


def test_a_stepless_loss_gone_nan_is_a_nan_verdict(tmp_path: Path) -> None:
    text, _ = _stepless_loop(epochs=8, nan_from=5)
    (tmp_path / "train.log").write_text(text, encoding="utf-8")
    verdict = autopsy.api.diagnose(autopsy.load_run(tmp_path)).verdict
    assert (verdict.family.value, verdict.step) == ("nan_inf", 6)
