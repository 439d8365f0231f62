"""Paces written as a figure and its unit, and Marian NMT logs, read from text logs.

The lines follow the frameworks' own format strings: tqdm's rate (``2.00it/s``,
``1.52s/it``), Caffe's solver (``Iteration N (X iter/s, Ys/100 iters), loss = Z``), the TF
CIFAR-10 tutorial's ``step N, loss = X (E examples/sec; S sec/batch)``, TF Estimator's
``global_step/sec: X`` lines between its ``loss = X, step = N (T sec)`` lines, DeepSpeed's
throughput timer (``utils/timer.py``), OpenNMT-py's ``src/tgt tok/s``, and Marian's scheduler
(``Ep. N : Up. M : Sen. S : Cost C : Time Ts : W words/s``, ``[valid] ... : metric : V``).
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

import autopsy
from autopsy.readers import ranklogs
from autopsy.signals.steptime import throughput_unit


def _read(tmp_path: Path, text: str) -> pd.DataFrame:
    log = tmp_path / "train.log"
    log.write_text(text, encoding="utf-8")
    part = ranklogs.read(log, "train.log")
    assert part.scalars is not None
    return part.scalars


def _series(s: pd.DataFrame, tag: str) -> list[tuple[int, float]]:
    rows = s[s["tag"] == tag]
    return [(int(a), float(b)) for a, b in zip(rows["step"], rows["value"], strict=True)]


def _raw(s: pd.DataFrame, tag: str) -> set[str]:
    return {str(r) for r in s.loc[s["tag"] == tag, "raw_tag"]}


def test_caffe_iter_per_second(tmp_path: Path) -> None:
    s = _read(tmp_path, (
        "I0728 23:55:39.066728  4259 solver.cpp:218] Iteration 0 (-1.02432e-37 iter/s, "
        "0.199s/100 iters), loss = 2.40473\n"
        "I0728 23:56:00.280272  4259 solver.cpp:218] Iteration 100 (4.71409 iter/s, "
        "21.213s/100 iters), loss = 0.224371\n"
        "I0728 23:56:21.100000  4259 solver.cpp:218] Iteration 200 (4.80000 iter/s, "
        "20.833s/100 iters), loss = 0.15\n"))
    assert _series(s, "loss") == [(0, 2.40473), (100, 0.224371), (200, 0.15)]
    got = _series(s, "throughput")
    assert [g[0] for g in got] == [100, 200] and got[0][1] == pytest.approx(4.71409)
    assert _raw(s, "throughput") == {"iter/s"} and throughput_unit("iter/s") == "steps"


def test_tf_cifar10_examples_per_sec_and_sec_per_batch(tmp_path: Path) -> None:
    s = _read(tmp_path, "".join(
        f"2016-04-13 01:58:{40 + i}.342404: step {i * 10}, loss = {4.5 - i * 0.1:.2f} "
        f"({1200.0 - i * 100:.1f} examples/sec; {0.1 + i * 0.01:.3f} sec/batch)\n"
        for i in range(1, 5)))
    assert [v for _, v in _series(s, "step_time")] == pytest.approx([0.11, 0.12, 0.13, 0.14])
    assert [st for st, _ in _series(s, "throughput")] == [10, 20, 30, 40]
    assert _raw(s, "throughput") == {"examples/sec"}
    assert throughput_unit("examples/sec") == "samples"


def test_tf_estimator_global_step_per_sec_lines(tmp_path: Path) -> None:
    s = _read(tmp_path, (
        "INFO:tensorflow:loss = 0.37087572, step = 30 (0.877 sec)\n"
        "INFO:tensorflow:global_step/sec: 11.4237\n"
        "INFO:tensorflow:loss = 0.35228056, step = 40 (0.875 sec)\n"
        "INFO:tensorflow:global_step/sec: 11.5256\n"
        "INFO:tensorflow:loss = 0.3553083, step = 50 (0.868 sec)\n"))
    assert [st for st, _ in _series(s, "loss")] == [30, 40, 50]
    # each pace belongs to the interval that ended at the last step before it
    assert _series(s, "throughput") == [(30, pytest.approx(11.4237)),
                                        (40, pytest.approx(11.5256))]
    assert _raw(s, "throughput") == {"steps_per_second"}


def test_tf_pace_line_before_any_step_is_dropped(tmp_path: Path) -> None:
    s = _read(tmp_path, ("INFO:tensorflow:global_step/sec: 0\n"
                         "INFO:tensorflow:loss = 2.62153, step = 1, precision = 0.0703125\n"))
    assert _series(s, "throughput") == []
    assert _series(s, "loss") == [(1, pytest.approx(2.62153))]


def test_deepspeed_throughput_timer(tmp_path: Path) -> None:
    s = _read(tmp_path, (
        "[2023-11-07 01:55:23,711] [INFO] [logging.py:96:log_dist] [Rank 0] step=10, "
        "skipped=4, lr=[4.99804827338393e-05, 4.99804827338393e-05], mom=[(0.9, 0.95), "
        "(0.9, 0.95)]\n"
        "[2023-11-07 01:55:23,714] [INFO] [timer.py:260:stop] epoch=0/micro_step=40/"
        "global_step=10, RunningAvgSamplesPerSec=25.025771473496132, "
        "CurrSamplesPerSec=25.704280480541442, MemAllocated=4.32GB, MaxMemAllocated=38.49GB\n"
        # DeepSpeed before 0.6 printed no global step: the step line's step is taken
        "[2022-08-29 06:58:56,121] [INFO] [logging.py:68:log_dist] [Rank 0] step=20, "
        "skipped=17, lr=[5e-05], mom=[(0.9, 0.999)]\n"
        "[2022-08-29 06:58:56,176] [INFO] [timer.py:198:stop] 0/20, "
        "RunningAvgSamplesPerSec=232.7340551694273, CurrSamplesPerSec=227.48090316379353, "
        "MemAllocated=0.36GB, MaxMemAllocated=15.06GB\n"))
    assert _series(s, "throughput") == [(10, pytest.approx(25.704280480541442)),
                                        (20, pytest.approx(227.48090316379353))]
    assert throughput_unit("CurrSamplesPerSec") == "samples"


def test_tqdm_rate_beside_a_loss(tmp_path: Path) -> None:
    s = _read(tmp_path, "".join(
        f"Epoch 0:  {i * 10}%|█         | {i * 100}/1000 [00:{i * 10:02d}<01:30, "
        f"{10.0 - i:.2f}it/s, loss={2.0 - i * 0.1:.3f}]\n" for i in range(1, 5)))
    assert [v for _, v in _series(s, "throughput")] == pytest.approx([9.0, 8.0, 7.0, 6.0])
    assert _raw(s, "throughput") == {"it/s"}
    s = _read(tmp_path, "".join(
        f"Epoch 0:  {i * 10}%|█         | {i * 100}/1000 [00:{i * 10:02d}<01:30, "
        f"{1.5 + i:.2f}s/it, loss={2.0 - i * 0.1:.3f}]\n" for i in range(1, 5)))
    assert [v for _, v in _series(s, "step_time")] == pytest.approx([2.5, 3.5, 4.5, 5.5])


def test_opennmt_tokens_per_second(tmp_path: Path) -> None:
    s = _read(tmp_path, "".join(
        f"[2019-01-01 12:00:{i:02d},000 INFO] Step {i * 100}/200000; acc:   5.00; ppl: "
        f"5000.00; xent: 8.5; lr: 0.00001; {5000 - i * 300}/{6000 - i * 300} tok/s;"
        f"     {60 * i} sec\n" for i in range(1, 4)))
    assert _series(s, "throughput") == [(100, 5700.0), (200, 5400.0), (300, 5100.0)]
    assert throughput_unit("tokens/s") == "tokens"


def test_a_line_with_its_own_pace_gets_no_second_one(tmp_path: Path) -> None:
    s = _read(tmp_path, (
        "INFO:root:Epoch[0] Batch [100]\tSpeed: 512.30 samples/sec\taccuracy=0.500000\n"
        "INFO:root:Epoch[0] Batch [200]\tSpeed: 480.10 samples/sec\taccuracy=0.600000\n"))
    assert len(_series(s, "throughput")) == 2


MARIAN = (
    "[2017-12-05 15:03:37] Training started\n"
    "[2017-12-05 15:09:59] Ep. 1 : Up. 1000 : Sen. 81308 : Cost 84.54 : Time 382.09s : "
    "2688.68 words/s\n"
    "[2017-12-05 15:16:20] Ep. 1 : Up. 2000 : Sen. 162,616 : Cost 70.12 : Time 381.00s : "
    "2690.10 words/s : L.r. 1.0000e-04\n"
    "[2017-12-05 15:16:30] [valid] Ep. 1 : Up. 2000 : cross-entropy : 53.9433 : new best\n"
    "[2017-12-05 15:16:40] [valid] Ep. 1 : Up. 2000 : bleu : 26.4827 : new best\n"
    "[2017-12-05 15:22:41] Ep. 2 : Up. 3000 : Sen. 12,000 : Cost 65.00 : Time 380.50s : "
    "2700.00 words/s : L.r. 1.0000e-04\n"
)


def test_marian_train_and_valid_lines(tmp_path: Path) -> None:
    s = _read(tmp_path, MARIAN)
    assert _series(s, "loss") == [(1000, 84.54), (2000, 70.12), (3000, 65.0)]
    assert _series(s, "learning_rate") == [(2000, 1e-4), (3000, 1e-4)]
    assert [st for st, _ in _series(s, "throughput")] == [1000, 2000, 3000]
    assert _raw(s, "throughput") == {"words/s"} and throughput_unit("words/s") == "tokens"
    assert _series(s, "eval_loss") == [(2000, 53.9433)]
    assert _raw(s, "eval_loss") == {"valid_loss"}
    assert [v for _, v in _series(s, "valid_bleu")] == [26.4827]


def test_marian_run_directory_is_readable(tmp_path: Path) -> None:
    (tmp_path / "train.log").write_text(MARIAN, encoding="utf-8")
    run = autopsy.load_run(tmp_path)
    assert set(run.scalars["tag"]) >= {"loss", "eval_loss", "throughput"}
