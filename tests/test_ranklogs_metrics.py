"""Rank logs: per-step metrics (HF dicts, Megatron, DeepSpeed, fairseq, generic)."""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd
import pytest

from autopsy.readers import ranklogs
from autopsy.readers.ranklogs.metrics import parse_metrics


def _scalars(tmp_path: Path, text: str, name: str = "stdout.log") -> tuple[pd.DataFrame, list]:
    log = tmp_path / name
    log.write_bytes(text.encode())
    part = ranklogs.read(log, name)
    return part.scalars, part.problems


def test_hf_dicts_take_their_step_from_the_tqdm_bar(tmp_path: Path) -> None:
    bar = " {n}%|#  | {n}/100 [00:00<00:01, 49.90it/s]"
    text = (
        "\r" + bar.format(n=4) + "\r      \r{'loss': '3.235', 'grad_norm': '0.9572', "
        "'learning_rate': '0.004', 'epoch': '0.1562'}\n"
        "\r" + bar.format(n=5) + "\r" + bar.format(n=6) + "\r      \r{'loss': nan, "
        "'grad_norm': 1.5, 'learning_rate': 5e-05, 'epoch': 0.31}\n"
        "\r" + bar.format(n=10) + "\n"
        "{'train_runtime': 1.5, 'train_samples_per_second': 3.0, 'train_loss': 2.0, "
        "'epoch': 1.0}\n"
    )
    s, problems = _scalars(tmp_path, text)
    loss = s[s["tag"] == "loss"]
    assert loss["step"].tolist() == [5, 10]
    assert loss["value"].iloc[0] == 3.235 and math.isnan(loss["value"].iloc[1])
    assert set(s["raw_tag"].astype(str)) == {"loss", "grad_norm", "learning_rate", "epoch"}
    assert problems == []
    assert s["rank"].isna().all()


def test_hf_dicts_without_a_bar_are_numbered_and_said_so(tmp_path: Path) -> None:
    text = (
        "TrainingArguments(\nlogging_steps=10,\n)\n"
        "{'loss': 1.0, 'learning_rate': 5e-05, 'epoch': 0.1}\n"
        "{'loss': 0.9, 'learning_rate': 5e-05, 'epoch': 0.2}\n"
        "{'eval_loss': 0.95, 'epoch': 0.2}\n"
    )
    s, problems = _scalars(tmp_path, text)
    assert s[s["tag"] == "loss"]["step"].tolist() == [10, 20]
    assert s[s["tag"] == "eval_loss"]["step"].tolist() == [20]
    assert [p.kind for p in problems] == ["step_guessed"]
    assert problems[0].count == 3
    s, problems = _scalars(tmp_path, "{'loss': 1.0}\n{'loss': 0.5}\n", "rank1.log")
    assert s["step"].tolist() == [1, 2] and s["rank"].tolist() == [1, 1]
    assert "logging_steps unknown" in problems[0].what


def test_megatron_line() -> None:
    line = (" iteration      100/  500000 | consumed samples:        51200 | elapsed time per "
            "iteration (ms): 1234.5 | learning rate: 1.500E-04 | global batch size:   512 | "
            "lm loss: 6.123456E+00 | loss scale: 65536.0 | grad norm: 1.234 | number of "
            "skipped iterations:   0 | number of nan iterations:   0 |")
    got = parse_metrics(line)
    assert got is not None and got.step == 100
    values = dict(got.values)
    assert values["lm loss"] == 6.123456
    assert values["loss scale"] == 65536.0
    assert values["grad norm"] == 1.234
    assert values["number of skipped iterations"] == 0
    assert values["elapsed time per iteration (ms)"] == 1234.5
    assert values["learning rate"] == 1.5e-4


def test_deepspeed_step_line_and_rank(tmp_path: Path) -> None:
    text = ("[2023-03-01 10:00:00,000] [INFO] [logging.py:96:log_dist] [Rank 0] step=10, "
            "skipped=2, lr=[0.0001, 0.0001], mom=[(0.9, 0.999), (0.9, 0.999)]\n")
    s, _ = _scalars(tmp_path, text, "node01.log")
    assert s["step"].tolist() == [10, 10]
    assert dict(zip(s["raw_tag"].astype(str), s["value"], strict=True)) == {
        "skipped": 2.0, "lr": 1e-4}
    assert s["rank"].tolist() == [0, 0]
    assert not s["wall_time"].isna().any()


def test_fairseq_lines() -> None:
    legacy = ("| epoch 001 | loss 5.123 | nll_loss 3.2 | ppl 9.2 | num_updates 100 | lr 0.0005 "
              "| gnorm 1.2 | loss_scale 64")
    got = parse_metrics(legacy)
    assert got is not None and got.step == 100
    assert dict(got.values)["loss_scale"] == 64 and dict(got.values)["loss"] == 5.123
    hydra = ("2021-01-01 00:00:00 | INFO | train_inner | epoch 001:    100 / 1000 loss=5.123, "
             "nll_loss=3.2, ppl=9.2, num_updates=100, lr=0.0005, gnorm=1.2, loss_scale=64")
    got = parse_metrics(hydra)
    assert got is not None and got.step == 100 and dict(got.values)["gnorm"] == 1.2


def test_generic_step_loss_lines_with_timestamps(tmp_path: Path) -> None:
    text = (
        "2026-11-22 14:55:12,972 INFO step 1 loss 1.5219 mean_loss 1.4190 grad_norm 0.6037 "
        "lr 0.100000\n"
        "2026-11-22 14:55:12,992 INFO step 2 loss nan mean_loss 1.4259 grad_norm inf lr 0.1\n"
        "step 3: loss=0.7 grad_norm=1.2 learning_rate=0.0375\n"
        "this line mentions loss but has no step\n"
    )
    s, _ = _scalars(tmp_path, text, "rank2.log")
    loss = s[s["tag"] == "loss"]
    assert loss["step"].tolist() == [1, 2, 3]
    assert math.isnan(loss["value"].iloc[1])
    assert loss["wall_time"].iloc[1] - loss["wall_time"].iloc[0] == pytest.approx(0.02, abs=1e-5)
    assert "mean_loss" not in set(s["raw_tag"].astype(str))
    assert set(s["tag"].astype(str)) == {"loss", "grad_norm", "learning_rate"}
    gn = s[s["tag"] == "grad_norm"]["value"].tolist()
    assert gn[1] == math.inf


def test_first_nan_loss_per_rank_is_an_event(tmp_path: Path) -> None:
    text = "".join(f"[rank{r}]: step {s} loss {'nan' if s >= 3 and r == 1 else 1.0}\n"
                   for s in range(1, 6) for r in range(2))
    log = tmp_path / "train.log"
    log.write_text(text)
    ev = ranklogs.read(log, "train.log").events
    assert ev["kind"].tolist() == ["nan_loss"]
    assert (ev["rank"].iloc[0], ev["step"].iloc[0], ev["line"].iloc[0]) == (1, 3, 6)
    assert ev["details"].iloc[0]["value"] == "nan"


def test_generic_lines_give_their_timing_fields() -> None:
    got = parse_metrics("2026-11-22 16:34:23,962 INFO step 5 loss 1.4269 lr 0.100000 "
                        "data_time 0.1004 compute_time 0.0008")
    assert got is not None and got.step == 5
    assert dict(got.values) == {"loss": 1.4269, "lr": 0.1, "data_time": 0.1004,
                                "compute_time": 0.0008}
    timed = parse_metrics("iter 12 loss=2.5 time: 0.31 eta 0:01:02")
    assert timed is not None and dict(timed.values) == {"loss": 2.5, "time": 0.31}
    # "time" alone is a field only with ":" or "=" (not "in time 3 of 5")
    plain = parse_metrics("step 3 loss 1.0 done in time 3")
    assert plain is not None and dict(plain.values) == {"loss": 1.0}


def test_a_metric_named_with_its_phase_keeps_the_phase() -> None:
    """distance-encoding's absl print (snap-stanford/distance-encoding#6): the best-so-far
    and the test accuracy are neither the training nor the validation accuracy."""
    line = ("I1112 15:56:44.818868 140547172456256 train.py:23] epoch 210 best test acc: "
            "0.9120, train loss: 1.3633; train acc: 0.5000 val acc: 0.5000 test acc: 0.5000")
    got = parse_metrics(line)
    assert got is not None and got.step == 210
    assert dict(got.values) == {"train_loss": 1.3633, "best_test_acc": 0.912,
                                "train_acc": 0.5, "val_acc": 0.5, "test_acc": 0.5}
    from autopsy.model.scalars import make_scalars
    frame = make_scalars([210] * len(got.values), [k for k, _ in got.values],
                         [v for _, v in got.values], source="train.log")
    # the test accuracy is a held-out accuracy too, but where the validation accuracy is
    # written on the same step that one is the eval accuracy, and the test one stays apart
    assert list(frame["tag"]) == ["loss", "best_test_acc", "accuracy", "eval_accuracy",
                                  "test_acc"]
