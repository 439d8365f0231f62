#!/usr/bin/env python
"""Make the small real training runs kept in ``sample_runs/``.

Every run here is *real*: a tiny model (GPT-2 or BERT built from a config, no download) is
trained on CPU on synthetic data made in code, with the Hugging Face ``Trainer``, and the run
directory holds exactly what the Trainer left behind (TensorBoard event files,
``trainer_state.json``, ``training_args.bin``, ``checkpoint-N/`` folders) plus ``train.log``,
the captured stdout/stderr of the training process(es).

Each training launch runs in a child process (``python make.py --_child NAME --_launch K``)
whose stdout and stderr go to ``<run>/train.log``, as ``python train.py > train.log 2>&1``
would; its working directory is the parent of the output folder, so the paths the Trainer
records are relative (``sample_runs/<name>``). After the launches, a self-check reads the
run back, asserts the situation really happened, and computes the run's expected facts,
which go to ``labels.json``; ``README.md`` is rewritten from them.

Usage::

    python sample_runs/make.py                 # regenerate every run
    python sample_runs/make.py NAME [NAME...]  # regenerate the named runs only
    python sample_runs/make.py --list          # list the runs
    python sample_runs/make.py --out DIR       # write somewhere else (default: beside this file)

Needs torch, transformers, accelerate and tensorboard; reading the committed outputs does not.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

os.environ["HF_HUB_OFFLINE"] = "1"  # never touch the Hub: models are built from configs
os.environ["TRANSFORMERS_OFFLINE"] = "1"
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

HERE = Path(__file__).resolve().parent
SEED = 0
VOCAB = 32  # tokens of the synthetic tasks
SEQ_LEN = 16  # tokens per example
SPIKE_FACTOR = 10.0  # a grad-norm "spike" is at least this many times the earlier median
LOG_NAME = "train.log"
TB_SUBDIR = "runs"  # TensorBoard logging dir, inside the run dir

# --------------------------------------------------------------------------------------------
# The training side (runs in the child process; imports torch/transformers lazily)
# --------------------------------------------------------------------------------------------


def _seed_everything() -> None:
    """Fix every seed and ask torch for deterministic kernels on one thread."""
    import torch
    from transformers import set_seed

    torch.set_num_threads(1)
    torch.use_deterministic_algorithms(True)
    set_seed(SEED)


def _progressions(n: int, seed: int) -> Any:
    """A next-token dataset: arithmetic progressions ``a, a+d, a+2d, ... (mod VOCAB)``.

    Learnable by a one-layer GPT-2: after two tokens the rest of the sequence is determined.
    """
    import torch
    from torch.utils.data import Dataset

    class Progressions(Dataset):  # type: ignore[type-arg]
        """Synthetic arithmetic progressions; ``labels`` = ``input_ids`` (the model shifts)."""

        def __init__(self) -> None:
            g = torch.Generator().manual_seed(seed)
            start = torch.randint(0, VOCAB, (n, 1), generator=g)
            step = torch.randint(1, 4, (n, 1), generator=g)
            self.ids = (start + step * torch.arange(SEQ_LEN)) % VOCAB

        def __len__(self) -> int:
            return len(self.ids)

        def __getitem__(self, i: int) -> dict[str, Any]:
            return {"input_ids": self.ids[i], "labels": self.ids[i]}

    return Progressions()


def _first_token_rule(n: int, seed: int, label_noise: float) -> Any:
    """A classification dataset over tokens 1..4: label = 1 if the first token is 1 or 2.

    ``label_noise`` of the labels are flipped, so that a model that memorises a small train
    set (rather than the rule) gets worse on the clean held-out set.
    """
    import torch
    from torch.utils.data import Dataset

    class FirstTokenRule(Dataset):  # type: ignore[type-arg]
        """Random sequences; the label depends on the first token only (plus noise)."""

        def __init__(self) -> None:
            g = torch.Generator().manual_seed(seed)
            self.ids = torch.randint(1, 5, (n, SEQ_LEN), generator=g)
            label = (self.ids[:, 0] <= 2).long()
            flip = torch.rand(n, generator=g) < label_noise
            self.labels = torch.where(flip, 1 - label, label)

        def __len__(self) -> int:
            return len(self.ids)

        def __getitem__(self, i: int) -> dict[str, Any]:
            return {"input_ids": self.ids[i], "labels": self.labels[i]}

    return FirstTokenRule()


def _tiny_gpt2() -> Any:
    """A one-layer GPT-2 with a 32-wide residual stream (about 10k parameters)."""
    from transformers import GPT2Config, GPT2LMHeadModel

    config = GPT2Config(
        vocab_size=VOCAB,
        n_positions=SEQ_LEN,
        n_embd=32,
        n_layer=1,
        n_head=2,
        n_inner=64,
        resid_pdrop=0.0,
        embd_pdrop=0.0,
        attn_pdrop=0.0,
        bos_token_id=0,
        eos_token_id=0,
    )
    return GPT2LMHeadModel(config)


def _tiny_bert() -> Any:
    """A one-layer BERT sequence classifier with a 32-wide hidden state."""
    from transformers import BertConfig, BertForSequenceClassification

    config = BertConfig(
        vocab_size=VOCAB,
        hidden_size=32,
        num_hidden_layers=1,
        num_attention_heads=2,
        intermediate_size=37,
        max_position_embeddings=SEQ_LEN,
        hidden_dropout_prob=0.0,
        attention_probs_dropout_prob=0.0,
        num_labels=2,
    )
    return BertForSequenceClassification(config)


def _args(output_dir: str, **kwargs: Any) -> Any:
    """``TrainingArguments`` with the settings every sample run shares, updated by kwargs."""
    from transformers import TrainingArguments

    base: dict[str, Any] = {
        "output_dir": output_dir,
        "seed": SEED,
        "data_seed": SEED,
        "full_determinism": True,
        "use_cpu": True,
        "dataloader_num_workers": 0,
        "report_to": ["tensorboard"],
        "disable_tqdm": False,
        "per_device_train_batch_size": 16,
        "per_device_eval_batch_size": 64,
    }
    base.update(kwargs)
    return TrainingArguments(**base)


def _train_healthy(output_dir: str, launch: int) -> None:
    """A healthy run: warmup, clipping, a sensible LR; loss and eval loss both fall."""
    from transformers import Trainer

    del launch
    _seed_everything()
    args = _args(
        output_dir,
        max_steps=100,
        learning_rate=1e-2,
        warmup_steps=10,
        lr_scheduler_type="linear",
        max_grad_norm=1.0,
        weight_decay=0.01,
        logging_steps=5,
        eval_strategy="steps",
        eval_steps=20,
        save_steps=50,
        save_total_limit=2,
    )
    trainer = Trainer(
        model=_tiny_gpt2(),
        args=args,
        train_dataset=_progressions(512, seed=1),
        eval_dataset=_progressions(128, seed=2),
    )
    trainer.train()
    trainer.save_model()
    trainer.save_state()


NAN_LR = 2.8  # found by a scan (2.0-3.2): ~20 stable steps, then the grad norm explodes


def _train_nan(output_dir: str, launch: int) -> None:
    """Plain SGD at a far too high constant LR, no warmup, no clipping, NaN filter off."""
    from transformers import Trainer

    del launch
    _seed_everything()
    args = _args(
        output_dir,
        max_steps=40,
        optim="sgd",
        learning_rate=NAN_LR,
        warmup_steps=0,
        lr_scheduler_type="constant",
        max_grad_norm=0.0,  # 0 disables clipping in the HF Trainer
        weight_decay=0.0,
        logging_steps=1,
        logging_nan_inf_filter=False,  # log the NaN loss as it is
        eval_strategy="no",
        save_steps=20,
        save_total_limit=2,
    )
    trainer = Trainer(model=_tiny_gpt2(), args=args, train_dataset=_progressions(512, seed=1))
    trainer.train()
    trainer.save_model()
    trainer.save_state()


RESUME_SAVE_STEPS = 10
RESUME_CRASH_AFTER = 25  # the first launch dies while starting step 26
RESUME_MAX_STEPS = 40
RESUME_FROM = RESUME_CRASH_AFTER // RESUME_SAVE_STEPS * RESUME_SAVE_STEPS  # checkpoint-20


def _train_resumed(output_dir: str, launch: int) -> None:
    """Launch 0 crashes after step 25; launch 1 resumes from checkpoint-20 and finishes."""
    from transformers import Trainer, TrainerCallback

    class CrashAfter(TrainerCallback):  # type: ignore[misc]
        """Raise when the step after ``step`` begins: a real crash, with a traceback."""

        def __init__(self, step: int) -> None:
            self.step = step

        def on_step_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
            if state.global_step == self.step:
                raise RuntimeError(
                    f"sample_runs: simulated crash (node lost) at step {state.global_step + 1}"
                )

    _seed_everything()
    args = _args(
        output_dir,
        max_steps=RESUME_MAX_STEPS,
        learning_rate=3e-3,
        warmup_steps=4,
        lr_scheduler_type="linear",
        max_grad_norm=1.0,
        logging_steps=1,
        eval_strategy="steps",
        eval_steps=RESUME_SAVE_STEPS,
        save_steps=RESUME_SAVE_STEPS,
        save_total_limit=3,
    )
    callbacks = [CrashAfter(RESUME_CRASH_AFTER)] if launch == 0 else []
    trainer = Trainer(
        model=_tiny_gpt2(),
        args=args,
        train_dataset=_progressions(512, seed=1),
        eval_dataset=_progressions(128, seed=2),
        callbacks=callbacks,
    )
    if launch == 0:
        trainer.train()
    else:
        trainer.train(resume_from_checkpoint=f"{output_dir}/checkpoint-{RESUME_FROM}")
    trainer.save_model()
    trainer.save_state()


def _train_overfit(output_dir: str, launch: int) -> None:
    """Many epochs over 32 noisy examples: the model memorises, held-out loss turns up."""
    from transformers import Trainer

    del launch
    _seed_everything()
    args = _args(
        output_dir,
        max_steps=160,
        learning_rate=3e-3,
        warmup_steps=8,
        lr_scheduler_type="constant_with_warmup",
        max_grad_norm=1.0,
        weight_decay=0.0,
        logging_steps=5,
        eval_strategy="steps",
        eval_steps=10,
        save_steps=80,
        save_total_limit=2,
    )
    trainer = Trainer(
        model=_tiny_bert(),
        args=args,
        train_dataset=_first_token_rule(32, seed=1, label_noise=0.2),
        eval_dataset=_first_token_rule(256, seed=2, label_noise=0.0),
    )
    trainer.train()
    trainer.save_model()
    trainer.save_state()


# --------------------------------------------------------------------------------------------
# Reading a run back (parent process)
# --------------------------------------------------------------------------------------------


def _event_files(run_dir: Path) -> list[Path]:
    """Every TensorBoard event file under the run, oldest first (by first wall time)."""
    files = sorted(run_dir.rglob("events.out.tfevents.*"))
    return sorted(files, key=lambda p: (_first_wall_time(p), p.name))


def _iter_events(path: Path) -> Iterator[Any]:
    """The ``Event`` protos of one event file."""
    from tensorboard.backend.event_processing.event_file_loader import EventFileLoader

    yield from EventFileLoader(str(path)).Load()


def _first_wall_time(path: Path) -> float:
    """Wall time of the first record of an event file."""
    for event in _iter_events(path):
        return float(event.wall_time)
    return math.inf


def _tb_scalars(path: Path) -> dict[str, list[tuple[int, float]]]:
    """``{tag: [(step, value), ...]}`` for the simple-value scalars of one event file."""
    out: dict[str, list[tuple[int, float]]] = {}
    for event in _iter_events(path):
        if not event.HasField("summary"):
            continue
        for value in event.summary.value:
            if value.HasField("simple_value"):
                number = float(value.simple_value)
            elif value.metadata.plugin_data.plugin_name == "scalars" and value.tensor.float_val:
                number = float(value.tensor.float_val[0])  # the loader migrates to tensors
            else:
                continue
            out.setdefault(value.tag, []).append((int(event.step), number))
    return out


def _segments(run_dir: Path) -> list[dict[str, Any]]:
    """Split the event files into segments: a new one starts when steps go back."""
    segments: list[dict[str, Any]] = []
    last_max = -1
    for path in _event_files(run_dir):
        steps = sorted({s for pts in _tb_scalars(path).values() for s, _ in pts})
        if not steps:
            continue
        if not segments or steps[0] <= last_max:
            segments.append({"files": [], "first_step": steps[0], "last_step": steps[-1]})
        seg = segments[-1]
        seg["files"].append(path.relative_to(run_dir).as_posix())
        seg["last_step"] = max(seg["last_step"], steps[-1])
        last_max = max(last_max, steps[-1])
    return segments


CONFIG_KEYS = (
    "optim",
    "learning_rate",
    "lr_scheduler_type",
    "warmup_steps",
    "max_grad_norm",
    "weight_decay",
    "max_steps",
    "per_device_train_batch_size",
    "gradient_accumulation_steps",
    "logging_steps",
    "logging_nan_inf_filter",
    "eval_steps",
    "save_steps",
    "fp16",
    "bf16",
    "seed",
)


def _config(run_dir: Path) -> dict[str, Any]:
    """The run's TrainingArguments as the Trainer logged them (TensorBoard ``args`` text)."""
    for path in _event_files(run_dir):
        for event in _iter_events(path):
            for value in event.summary.value if event.HasField("summary") else ():
                if value.tag.startswith("args/") and value.tensor.string_val:
                    args = json.loads(value.tensor.string_val[0].decode("utf-8"))
                    return {k: args[k] for k in CONFIG_KEYS if k in args}
    raise SelfCheckError("no TrainingArguments text summary in the event files")


def _state(run_dir: Path) -> dict[str, Any]:
    """The root ``trainer_state.json``."""
    with open(run_dir / "trainer_state.json", encoding="utf-8") as f:
        return json.load(f)


def _history(state: dict[str, Any], key: str) -> list[tuple[int, float]]:
    """``[(step, value)]`` for one key of ``log_history``."""
    return [(int(h["step"]), float(h[key])) for h in state["log_history"] if key in h]


def _checkpoints(run_dir: Path) -> list[int]:
    """Steps of the ``checkpoint-N`` folders, ascending."""
    steps = [int(p.name.split("-")[1]) for p in run_dir.glob("checkpoint-*") if p.is_dir()]
    return sorted(steps)


CHECKPOINT_FILES = (
    "model.safetensors",
    "optimizer.pt",
    "scheduler.pt",
    "rng_state.pth",
    "trainer_state.json",
    "training_args.bin",
)


class SelfCheckError(AssertionError):
    """The run did not show the situation it was made for."""


def _require(cond: bool, what: str) -> None:
    """Fail loudly (whatever ``python -O`` says) when ``cond`` is false."""
    if not cond:
        raise SelfCheckError(what)


def _common_checks(run_dir: Path, state: dict[str, Any]) -> None:
    """Checks every run must pass: the files the Trainer writes are there."""
    _require((run_dir / LOG_NAME).stat().st_size > 0, "train.log is empty")
    log = (run_dir / LOG_NAME).read_text(encoding="utf-8", errors="replace")
    _require("{'loss':" in log, "train.log has no printed {'loss': ...} dicts")
    _require((run_dir / "training_args.bin").is_file(), "no training_args.bin")
    ckpts = _checkpoints(run_dir)
    _require(len(ckpts) >= 1, "no checkpoint-N folder")
    for step in ckpts:
        for name in CHECKPOINT_FILES:
            _require(
                (run_dir / f"checkpoint-{step}" / name).is_file(), f"checkpoint-{step} lacks {name}"
            )
    _require(len(_event_files(run_dir)) >= 1, "no TensorBoard event file")
    _require(state["global_step"] == state["max_steps"], "training did not reach max_steps")


def _first_last(points: list[tuple[int, float]]) -> tuple[float, float]:
    """First and last value of a series."""
    return points[0][1], points[-1][1]


def _check_healthy(run_dir: Path) -> dict[str, Any]:
    """Loss and eval loss both fall clearly; everything finite; one segment."""
    state = _state(run_dir)
    _common_checks(run_dir, state)
    loss = _history(state, "loss")
    eval_loss = _history(state, "eval_loss")
    _require(len(eval_loss) >= 2, "eval_loss not logged")
    _require(all(math.isfinite(v) for _, v in loss + eval_loss), "non-finite loss")
    (l0, l1), (e0, e1) = _first_last(loss), _first_last(eval_loss)
    _require(l1 < 0.6 * l0, f"train loss did not fall clearly: {l0:.3f} -> {l1:.3f}")
    _require(e1 < 0.6 * e0, f"eval loss did not fall clearly: {e0:.3f} -> {e1:.3f}")
    segments = _segments(run_dir)
    _require(len(segments) == 1, f"expected one segment, got {len(segments)}")
    return {
        "family": "healthy",
        "cause": None,
        "first_bad_step": None,
        "steps": state["global_step"],
        "segments": 1,
        "loss_first": round(l0, 4),
        "loss_last": round(l1, 4),
        "eval_loss_first": round(e0, 4),
        "eval_loss_last": round(e1, 4),
        "checkpoints": _checkpoints(run_dir),
        "config": _config(run_dir),
    }


def _spike_step(grad_norm: list[tuple[int, float]], before: int) -> tuple[int, float] | None:
    """First step before ``before`` whose finite grad norm is ≥ SPIKE_FACTOR × the earlier median.

    Returns the step and its ratio to the median, or None.
    """
    earlier: list[float] = []
    for step, value in grad_norm:
        if step >= before or not math.isfinite(value):
            break
        if len(earlier) >= 3:
            median = statistics.median(earlier)
            if value >= SPIKE_FACTOR * median:
                return step, value / median
        earlier.append(value)
    return None


def _check_nan(run_dir: Path) -> dict[str, Any]:
    """The loss goes NaN after a grad-norm spike, and training goes on logging NaN."""
    state = _state(run_dir)
    _common_checks(run_dir, state)
    loss = _history(state, "loss")
    grad_norm = _history(state, "grad_norm")
    nan_steps = [s for s, v in loss if math.isnan(v)]
    _require(bool(nan_steps), "the loss never went NaN")
    first_nan = nan_steps[0]
    _require(all(math.isfinite(v) for s, v in loss if s < first_nan), "non-finite loss before NaN")
    _require(len(nan_steps) >= 3, "training did not go on after the NaN")
    spike = _spike_step(grad_norm, first_nan)
    _require(spike is not None, f"no grad-norm spike ≥ {SPIKE_FACTOR}x median before NaN")
    assert spike is not None
    spike_step, ratio = spike
    _require(spike_step < first_nan, "spike is not before the NaN")
    first_nonfinite_grad = next(s for s, v in grad_norm if not math.isfinite(v))
    # the TensorBoard file must show the NaN too
    (tb_file,) = _event_files(run_dir)
    tb_loss = dict(_tb_scalars(tb_file)["train/loss"])
    _require(math.isnan(tb_loss[first_nan]), "TensorBoard loss is not NaN at the first NaN step")
    _require(len(_segments(run_dir)) == 1, "expected one segment")
    finite_before = [v for s, v in grad_norm if s < spike_step]
    config = _config(run_dir)
    _require(config["max_grad_norm"] == 0.0 and config["warmup_steps"] == 0, "config drifted")
    return {
        "family": "nan_inf",
        "cause": "lr_too_high",
        "contributing": ["no_clipping", "no_warmup"],
        "first_bad_step": first_nan,
        "first_nan_step": first_nan,
        "spike_step": spike_step,
        "spike_ratio_to_median": round(ratio, 2),
        "grad_norm_median_before_spike": round(statistics.median(finite_before), 4),
        "first_nonfinite_grad_norm_step": first_nonfinite_grad,
        "nan_loss_steps": len(nan_steps),
        "steps": state["global_step"],
        "segments": 1,
        "checkpoints": _checkpoints(run_dir),
        "config": config,
    }


def _check_resumed(run_dir: Path) -> dict[str, Any]:
    """Two launches: a crash after step 25, a resume from checkpoint-20 to the end."""
    state = _state(run_dir)
    _common_checks(run_dir, state)
    log = (run_dir / LOG_NAME).read_text(encoding="utf-8", errors="replace")
    _require("Traceback (most recent call last)" in log, "no traceback from the first launch")
    _require("simulated crash" in log, "the crash message is not in train.log")
    segments = _segments(run_dir)
    _require(len(segments) == 2, f"expected two segments, got {len(segments)}")
    seg0, seg1 = segments
    _require(len(seg0["files"]) == 1 and len(seg1["files"]) == 1, "expected one file per segment")
    _require(seg0["last_step"] == RESUME_CRASH_AFTER, f"segment 0 ends at {seg0['last_step']}")
    resumed_from = RESUME_FROM
    _require(resumed_from in _checkpoints(run_dir), f"checkpoint-{resumed_from} is gone")
    _require(seg1["first_step"] == resumed_from + 1, f"segment 1 starts at {seg1['first_step']}")
    _require(seg1["last_step"] == RESUME_MAX_STEPS, "segment 1 did not reach max_steps")
    loss_steps = [s for s, _ in _history(state, "loss")]
    _require(loss_steps == list(range(1, RESUME_MAX_STEPS + 1)), "trainer_state log_history gaps")
    loss = _history(state, "loss")
    l0, l1 = _first_last(loss)
    _require(l1 < 0.7 * l0, "loss did not fall")
    return {
        "family": "healthy",
        "cause": None,
        "note": f"launch 1 crashed (traceback) after step {seg0['last_step']}; launch 2 "
        f"resumed from checkpoint-{resumed_from} and finished",
        "crash": {"family": "crash", "cause": "exception", "after_step": seg0["last_step"]},
        "first_bad_step": None,
        "steps": state["global_step"],
        "segments": 2,
        "restart_step": seg1["first_step"],
        "crash_after_step": seg0["last_step"],
        "resumed_from_checkpoint": resumed_from,
        "segment_steps": [[s["first_step"], s["last_step"]] for s in segments],
        "segment_files": [s["files"] for s in segments],
        "checkpoints": _checkpoints(run_dir),
        "config": _config(run_dir),
    }


def _check_overfit(run_dir: Path) -> dict[str, Any]:
    """Train loss keeps falling while eval loss rises after its minimum."""
    state = _state(run_dir)
    _common_checks(run_dir, state)
    loss = _history(state, "loss")
    eval_loss = _history(state, "eval_loss")
    min_step, min_val = min(eval_loss, key=lambda p: p[1])
    last_step, last_val = eval_loss[-1]
    _require(min_step < last_step, "eval loss minimum is at the end")
    _require(last_val > 1.2 * min_val, f"eval loss barely rose: {min_val:.3f} -> {last_val:.3f}")
    train_at_min = min((p for p in loss if p[0] >= min_step), key=lambda p: p[0])[1]
    _require(loss[-1][1] < 0.5 * train_at_min, "train loss did not keep falling")
    _require(len(_segments(run_dir)) == 1, "expected one segment")
    return {
        "family": "overfitting",
        "cause": "overfitting",
        "first_bad_step": min_step,
        "eval_loss_min_step": min_step,
        "eval_loss_min": round(min_val, 4),
        "eval_loss_last": round(last_val, 4),
        "loss_first": round(loss[0][1], 4),
        "loss_last": round(loss[-1][1], 4),
        "steps": state["global_step"],
        "segments": 1,
        "train_examples": 32,
        "checkpoints": _checkpoints(run_dir),
        "config": _config(run_dir),
    }


# --------------------------------------------------------------------------------------------
# The registry and the orchestration
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class RunSpec:
    """One sample run: how it is trained, checked and described."""

    name: str
    situation: str
    how: str
    train: Callable[[str, int], None]
    launches: int
    check: Callable[[Path], dict[str, Any]]
    conclusion: Callable[[dict[str, Any]], str]


RUNS: dict[str, RunSpec] = {
    spec.name: spec
    for spec in (
        RunSpec(
            name="healthy_hf_trainer",
            situation="a healthy HF Trainer run: loss and eval_loss fall",
            how="tiny GPT-2, next-token on arithmetic progressions, AdamW lr 1e-2 with linear "
            "decay, warmup 10, clip 1.0, 100 steps, eval every 20, checkpoints 50 and 100",
            train=_train_healthy,
            launches=1,
            check=_check_healthy,
            conclusion=lambda lb: f"healthy (loss {lb['loss_first']} → {lb['loss_last']})",
        ),
        RunSpec(
            name="nan_after_grad_spike",
            situation="the loss goes NaN a few steps after a grad-norm spike; training goes on",
            how=f"tiny GPT-2, SGD at constant lr {NAN_LR}, no warmup, max_grad_norm=0 "
            "(no clipping), logging_nan_inf_filter=False, logging every step, 40 steps",
            train=_train_nan,
            launches=1,
            check=_check_nan,
            conclusion=lambda lb: (
                f"nan_inf / lr_too_high (+ no_clipping, no_warmup): first NaN loss at step "
                f"{lb['first_nan_step']}, after a grad-norm spike at step {lb['spike_step']} "
                f"({lb['spike_ratio_to_median']}× the earlier median)"
            ),
        ),
        RunSpec(
            name="resumed_after_stop",
            situation="a run that crashed and was resumed from its last checkpoint",
            how="tiny GPT-2 as in healthy_hf_trainer (AdamW 3e-3, 40 steps), logging every "
            "step, eval and save every 10; "
            "launch 1 raises in a callback after step 25; launch 2 resumes from checkpoint-20 "
            "into the same output and TensorBoard dirs and finishes at 40",
            train=_train_resumed,
            launches=2,
            check=_check_resumed,
            conclusion=lambda lb: (
                f"{len(lb['segment_steps'])} segments: restart at step {lb['restart_step']} "
                f"(pre-crash tail {lb['restart_step']}..{lb['crash_after_step']} kept as "
                f"segment 0); healthy after the resume"
            ),
        ),
        RunSpec(
            name="overfitting_small_data",
            situation="train loss keeps falling while eval loss rises after its minimum",
            how="tiny BERT classifier (label = rule on the first token), 32 training examples "
            "with 20% flipped labels, "
            "160 steps (80 epochs), clean 256-example eval set every 10 steps",
            train=_train_overfit,
            launches=1,
            check=_check_overfit,
            conclusion=lambda lb: (
                f"overfitting from step {lb['eval_loss_min_step']} (eval_loss min "
                f"{lb['eval_loss_min']} → {lb['eval_loss_last']})"
            ),
        ),
    )
}


def _launch(spec: RunSpec, out: Path, launch: int) -> int:
    """Run one training launch in a child process, appending its output to train.log."""
    run_dir = out / spec.name
    env = dict(os.environ)
    env.update(
        {
            "PYTHONHASHSEED": "0",
            "OMP_NUM_THREADS": "1",
            "MKL_NUM_THREADS": "1",
            "TENSORBOARD_LOGGING_DIR": f"{out.name}/{spec.name}/{TB_SUBDIR}",
            "HF_HUB_OFFLINE": "1",
            "TRANSFORMERS_OFFLINE": "1",
            "HF_HUB_DISABLE_TELEMETRY": "1",
            "PYTHONWARNINGS": "ignore::FutureWarning",
        }
    )
    cmd = [
        sys.executable,
        str(Path(__file__).resolve()),
        "--_child",
        spec.name,
        "--_launch",
        str(launch),
        "--out",
        out.name,
    ]
    with open(run_dir / LOG_NAME, "ab") as log:
        proc = subprocess.run(cmd, cwd=out.parent, env=env, stdout=log, stderr=log, check=False)
    return proc.returncode


def _cleanup(run_dir: Path) -> None:
    """Remove what is useless for analysis (caches); everything the Trainer wrote stays."""
    for cache in run_dir.rglob("__pycache__"):
        shutil.rmtree(cache)


def make_run(spec: RunSpec, out: Path) -> dict[str, Any]:
    """Delete and regenerate one run, self-check it, and return its labels."""
    run_dir = out / spec.name
    if run_dir.exists():
        shutil.rmtree(run_dir)
    run_dir.mkdir(parents=True)
    t0 = time.perf_counter()
    for launch in range(spec.launches):
        rc = _launch(spec, out, launch)
        crash_expected = spec.name == "resumed_after_stop" and launch == 0
        if crash_expected != (rc != 0):
            tail = (run_dir / LOG_NAME).read_text(encoding="utf-8", errors="replace")[-3000:]
            raise SelfCheckError(f"{spec.name}: launch {launch} exited {rc}\n{tail}")
    _cleanup(run_dir)
    labels = spec.check(run_dir)
    size = sum(p.stat().st_size for p in run_dir.rglob("*") if p.is_file())
    print(f"{spec.name}: ok in {time.perf_counter() - t0:.1f}s, {size / 1024:.0f} KiB")
    return labels


def _write_labels(out: Path, new: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Merge ``new`` into ``out/labels.json`` (runs no longer defined are dropped)."""
    path = out / "labels.json"
    labels: dict[str, dict[str, Any]] = {}
    if path.exists():
        labels = json.loads(path.read_text(encoding="utf-8"))
    labels.update(new)
    labels = {k: labels[k] for k in RUNS if k in labels}
    path.write_text(json.dumps(labels, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    return labels


README_HEAD = """\
# sample_runs

Small **real** training runs for demos, tests and benchmarks. Each was made by really training
a tiny model (built from a config, no download) on CPU on synthetic data, with the Hugging Face
`Trainer`, by [`make.py`](make.py); each folder holds what the Trainer left behind
(TensorBoard event files under `runs/`, `trainer_state.json`, `training_args.bin`,
`checkpoint-N/`) and `train.log`, the captured stdout/stderr of the training process(es).
`labels.json` holds the facts each run really showed, computed by `make.py`'s self-check (not
typed by hand); benchmarks count accuracy against it.

Regenerate with `python sample_runs/make.py [NAME ...]` (needs torch, transformers,
accelerate, tensorboard; seconds per run); `--list` lists the runs. Seeds are fixed and
deterministic algorithms are on, so values repeat; wall times and event-file names do not.

| run | situation | how it was made | autopsy should conclude |
|---|---|---|---|
"""


def _write_readme(out: Path, labels: dict[str, dict[str, Any]]) -> None:
    """Rewrite ``out/README.md``: one table row per run, conclusions from the labels."""
    rows = []
    for name, spec in RUNS.items():
        conclusion = spec.conclusion(labels[name]) if name in labels else "(not generated)"
        rows.append(f"| `{name}` | {spec.situation} | {spec.how} | {conclusion} |\n")
    (out / "README.md").write_text(README_HEAD + "".join(rows), encoding="utf-8")


def _child(name: str, launch: int, out_name: str) -> None:
    """Entry point of a training launch (run with the CWD = the output folder's parent)."""
    RUNS[name].train(f"{out_name}/{name}", launch)


def main(argv: list[str] | None = None) -> int:
    """Parse the command line and regenerate the requested runs."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("names", nargs="*", metavar="NAME", help="runs to regenerate (all)")
    parser.add_argument("--out", type=Path, default=HERE, help="output folder (%(default)s)")
    parser.add_argument("--list", action="store_true", help="list the runs and exit")
    parser.add_argument("--_child", help=argparse.SUPPRESS)
    parser.add_argument("--_launch", type=int, default=0, help=argparse.SUPPRESS)
    ns = parser.parse_args(argv)

    if ns._child:
        _child(ns._child, ns._launch, str(ns.out))
        return 0
    if ns.list:
        for spec in RUNS.values():
            print(f"{spec.name:24s} {spec.situation}")
        return 0
    unknown = [n for n in ns.names if n not in RUNS]
    if unknown:
        parser.error(f"unknown run(s): {', '.join(unknown)}; see --list")
    out = ns.out.resolve()
    out.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    new = {name: make_run(RUNS[name], out) for name in (ns.names or list(RUNS))}
    labels = _write_labels(out, new)
    _write_readme(out, labels)
    print(f"done in {time.perf_counter() - t0:.1f}s -> {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
