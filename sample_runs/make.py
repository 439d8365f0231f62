#!/usr/bin/env python
"""Make the small real training runs kept in ``sample_runs/``.

Every run here is *real*: a tiny model (GPT-2 or BERT built from a config, no download, or a
small MLP) is trained on CPU on synthetic data made in code, either with the Hugging Face
``Trainer`` or with a plain PyTorch loop that logs to TensorBoard with
``torch.utils.tensorboard.SummaryWriter``. The run directory holds exactly what the training
left behind (event files, and for the Trainer ``trainer_state.json``, ``training_args.bin``,
``checkpoint-N/`` folders, ``config.json``) plus ``train.log``, the captured stdout/stderr of
the training process(es).

Each training launch runs in a child process (``python make.py --_child RECIPE ...``) whose
stdout and stderr go to ``<run>/train.log``, as ``python train.py > train.log 2>&1`` would;
its working directory is the parent of the output folder, so the paths the Trainer records
are relative (``sample_runs/<name>``). After the launches, a self-check reads the run back,
asserts the situation really happened (it fails loudly otherwise), and computes the run's
label from what really happened: ``<name>.label.json`` beside the run, with at least
``family``, ``cause``, ``first_bad_step`` and ``culprit_rank``. ``README.md`` is rewritten
from the labels.

Every recipe takes a :class:`Params` (seed, learning rate, model width, steps, schedule, and
the step of a planted event), so ``bench/variants.py`` can regenerate each situation with
other settings through :func:`make_run`.

Usage::

    python sample_runs/make.py                 # regenerate every run
    python sample_runs/make.py NAME [NAME...]  # regenerate the named runs only
    python sample_runs/make.py --list          # list the runs
    python sample_runs/make.py --out DIR       # write somewhere else (default: beside this file)
    python sample_runs/make.py --check [NAME...]  # remake in a temp dir, compare with the committed
    python sample_runs/make.py --relabel [NAME...]  # recompute labels from the runs' data

``--check`` remakes the runs in a temporary folder (never here) and compares each with its
committed label (family, cause, culprit rank, a checkpoint's audit exactly; the first bad step
within the label's ``step_tolerance``) and autopsy's verdict on the remade run with its verdict
on the committed one; one line per run, exit 1 on any difference.

Needs torch, transformers, accelerate and tensorboard; reading the committed outputs does not.
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib
import json
import math
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

os.environ["HF_HUB_OFFLINE"] = "1"  # never touch the Hub: models are built from configs
os.environ["TRANSFORMERS_OFFLINE"] = "1"
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

HERE = Path(__file__).resolve().parent
VOCAB = 32  # tokens of the synthetic tasks
SEQ_LEN = 16  # tokens per example
SPIKE_FACTOR = 10.0  # a grad-norm "spike" is at least this many times the earlier median
LOG_NAME = "train.log"
TB_SUBDIR = "runs"  # TensorBoard logging dir, inside the run dir
LABEL_SUFFIX = ".label.json"
FAMILIES = (
    "nan_inf", "diverging", "not_decreasing", "overfitting", "oom", "slow", "hang", "crash",
    "resume", "healthy", "unknown",
)


@dataclass(frozen=True)
class Params:
    """What a recipe may vary; ``None`` means the recipe's own default.

    ``event_step`` is the step of a planted event (the corrupted batch of ``nan_bad_batch``,
    the first scaled batch of ``loss_spikes_recover``, the failing step of a multi-rank run);
    ``rank`` the rank a multi-rank run plants its failure on.
    """

    seed: int = 0
    lr: float | None = None
    width: int = 32
    steps: int | None = None
    schedule: str | None = None
    event_step: int | None = None
    rank: int | None = None

    def to_json(self) -> str:
        """Serialise for the child process's command line."""
        return json.dumps(dataclasses.asdict(self))

    @classmethod
    def from_json(cls, text: str) -> Params:
        """The inverse of :meth:`to_json`."""
        return cls(**json.loads(text))

    def describe(self) -> str:
        """The fields that differ from the defaults, as ``k=v`` pairs."""
        default = Params()
        diffs = [
            f"{f.name}={getattr(self, f.name)}"
            for f in dataclasses.fields(self)
            if getattr(self, f.name) != getattr(default, f.name)
        ]
        return ", ".join(diffs) or "defaults"


def _or(value: Any, default: Any) -> Any:
    """``value`` unless it is None."""
    return default if value is None else value


# --------------------------------------------------------------------------------------------
# The training side (runs in the child process; imports torch/transformers lazily)
# --------------------------------------------------------------------------------------------


def _seed_everything(seed: int) -> None:
    """Fix every seed and ask torch for deterministic kernels on one thread."""
    import torch
    from transformers import set_seed

    torch.set_num_threads(1)
    torch.use_deterministic_algorithms(True)
    set_seed(seed)


def _progressions(n: int, seed: int, max_step: int = 3) -> Any:
    """A next-token dataset: arithmetic progressions ``a, a+d, a+2d, ... (mod VOCAB)``.

    ``d`` is drawn from ``1..max_step``. Learnable by a one-layer GPT-2: after two tokens the
    rest of the sequence is determined.
    """
    import torch
    from torch.utils.data import Dataset

    class Progressions(Dataset):  # type: ignore[type-arg]
        """Synthetic arithmetic progressions; ``labels`` = ``input_ids`` (the model shifts)."""

        def __init__(self) -> None:
            g = torch.Generator().manual_seed(seed)
            start = torch.randint(0, VOCAB, (n, 1), generator=g)
            step = torch.randint(1, max_step + 1, (n, 1), generator=g)
            self.ids = (start + step * torch.arange(SEQ_LEN)) % VOCAB

        def __len__(self) -> int:
            return len(self.ids)

        def __getitem__(self, i: int) -> dict[str, Any]:
            return {"input_ids": self.ids[i], "labels": self.ids[i]}

    return Progressions()


def _masked(dataset: Any) -> Any:
    """Wrap a causal-LM dataset so every label is -100 (a masking bug: nothing to learn)."""
    import torch
    from torch.utils.data import Dataset

    class AllMasked(Dataset):  # type: ignore[type-arg]
        """A prompt-masking collator bug: the "prompt" mask covers the whole sequence."""

        def __len__(self) -> int:
            return len(dataset)

        def __getitem__(self, i: int) -> dict[str, Any]:
            item = dict(dataset[i])
            item["labels"] = torch.full_like(item["labels"], -100)
            return item

    return AllMasked()


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


def _random_labels(n: int, seed: int, num_labels: int) -> Any:
    """Random token sequences with labels drawn independently of them: nothing to learn."""
    import torch
    from torch.utils.data import Dataset

    class RandomLabels(Dataset):  # type: ignore[type-arg]
        """Inputs and labels independent: the best possible loss is ln(num_labels)."""

        def __init__(self) -> None:
            g = torch.Generator().manual_seed(seed)
            self.ids = torch.randint(1, VOCAB, (n, SEQ_LEN), generator=g)
            self.labels = torch.randint(0, num_labels, (n,), generator=g)

        def __len__(self) -> int:
            return len(self.ids)

        def __getitem__(self, i: int) -> dict[str, Any]:
            return {"input_ids": self.ids[i], "labels": self.labels[i]}

    return RandomLabels()


def _tiny_gpt2(width: int = 32) -> Any:
    """A one-layer GPT-2 with a ``width``-wide residual stream (about 10k parameters at 32)."""
    from transformers import GPT2Config, GPT2LMHeadModel

    config = GPT2Config(
        vocab_size=VOCAB,
        n_positions=SEQ_LEN,
        n_embd=width,
        n_layer=1,
        n_head=2,
        n_inner=2 * width,
        resid_pdrop=0.0,
        embd_pdrop=0.0,
        attn_pdrop=0.0,
        bos_token_id=0,
        eos_token_id=0,
    )
    return GPT2LMHeadModel(config)


def _tiny_bert(width: int = 32, num_labels: int = 2) -> Any:
    """A one-layer BERT sequence classifier with a ``width``-wide hidden state."""
    from transformers import BertConfig, BertForSequenceClassification

    config = BertConfig(
        vocab_size=VOCAB,
        hidden_size=width,
        num_hidden_layers=1,
        num_attention_heads=2,
        intermediate_size=width + 5,
        max_position_embeddings=SEQ_LEN,
        hidden_dropout_prob=0.0,
        attention_probs_dropout_prob=0.0,
        num_labels=num_labels,
    )
    return BertForSequenceClassification(config)


def _args(output_dir: str, seed: int, **kwargs: Any) -> Any:
    """``TrainingArguments`` with the settings every sample run shares, updated by kwargs."""
    from transformers import TrainingArguments

    base: dict[str, Any] = {
        "output_dir": output_dir,
        "seed": seed,
        "data_seed": seed,
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


def _finish(trainer: Any) -> None:
    """What a training script does at the end: save the model and the state."""
    trainer.save_model()
    trainer.save_state()


def _train_healthy(output_dir: str, launch: int, p: Params) -> None:
    """A healthy run: warmup, clipping, a sensible LR; loss and eval loss both fall."""
    from transformers import Trainer

    del launch
    _seed_everything(p.seed)
    args = _args(
        output_dir,
        p.seed,
        max_steps=_or(p.steps, 100),
        learning_rate=_or(p.lr, 1e-2),
        warmup_steps=10,
        lr_scheduler_type=_or(p.schedule, "linear"),
        max_grad_norm=1.0,
        weight_decay=0.01,
        logging_steps=5,
        eval_strategy="steps",
        eval_steps=20,
        save_steps=50,
        save_total_limit=2,
    )
    trainer = Trainer(
        model=_tiny_gpt2(p.width),
        args=args,
        train_dataset=_progressions(512, seed=p.seed + 1),
        eval_dataset=_progressions(128, seed=p.seed + 2),
    )
    trainer.train()
    _finish(trainer)


#: Plain SGD at a constant LR far above what this model takes (plain SGD trains it up to about
#: 1): the loss rises from step 2, the grad norm spikes at step 3 and the run is NaN at step
#: 8. The blow-up comes right away, so its steps repeat: the same NaN step with the weights
#: perturbed by up to 1% or on two threads. An LR at the edge of stability (2.8, the first
#: recipe) wanders for ~20 steps first, and the step where it escapes depends on the last bits
#: of the arithmetic (it did not reproduce on another machine); so does 4 to 8, by a step.
NAN_LR = 12.0


def _train_nan_hf(output_dir: str, p: Params, nan_filter: bool) -> None:
    """Plain SGD at a far too high constant LR, no warmup, no clipping."""
    from transformers import Trainer

    _seed_everything(p.seed)
    args = _args(
        output_dir,
        p.seed,
        max_steps=_or(p.steps, 40),
        optim="sgd",
        learning_rate=_or(p.lr, NAN_LR),
        warmup_steps=0,
        lr_scheduler_type=_or(p.schedule, "constant"),
        max_grad_norm=0.0,  # 0 disables clipping in the HF Trainer
        weight_decay=0.0,
        logging_steps=1,
        logging_nan_inf_filter=nan_filter,
        eval_strategy="no",
        save_steps=20,
        save_total_limit=2,
    )
    model = _tiny_gpt2(p.width)
    trainer = Trainer(model=model, args=args, train_dataset=_progressions(512, seed=p.seed + 1))
    trainer.train()
    _finish(trainer)


def _train_nan(output_dir: str, launch: int, p: Params) -> None:
    """The NaN recipe with ``logging_nan_inf_filter=False``: the NaN loss is logged as is."""
    del launch
    _train_nan_hf(output_dir, p, nan_filter=False)


def _train_hidden_nan(output_dir: str, launch: int, p: Params) -> None:
    """The same NaN recipe with the Trainer's default filter on, which hides the NaN loss."""
    del launch
    _train_nan_hf(output_dir, p, nan_filter=True)


RESUME_SAVE_STEPS = 10
RESUME_CRASH_AFTER = 25  # the first launch dies while starting step 26
RESUME_MAX_STEPS = 40
RESUME_FROM = RESUME_CRASH_AFTER // RESUME_SAVE_STEPS * RESUME_SAVE_STEPS  # checkpoint-20


def _train_resumed(output_dir: str, launch: int, p: Params) -> None:
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

    _seed_everything(p.seed)
    args = _args(
        output_dir,
        p.seed,
        max_steps=RESUME_MAX_STEPS,
        learning_rate=_or(p.lr, 3e-3),
        warmup_steps=4,
        lr_scheduler_type=_or(p.schedule, "linear"),
        max_grad_norm=1.0,
        logging_steps=1,
        eval_strategy="steps",
        eval_steps=RESUME_SAVE_STEPS,
        save_steps=RESUME_SAVE_STEPS,
        save_total_limit=3,
    )
    callbacks = [CrashAfter(RESUME_CRASH_AFTER)] if launch == 0 else []
    trainer = Trainer(
        model=_tiny_gpt2(p.width),
        args=args,
        train_dataset=_progressions(512, seed=p.seed + 1),
        eval_dataset=_progressions(128, seed=p.seed + 2),
        callbacks=callbacks,
    )
    if launch == 0:
        trainer.train()
    else:
        trainer.train(resume_from_checkpoint=f"{output_dir}/checkpoint-{RESUME_FROM}")
    _finish(trainer)


OVERFIT_EXAMPLES = 32


def _train_overfit(output_dir: str, launch: int, p: Params) -> None:
    """Many epochs over 32 noisy examples: the model memorises, held-out loss turns up."""
    from transformers import Trainer

    del launch
    _seed_everything(p.seed)
    args = _args(
        output_dir,
        p.seed,
        max_steps=_or(p.steps, 160),
        learning_rate=_or(p.lr, 3e-3),
        warmup_steps=8,
        lr_scheduler_type=_or(p.schedule, "constant_with_warmup"),
        max_grad_norm=1.0,
        weight_decay=0.0,
        logging_steps=5,
        eval_strategy="steps",
        eval_steps=10,
        save_steps=80,
        save_total_limit=2,
    )
    trainer = Trainer(
        model=_tiny_bert(p.width),
        args=args,
        train_dataset=_first_token_rule(OVERFIT_EXAMPLES, seed=p.seed + 1, label_noise=0.2),
        eval_dataset=_first_token_rule(256, seed=p.seed + 2, label_noise=0.0),
    )
    trainer.train()
    _finish(trainer)


PRETRAIN_STEPS = 150
FINETUNE_MAX_STEP = 5  # the fine-tuning task adds progressions with steps 4 and 5
FROZEN_TRAINABLE = "transformer.ln_f.bias"  # the one tensor left trainable


def _pretrained_gpt2(seed: int, width: int) -> Any:
    """A tiny GPT-2 pretrained (plain loop, quietly) on progressions with steps 1..3.

    Stands in for the downloaded checkpoint a fine-tune starts from, so that the fine-tune's
    loss starts well below chance (ln VOCAB) and could fall further on the new task.
    """
    import torch

    model = _tiny_gpt2(width)
    data = _progressions(2048, seed=seed + 100).ids
    opt = torch.optim.AdamW(model.parameters(), lr=1e-2)
    g = torch.Generator().manual_seed(seed + 101)
    for _ in range(PRETRAIN_STEPS):
        batch = data[torch.randint(0, len(data), (32,), generator=g)]
        loss = model(input_ids=batch, labels=batch).loss
        opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
    return model


def _trainable_summary(model: Any) -> str:
    """PEFT's ``print_trainable_parameters`` line."""
    trainable = sum(t.numel() for t in model.parameters() if t.requires_grad)
    total = sum(t.numel() for t in model.parameters())
    return (
        f"trainable params: {trainable:,} || all params: {total:,} || "
        f"trainable%: {100 * trainable / total:.4f}"
    )


def _train_finetune(output_dir: str, p: Params, lr: float, frozen: bool) -> None:
    """Full fine-tune of the pretrained tiny GPT-2 on a harder task (steps 1..5)."""
    from transformers import Trainer

    _seed_everything(p.seed)
    model = _pretrained_gpt2(p.seed, p.width)
    if frozen:  # a freezing bug: everything but one LayerNorm bias is frozen
        for name, param in model.named_parameters():
            param.requires_grad = name == FROZEN_TRAINABLE
    print(_trainable_summary(model), flush=True)
    args = _args(
        output_dir,
        p.seed,
        max_steps=_or(p.steps, 60),
        learning_rate=lr,
        warmup_steps=6,
        lr_scheduler_type=_or(p.schedule, "linear"),
        max_grad_norm=1.0,
        weight_decay=0.01,
        per_device_train_batch_size=64,
        logging_steps=5,
        eval_strategy="steps",
        eval_steps=20,
        save_strategy="no",  # the final save_model() is enough
    )
    trainer = Trainer(
        model=model,
        args=args,
        train_dataset=_progressions(4096, seed=p.seed + 1, max_step=FINETUNE_MAX_STEP),
        eval_dataset=_progressions(128, seed=p.seed + 2, max_step=FINETUNE_MAX_STEP),
    )
    trainer.train()
    _finish(trainer)


def _train_lr_too_low(output_dir: str, launch: int, p: Params) -> None:
    """Full fine-tune at LR 1e-8: nothing moves."""
    del launch
    _train_finetune(output_dir, p, lr=_or(p.lr, 1e-8), frozen=False)


def _train_frozen(output_dir: str, launch: int, p: Params) -> None:
    """Full fine-tune at a usual full fine-tune LR (3e-5) with (almost) every parameter frozen."""
    del launch
    _train_finetune(output_dir, p, lr=_or(p.lr, 3e-5), frozen=True)


def _train_labels_masked(output_dir: str, launch: int, p: Params) -> None:
    """The healthy recipe, but every label is -100: there is nothing to learn."""
    from transformers import Trainer

    del launch
    _seed_everything(p.seed)
    args = _args(
        output_dir,
        p.seed,
        max_steps=_or(p.steps, 60),
        learning_rate=_or(p.lr, 1e-2),
        warmup_steps=6,
        lr_scheduler_type=_or(p.schedule, "linear"),
        max_grad_norm=1.0,
        weight_decay=0.01,
        logging_steps=5,
        save_strategy="no",
    )
    trainer = Trainer(
        model=_tiny_gpt2(p.width),
        args=args,
        train_dataset=_masked(_progressions(512, seed=p.seed + 1)),
    )
    trainer.train()
    _finish(trainer)


CHANCE_LABELS = 4
CHANCE_EXAMPLES = 4096  # more than max_steps × batch: no example is seen twice


def _train_chance(output_dir: str, launch: int, p: Params) -> None:
    """A 4-class BERT classifier on labels independent of the inputs."""
    from transformers import Trainer

    del launch
    _seed_everything(p.seed)
    args = _args(
        output_dir,
        p.seed,
        max_steps=_or(p.steps, 120),
        learning_rate=_or(p.lr, 1e-3),
        warmup_steps=10,
        lr_scheduler_type=_or(p.schedule, "linear"),
        max_grad_norm=1.0,
        weight_decay=0.01,
        logging_steps=5,
        eval_strategy="steps",
        eval_steps=40,
        save_strategy="no",
    )
    trainer = Trainer(
        model=_tiny_bert(p.width, num_labels=CHANCE_LABELS),
        args=args,
        train_dataset=_random_labels(CHANCE_EXAMPLES, seed=p.seed + 1, num_labels=CHANCE_LABELS),
        eval_dataset=_random_labels(256, seed=p.seed + 2, num_labels=CHANCE_LABELS),
    )
    trainer.train()
    _finish(trainer)


# ---- plain PyTorch loops --------------------------------------------------------------------

FEATURES = 16  # inputs of the MLP tasks
CLASSES = 4


class _PlainLogger:
    """What a hand-written loop logs: TensorBoard scalars per step and a line on stdout.

    The run's configuration goes to TensorBoard as the HF Trainer logs its arguments: a text
    summary of a JSON object (tag ``args``), in the same event file.
    """

    def __init__(self, output_dir: str, config: dict[str, Any]) -> None:
        from torch.utils.tensorboard import SummaryWriter

        self.writer = SummaryWriter(log_dir=f"{output_dir}/{TB_SUBDIR}")
        self.writer.add_text("args", json.dumps(config, indent=2, sort_keys=True))
        print(f"config: {json.dumps(config, sort_keys=True)}", flush=True)

    def step(self, step: int, **scalars: float) -> None:
        """Log ``train/<name>`` for each scalar, and print them."""
        for name, value in scalars.items():
            self.writer.add_scalar(f"train/{name}", value, step)
        text = " ".join(f"{k}={v:.6g}" for k, v in scalars.items())
        print(f"step {step}: {text}", flush=True)

    def close(self) -> None:
        """Flush and close the event file."""
        self.writer.close()


def _mlp(width: int, out: int) -> Any:
    """A two-layer MLP from :data:`FEATURES` inputs."""
    import torch

    return torch.nn.Sequential(
        torch.nn.Linear(FEATURES, width), torch.nn.Tanh(), torch.nn.Linear(width, out)
    )


def _linear_classes(n: int, seed: int) -> tuple[Any, Any]:
    """Gaussian inputs; label = argmax of a fixed random linear map: learnable."""
    import torch

    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, FEATURES, generator=g)
    w = torch.randn(FEATURES, CLASSES, generator=g)
    return x, (x @ w).argmax(1)


def _lr_at(step: int, peak: float, warmup: int, total: int, schedule: str) -> float:
    """The LR of a 1-based step under linear warm-up then ``schedule`` (as HF computes it)."""
    if step <= warmup:
        return peak * step / max(1, warmup)
    frac = (step - warmup) / max(1, total - warmup)
    if schedule == "cosine":
        return peak * 0.5 * (1 + math.cos(math.pi * frac))
    if schedule == "linear":
        return peak * (1 - frac)
    return peak  # constant


def _plain_config(**kwargs: Any) -> dict[str, Any]:
    """The config dict a plain loop logs, with the keys every run has."""
    base: dict[str, Any] = {
        "gradient_accumulation_steps": 1,
        "world_size": 1,
        "fp16": False,
        "bf16": False,
        "logging_steps": 1,
        "framework": "plain_pytorch",
    }
    base.update(kwargs)
    return base


BAD_BATCH_STEP = 37


def _train_bad_batch(output_dir: str, launch: int, p: Params) -> None:
    """A calm classifier run; the batch of one step carries an ``inf`` feature."""
    import torch

    del launch
    _seed_everything(p.seed)
    steps, bad_step, batch = _or(p.steps, 60), _or(p.event_step, BAD_BATCH_STEP), 32
    peak, warmup, schedule = _or(p.lr, 3e-3), 10, _or(p.schedule, "cosine")
    x, y = _linear_classes(4096, p.seed + 1)
    g = torch.Generator().manual_seed(p.seed + 2)
    order = torch.randperm(len(x), generator=g)
    bad_index = int(order[(bad_step - 1) * batch + 5])
    x[bad_index, 3] = float("inf")  # a corrupted record (a division by zero upstream)
    log = _PlainLogger(output_dir, _plain_config(
        optim="adamw", learning_rate=peak, warmup_steps=warmup, lr_scheduler_type=schedule,
        max_grad_norm=1.0, weight_decay=0.01, per_device_train_batch_size=batch,
        max_steps=steps, seed=p.seed, num_labels=CLASSES, hidden_size=p.width,
    ))
    model = _mlp(p.width, CLASSES)
    opt = torch.optim.AdamW(model.parameters(), lr=peak, weight_decay=0.01)
    for step in range(1, steps + 1):
        idx = order[(step - 1) * batch : step * batch]
        lr = _lr_at(step, peak, warmup, steps, schedule)
        for group in opt.param_groups:
            group["lr"] = lr
        loss = torch.nn.functional.cross_entropy(model(x[idx]), y[idx])
        opt.zero_grad()
        loss.backward()
        grad_norm = torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        log.step(step, loss=loss.item(), grad_norm=grad_norm.item(), learning_rate=lr)
    log.close()


FP16_TARGET_SCALE = 20000.0  # unnormalised regression targets (e.g. prices in dollars)


def _train_fp16(output_dir: str, p: Params, target_scale: float, lr: float) -> None:
    """An MLP regression under ``autocast(float16)`` with a real ``GradScaler("cpu")``.

    With ``target_scale`` 1 (standardised targets) the scaler skips a few steps while it
    finds its scale, then trains. With unnormalised targets the outputs grow towards them
    until they pass the float16 maximum (65504): the forward pass gives ``inf``, every step
    from then on is skipped, and the scale halves each step.
    """
    import torch

    _seed_everything(p.seed)
    steps, batch, init_scale = _or(p.steps, 120), 64, 2.0**16
    x_gen = torch.Generator().manual_seed(p.seed + 1)
    x = torch.randn(4096, FEATURES, generator=x_gen)
    w = torch.randn(FEATURES, 1, generator=x_gen)
    y = (x @ w + 2.0) * target_scale
    log = _PlainLogger(output_dir, _plain_config(
        optim="adam", learning_rate=lr, warmup_steps=0, lr_scheduler_type="constant",
        max_grad_norm=0.0, weight_decay=0.0, per_device_train_batch_size=batch,
        max_steps=steps, seed=p.seed, fp16=True, init_loss_scale=init_scale,
        loss_scale_growth_interval=2000, hidden_size=4 * p.width,
    ))
    model = torch.nn.Sequential(
        torch.nn.Linear(FEATURES, 2 * p.width), torch.nn.ReLU(), torch.nn.Linear(2 * p.width, 1)
    )
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    scaler = torch.amp.GradScaler("cpu", init_scale=init_scale, growth_interval=2000)
    skipped = 0
    for step in range(1, steps + 1):
        idx = torch.randint(0, len(x), (batch,), generator=x_gen)
        with torch.autocast("cpu", dtype=torch.float16):
            out = model(x[idx])
        loss = torch.nn.functional.mse_loss(out.float(), y[idx])
        opt.zero_grad()
        scale = scaler.get_scale()
        scaler.scale(loss).backward()
        scaler.unscale_(opt)
        grad_norm = torch.nn.utils.clip_grad_norm_(model.parameters(), math.inf)
        scaler.step(opt)
        scaler.update()
        if scaler.get_scale() < scale:
            skipped += 1
            print(
                f"step {step}: gradient overflow, skipping the optimizer step; "
                f"loss scale {scale:g} -> {scaler.get_scale():g}",
                flush=True,
            )
        log.step(step, loss=loss.item(), grad_norm=grad_norm.item(), learning_rate=lr,
                 loss_scale=scale, skipped_steps=skipped)
    log.close()


def _train_fp16_collapse(output_dir: str, launch: int, p: Params) -> None:
    """fp16 with unnormalised targets: the outputs overflow and the scale collapses."""
    del launch
    _train_fp16(output_dir, p, FP16_TARGET_SCALE, _or(p.lr, 0.3))


def _train_fp16_healthy(output_dir: str, launch: int, p: Params) -> None:
    """fp16 with standardised targets: a few skipped steps at the start, then healthy."""
    del launch
    _train_fp16(output_dir, p, 1.0, _or(p.lr, 1e-2))


def _regression(n: int, seed: int) -> tuple[Any, Any]:
    """Gaussian inputs, a noisy linear target of about unit variance."""
    import torch

    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, FEATURES, generator=g)
    w = torch.randn(FEATURES, 1, generator=g)
    return x, x @ w / 4 + 0.1 * torch.randn(n, 1, generator=g)


def _train_diverging(output_dir: str, launch: int, p: Params) -> None:
    """Plain SGD, a linear warm-up to a far too high peak LR, clipping at 1.0.

    The loss falls while the LR is small, then rises for the rest of the run as the LR
    passes the stability limit; clipping keeps every value finite.
    """
    import torch

    del launch
    _seed_everything(p.seed)
    steps, batch = _or(p.steps, 120), 64
    peak, warmup, schedule = _or(p.lr, 3.0), 80, _or(p.schedule, "constant")
    x, y = _regression(2048, p.seed + 1)
    g = torch.Generator().manual_seed(p.seed + 2)
    log = _PlainLogger(output_dir, _plain_config(
        optim="sgd", momentum=0.0, learning_rate=peak, warmup_steps=warmup,
        lr_scheduler_type=schedule, max_grad_norm=1.0, weight_decay=0.0,
        per_device_train_batch_size=batch, max_steps=steps, seed=p.seed, hidden_size=p.width,
    ))
    model = _mlp(p.width, 1)
    opt = torch.optim.SGD(model.parameters(), lr=peak)
    for step in range(1, steps + 1):
        lr = _lr_at(step, peak, warmup, steps, schedule)
        for group in opt.param_groups:
            group["lr"] = lr
        idx = torch.randint(0, len(x), (batch,), generator=g)
        loss = torch.nn.functional.mse_loss(model(x[idx]), y[idx])
        opt.zero_grad()
        loss.backward()
        grad_norm = torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        log.step(step, loss=loss.item(), grad_norm=grad_norm.item(), learning_rate=lr)
    log.close()


SPIKE_FIRST_STEP = 40
SPIKE_EVERY = 25
SPIKE_INPUT_SCALE = 3.0  # the bad batches' features are in the wrong unit


def _spike_steps(p: Params) -> list[int]:
    """Steps whose batch is scaled: three of them, SPIKE_EVERY apart."""
    first = _or(p.event_step, SPIKE_FIRST_STEP)
    return [first + k * SPIKE_EVERY for k in range(3)]


def _train_spikes(output_dir: str, launch: int, p: Params) -> None:
    """A healthy classifier run where three batches have features in the wrong unit."""
    import torch

    del launch
    _seed_everything(p.seed)
    steps, batch = _or(p.steps, 110), 32
    peak, warmup, schedule = _or(p.lr, 1e-2), 10, _or(p.schedule, "cosine")
    spikes = set(_spike_steps(p))
    x, y = _linear_classes(4096, p.seed + 1)
    g = torch.Generator().manual_seed(p.seed + 2)
    order = torch.randperm(len(x), generator=g)
    log = _PlainLogger(output_dir, _plain_config(
        optim="adamw", learning_rate=peak, warmup_steps=warmup, lr_scheduler_type=schedule,
        max_grad_norm=1.0, weight_decay=0.01, per_device_train_batch_size=batch,
        max_steps=steps, seed=p.seed, num_labels=CLASSES, hidden_size=p.width,
    ))
    model = _mlp(p.width, CLASSES)
    opt = torch.optim.AdamW(model.parameters(), lr=peak, weight_decay=0.01)
    for step in range(1, steps + 1):
        idx = order[(step - 1) * batch : step * batch]
        inputs, labels = x[idx], y[idx]
        if step in spikes:  # a corrupted shard: features in the wrong unit, labels shifted
            inputs, labels = inputs * SPIKE_INPUT_SCALE, (labels + 1) % CLASSES
        lr = _lr_at(step, peak, warmup, steps, schedule)
        for group in opt.param_groups:
            group["lr"] = lr
        loss = torch.nn.functional.cross_entropy(model(inputs), labels)
        opt.zero_grad()
        loss.backward()
        grad_norm = torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        log.step(step, loss=loss.item(), grad_norm=grad_norm.item(), learning_rate=lr)
    log.close()


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
    "momentum",
    "init_loss_scale",
    "num_labels",
    "framework",
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


def _label(family: str, cause: str | list[str] | None, first_bad_step: int | None,
           **facts: Any) -> dict[str, Any]:
    """A run's label: the four keys every label has, then the facts the run showed."""
    _require(family in FAMILIES, f"unknown family {family}")
    return {
        "family": family,
        "cause": cause,
        "first_bad_step": first_bad_step,
        "culprit_rank": None,  # a single process (multirank.py labels the multi-rank runs)
        **facts,
    }


def _common_checks(run_dir: Path, state: dict[str, Any], checkpoints: bool = True) -> None:
    """Checks every HF Trainer run must pass: the files the Trainer writes are there."""
    _require((run_dir / LOG_NAME).stat().st_size > 0, "train.log is empty")
    log = (run_dir / LOG_NAME).read_text(encoding="utf-8", errors="replace")
    _require("{'loss':" in log, "train.log has no printed {'loss': ...} dicts")
    _require((run_dir / "training_args.bin").is_file(), "no training_args.bin")
    _require((run_dir / "config.json").is_file(), "no config.json (save_model)")
    ckpts = _checkpoints(run_dir)
    _require(len(ckpts) >= 1 if checkpoints else not ckpts, f"checkpoint folders: {ckpts}")
    for step in ckpts:
        for name in CHECKPOINT_FILES:
            _require(
                (run_dir / f"checkpoint-{step}" / name).is_file(), f"checkpoint-{step} lacks {name}"
            )
    _require(len(_event_files(run_dir)) >= 1, "no TensorBoard event file")
    _require(state["global_step"] == state["max_steps"], "training did not reach max_steps")


def _plain_run(run_dir: Path) -> dict[str, list[tuple[int, float]]]:
    """Checks every plain-loop run must pass; returns its ``train/*`` series by short name."""
    log = (run_dir / LOG_NAME).read_text(encoding="utf-8", errors="replace")
    _require("step 1: loss=" in log, "train.log has no per-step lines")
    files = _event_files(run_dir)
    _require(len(files) == 1, f"expected one event file, got {len(files)}")
    series = {
        tag.removeprefix("train/"): pts
        for tag, pts in _tb_scalars(files[0]).items()
        if tag.startswith("train/")
    }
    for tag in ("loss", "grad_norm", "learning_rate"):
        _require(tag in series, f"train/{tag} not logged")
    steps = [s for s, _ in series["loss"]]
    _require(steps == list(range(1, len(steps) + 1)), "loss not logged at every step")
    _require("learning_rate" in _config(run_dir), "no config text summary")
    _require(len(_segments(run_dir)) == 1, "expected one segment")
    return series


def _first_last(points: list[tuple[int, float]]) -> tuple[float, float]:
    """First and last value of a series."""
    return points[0][1], points[-1][1]


def _r(value: float) -> float | str:
    """Round for a label; non-finite values as strings (labels are strict JSON)."""
    return round(value, 4) if math.isfinite(value) else str(value)


def _check_healthy(run_dir: Path, p: Params) -> dict[str, Any]:
    """Loss and eval loss both fall clearly; everything finite; one segment."""
    del p
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
    return _label(
        "healthy", None, None,
        steps=state["global_step"], segments=1,
        loss_first=_r(l0), loss_last=_r(l1), eval_loss_first=_r(e0), eval_loss_last=_r(e1),
        checkpoints=_checkpoints(run_dir), config=_config(run_dir),
    )


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


#: Any of these explains a NaN after a grad-norm spike at a constant LR far too high, with no
#: warm-up and no clipping; the first is the root.
NAN_CAUSES = ["lr_too_high", "no_clipping", "no_warmup"]


def _check_nan(run_dir: Path, p: Params) -> dict[str, Any]:
    """The loss goes NaN after a grad-norm spike, and training goes on logging NaN."""
    del p
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
    first_nonfinite_grad = next(s for s, v in grad_norm if not math.isfinite(v))
    first_bad = first_nan  # the guide: the first NaN/Inf train loss (the grad norm is a fact)
    # the TensorBoard file must show the NaN too
    (tb_file,) = _event_files(run_dir)
    tb_loss = dict(_tb_scalars(tb_file)["train/loss"])
    _require(math.isnan(tb_loss[first_nan]), "TensorBoard loss is not NaN at the first NaN step")
    _require(len(_segments(run_dir)) == 1, "expected one segment")
    finite_before = [v for s, v in grad_norm if s < spike_step]
    config = _config(run_dir)
    _require(config["max_grad_norm"] == 0.0 and config["warmup_steps"] == 0, "config drifted")
    return _label(
        "nan_inf", NAN_CAUSES, first_bad,
        first_nan_step=first_nan,
        first_nonfinite_grad_norm_step=first_nonfinite_grad,
        spike_step=spike_step,
        spike_ratio_to_median=round(ratio, 2),
        grad_norm_median_before_spike=_r(statistics.median(finite_before)),
        nan_loss_steps=len(nan_steps),
        steps=state["global_step"], segments=1,
        checkpoints=_checkpoints(run_dir), config=config,
    )


def _check_hidden_nan(run_dir: Path, p: Params) -> dict[str, Any]:
    """The NaN recipe with the filter on: grad_norm goes NaN, the logged loss stays finite."""
    del p
    state = _state(run_dir)
    _common_checks(run_dir, state)
    loss = _history(state, "loss")
    grad_norm = _history(state, "grad_norm")
    bad_grad = [s for s, v in grad_norm if not math.isfinite(v)]
    _require(bool(bad_grad), "grad_norm never went non-finite")
    first_bad = bad_grad[0]
    _require(all(math.isfinite(v) for _, v in loss), "the filter did not hide the NaN loss")
    (tb_file,) = _event_files(run_dir)
    tb = _tb_scalars(tb_file)
    _require(all(math.isfinite(v) for _, v in tb["train/loss"]), "TensorBoard loss not finite")
    _require(not math.isfinite(dict(tb["train/grad_norm"])[first_bad]), "TB grad_norm finite")
    config = _config(run_dir)
    _require(config["logging_nan_inf_filter"] is True, "the filter is not on")
    logged = dict(loss)
    before = [v for s, v in loss if s < first_bad]
    spike = _spike_step(grad_norm, first_bad)
    after = [logged[s] for s in bad_grad if s in logged]
    return _label(
        "nan_inf", NAN_CAUSES, first_bad,
        hidden_by_nan_inf_filter=True,
        first_nonfinite_grad_norm_step=first_bad,
        nonfinite_grad_norm_steps=len(bad_grad),
        spike_step=spike[0] if spike else None,
        spike_ratio_to_median=round(spike[1], 2) if spike else None,
        logged_loss_before_first_bad=_r(before[-1]) if before else None,
        logged_loss_at_bad_steps_min=_r(min(after)),
        logged_loss_at_bad_steps_max=_r(max(after)),
        logged_loss_zero_steps=sum(1 for s in bad_grad if logged.get(s) == 0.0),
        steps=state["global_step"], segments=1,
        checkpoints=_checkpoints(run_dir), config=config,
    )


def _check_resumed(run_dir: Path, p: Params) -> dict[str, Any]:
    """Two launches: a crash after step 25, a resume from checkpoint-20 to the end."""
    del p
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
    return _label(
        "healthy", None, None,
        note=f"launch 1 crashed (traceback) after step {seg0['last_step']}; launch 2 "
        f"resumed from checkpoint-{resumed_from} and finished",
        crash={"family": "crash", "cause": "exception", "after_step": seg0["last_step"]},
        steps=state["global_step"], segments=2,
        restart_step=seg1["first_step"],
        crash_after_step=seg0["last_step"],
        resumed_from_checkpoint=resumed_from,
        segment_steps=[[s["first_step"], s["last_step"]] for s in segments],
        checkpoints=_checkpoints(run_dir), config=_config(run_dir),
    )


def _check_overfit(run_dir: Path, p: Params) -> dict[str, Any]:
    """Train loss keeps falling while eval loss rises after its minimum."""
    del p
    state = _state(run_dir)
    _common_checks(run_dir, state)
    loss = _history(state, "loss")
    eval_loss = _history(state, "eval_loss")
    min_step, min_val = min(eval_loss, key=lambda pt: pt[1])
    last_step, last_val = eval_loss[-1]
    _require(min_step < last_step, "eval loss minimum is at the end")
    _require(last_val > 1.2 * min_val, f"eval loss barely rose: {min_val:.3f} -> {last_val:.3f}")
    train_at_min = min((pt for pt in loss if pt[0] >= min_step), key=lambda pt: pt[0])[1]
    _require(loss[-1][1] < 0.5 * train_at_min, "train loss did not keep falling")
    _require(len(_segments(run_dir)) == 1, "expected one segment")
    return _label(
        "overfitting", "overfitting", min_step,
        eval_loss_min_step=min_step,
        eval_loss_min=_r(min_val), eval_loss_last=_r(last_val),
        loss_first=_r(loss[0][1]), loss_last=_r(loss[-1][1]),
        steps=state["global_step"], segments=1, train_examples=OVERFIT_EXAMPLES,
        checkpoints=_checkpoints(run_dir), config=_config(run_dir),
    )


FLAT_TOLERANCE = 0.05  # "flat": the halves' means within 5%, eval loss within 0.5%


def _flat_loss(loss: list[tuple[int, float]], eval_loss: list[tuple[int, float]]) -> float:
    """The relative change between the means of the loss's two halves (fails if not flat).

    Batch-to-batch noise is large in these fine-tunes (the new task's sequences cost more
    than the old ones), so flatness is judged on means and on the eval loss.
    """
    values = [v for _, v in loss]
    half = len(values) // 2
    first, second = statistics.mean(values[:half]), statistics.mean(values[half:])
    change = abs(second - first) / max(abs(first), 1e-12)
    _require(change <= FLAT_TOLERANCE, f"loss not flat: halves {first:.4g} -> {second:.4g}")
    _require(len(eval_loss) >= 2, "no eval_loss")
    e0, e1 = eval_loss[0][1], eval_loss[-1][1]
    _require(abs(e1 - e0) <= 0.005 * e0, f"eval loss moved: {e0:.4g} -> {e1:.4g}")
    return change


def _check_lr_too_low(run_dir: Path, p: Params) -> dict[str, Any]:
    """A full fine-tune whose loss does not move, with healthy gradients: the LR is too low."""
    del p
    state = _state(run_dir)
    _common_checks(run_dir, state, checkpoints=False)
    loss, grad_norm = _history(state, "loss"), _history(state, "grad_norm")
    eval_loss = _history(state, "eval_loss")
    dev = _flat_loss(loss, eval_loss)
    _require(loss[0][1] < 0.8 * math.log(VOCAB), "loss starts near chance: not a fine-tune")
    median_grad = statistics.median(v for _, v in grad_norm)
    _require(median_grad > 0.05, f"grad norm is ≈0 ({median_grad:.3g}): frozen, not low LR")
    config = _config(run_dir)
    _require(config["learning_rate"] <= 1e-6, "the LR is not too low")
    return _label(
        "not_decreasing", "lr_too_low", loss[0][0],
        finetune_mode="full",
        loss_first=_r(loss[0][1]), loss_last=_r(loss[-1][1]), halves_relative_change=_r(dev),
        eval_loss_first=_r(eval_loss[0][1]), eval_loss_last=_r(eval_loss[-1][1]),
        grad_norm_median=_r(median_grad), chance_loss=_r(math.log(VOCAB)),
        steps=state["global_step"], segments=1, config=config,
    )


def _check_frozen(run_dir: Path, p: Params) -> dict[str, Any]:
    """A fine-tune at a normal LR whose loss does not move and whose grad norm is ≈ 0."""
    del p
    state = _state(run_dir)
    _common_checks(run_dir, state, checkpoints=False)
    loss, grad_norm = _history(state, "loss"), _history(state, "grad_norm")
    eval_loss = _history(state, "eval_loss")
    dev = _flat_loss(loss, eval_loss)
    max_grad = max(v for _, v in grad_norm)
    _require(max_grad < 0.05, f"grad norm is not ≈0: up to {max_grad:.3g}")
    log = (run_dir / LOG_NAME).read_text(encoding="utf-8", errors="replace")
    line = next((ln for ln in log.splitlines() if ln.startswith("trainable params:")), "")
    _require(bool(line), "no trainable-parameters line in train.log")
    trainable, total = (int(part.split(":")[1].replace(",", "")) for part in line.split("||")[:2])
    _require(trainable / total < 0.01, "more than 1% of the parameters are trainable")
    config = _config(run_dir)
    _require(config["learning_rate"] >= 1e-5, "the LR is low: not only frozen")
    return _label(
        "not_decreasing", "frozen_params", loss[0][0],
        trainable_params=trainable, total_params=total,
        loss_first=_r(loss[0][1]), loss_last=_r(loss[-1][1]), halves_relative_change=_r(dev),
        eval_loss_first=_r(eval_loss[0][1]), eval_loss_last=_r(eval_loss[-1][1]),
        grad_norm_max=_r(max_grad),
        steps=state["global_step"], segments=1, config=config,
    )


def _check_labels_masked(run_dir: Path, p: Params) -> dict[str, Any]:
    """Every label -100: transformers logs loss 0.0 and grad_norm 0.0 at every step."""
    del p
    state = _state(run_dir)
    _common_checks(run_dir, state, checkpoints=False)
    loss, grad_norm = _history(state, "loss"), _history(state, "grad_norm")
    _require(all(v == 0.0 for _, v in loss), f"loss is not 0 everywhere: {loss[:3]}")
    _require(all(v == 0.0 for _, v in grad_norm), f"grad_norm is not 0: {grad_norm[:3]}")
    (tb_file,) = _event_files(run_dir)
    _require(all(v == 0.0 for _, v in _tb_scalars(tb_file)["train/loss"]), "TB loss not 0")
    return _label(
        "not_decreasing", "labels_masked", loss[0][0],
        logged_loss=0.0, logged_grad_norm=0.0, logged_points=len(loss),
        steps=state["global_step"], segments=1, config=_config(run_dir),
    )


def _check_chance(run_dir: Path, p: Params) -> dict[str, Any]:
    """Random labels: train and eval loss sit at ln(4) for the whole run."""
    del p
    state = _state(run_dir)
    _common_checks(run_dir, state, checkpoints=False)
    loss, eval_loss = _history(state, "loss"), _history(state, "eval_loss")
    chance = math.log(CHANCE_LABELS)
    worst = max(abs(v - chance) for _, v in loss + eval_loss)
    _require(worst < 0.08, f"loss leaves chance level by {worst:.3f}")
    second_half = [v for s, v in loss if s > loss[-1][0] / 2]
    _require(abs(statistics.mean(second_half) - chance) < 0.03, "mean loss is not at chance")
    with open(run_dir / "config.json", encoding="utf-8") as f:
        _require(len(json.load(f)["id2label"]) == CHANCE_LABELS, "config.json num_labels")
    return _label(
        "not_decreasing", "chance_level", loss[0][0],
        num_labels=CHANCE_LABELS, chance_loss=_r(chance), max_distance_from_chance=_r(worst),
        loss_first=_r(loss[0][1]), loss_last=_r(loss[-1][1]),
        eval_loss_last=_r(eval_loss[-1][1]),
        steps=state["global_step"], segments=1, config=_config(run_dir),
    )


def _check_bad_batch(run_dir: Path, p: Params) -> dict[str, Any]:
    """Calm grad norm, then a non-finite loss at exactly the corrupted batch's step."""
    series = _plain_run(run_dir)
    loss, grad_norm = series["loss"], series["grad_norm"]
    planted = _or(p.event_step, BAD_BATCH_STEP)
    bad_loss = [s for s, v in loss if not math.isfinite(v)]
    bad_grad = [s for s, v in grad_norm if not math.isfinite(v)]
    _require(bool(bad_loss), "the loss never went non-finite")
    # With tanh, the inf feature saturates the hidden units: the loss of the bad step itself
    # can stay finite while its gradient (inf × 0) is NaN, so the weights, and every later
    # loss, are NaN. The first bad step is the first non-finite loss *or* grad norm.
    first_bad = min(bad_loss[:1] + bad_grad[:1])
    _require(first_bad == planted, f"first non-finite step {first_bad}, planted {planted}")
    _require(bad_loss == list(range(bad_loss[0], len(loss) + 1)), "the NaN did not persist")
    before = [v for s, v in grad_norm if s < first_bad]
    _require(all(math.isfinite(v) for v in before), "non-finite grad norm before the bad batch")
    _require(all(math.isfinite(v) for s, v in loss if s < first_bad), "non-finite loss before")
    median = statistics.median(before)
    recent = max(before[-10:])
    _require(recent < 3 * median, f"grad norm not calm before: {recent:.3g} vs median {median:.3g}")
    log = (run_dir / LOG_NAME).read_text(encoding="utf-8", errors="replace")
    _require(f"step {first_bad}: " in log, "train.log does not show the bad step")
    return _label(
        "nan_inf", "bad_data", first_bad,
        bad_batch_step=planted,
        first_nonfinite_loss_step=bad_loss[0],
        first_nonfinite_grad_norm_step=bad_grad[0] if bad_grad else None,
        loss_at_bad_step=_r(dict(loss)[first_bad]),
        grad_norm_at_bad_step=_r(dict(grad_norm)[first_bad]),
        grad_norm_median_before=_r(median), grad_norm_max_last10_before=_r(recent),
        nonfinite_loss_steps=len(bad_loss),
        corruption="one input feature of one example in the batch is +inf",
        steps=len(loss), segments=1, config=_config(run_dir),
    )


def _skipped_steps(series: dict[str, list[tuple[int, float]]]) -> list[int]:
    """Steps whose optimizer step the GradScaler skipped (the skip counter went up)."""
    out, last = [], 0.0
    for step, count in series["skipped_steps"]:
        if count > last:
            out.append(step)
        last = count
    return out


def _check_fp16_collapse(run_dir: Path, p: Params) -> dict[str, Any]:
    """fp16: an ``inf`` loss, then every step skipped while the loss scale halves."""
    del p
    series = _plain_run(run_dir)
    loss, scale = series["loss"], dict(series["loss_scale"])
    skipped = _skipped_steps(series)
    last = loss[-1][0]
    run_start = last
    while run_start - 1 in skipped:
        run_start -= 1
    _require(last in skipped and last - run_start + 1 >= 10, "no final run of ≥10 skipped steps")
    bad = [s for s, v in loss if not math.isfinite(v)]
    _require(bool(bad), "the loss never went inf")
    first_bad = bad[0]
    _require(first_bad in skipped, "the first inf loss step was not skipped")
    # the first overflow may come well before the final collapse (a few batches overflow,
    # the scale drops, training goes on, then every batch overflows): both are kept as facts
    _require(not math.isfinite(dict(loss)[run_start]), "the collapse does not start with inf")
    _require(scale[last] <= scale[run_start] / 2**9, "the loss scale did not collapse")
    config = _config(run_dir)
    _require(config["fp16"] is True, "fp16 not in the config")
    before = [s for s in skipped if s < first_bad]
    return _label(
        "nan_inf", "fp16_overflow", first_bad,
        first_inf_loss_step=first_bad,
        collapse_start_step=run_start,
        collapse_skipped_steps=last - run_start + 1,
        skipped_steps_total=len(skipped),
        skipped_steps_before_overflow=before,
        loss_scale_at_collapse=scale[run_start], loss_scale_last=scale[last],
        float16_max=65504.0,
        steps=len(loss), segments=1, config=config,
    )


def _check_fp16_healthy(run_dir: Path, p: Params) -> dict[str, Any]:
    """fp16: a few skipped steps at the very start, then a finite, falling loss."""
    del p
    series = _plain_run(run_dir)
    loss = series["loss"]
    skipped = _skipped_steps(series)
    _require(1 <= len(skipped) <= 6, f"expected a few warm-up skips, got {skipped}")
    _require(max(skipped) <= 10, f"skips after the start: {skipped}")
    _require(all(math.isfinite(v) for _, v in loss), "non-finite loss")
    first5 = statistics.mean(v for _, v in loss[:5])
    last10 = statistics.mean(v for _, v in loss[-10:])
    _require(last10 < 0.3 * first5, f"loss did not fall: {first5:.3g} -> {last10:.3g}")
    scale = dict(series["loss_scale"])
    _require(_config(run_dir)["fp16"] is True, "fp16 not in the config")
    return _label(
        "healthy", None, None,
        warnings=[],
        warmup_skipped_steps=skipped,
        loss_scale_first=scale[1], loss_scale_last=scale[loss[-1][0]],
        loss_first5_mean=_r(first5), loss_last10_mean=_r(last10),
        steps=len(loss), segments=1, config=_config(run_dir),
    )


def _rolling_median(values: list[float], half: int) -> list[float]:
    """Centred rolling median with a window of ``2 * half + 1`` (shorter at the ends)."""
    return [
        statistics.median(values[max(0, i - half) : i + half + 1]) for i in range(len(values))
    ]


def _check_diverging(run_dir: Path, p: Params) -> dict[str, Any]:
    """The loss falls, then rises by orders of magnitude for the rest of the run, finite."""
    del p
    series = _plain_run(run_dir)
    loss, lr = series["loss"], dict(series["learning_rate"])
    _require(all(math.isfinite(v) for _, v in loss), "non-finite loss: not a finite divergence")
    steps = [s for s, _ in loss]
    smooth = _rolling_median([v for _, v in loss], 4)
    i_min = min(range(len(smooth)), key=smooth.__getitem__)
    _require(i_min < len(smooth) - 20, "the loss minimum is near the end: no divergence")
    # the labelling guide: the last logged step at the lowest loss before the rise that never
    # recovers (where it turned): the lowest raw loss up to the smoothed minimum's window
    i_low = min(range(min(len(loss) - 1, i_min + 5)), key=lambda i: loss[i][1])
    first_bad = steps[i_low]
    tail = statistics.median(v for _, v in loss[-20:])
    _require(tail >= 30 * smooth[i_min], f"loss rose only {tail / smooth[i_min]:.1f}x")
    thirds = [statistics.median(smooth[k]) for k in _thirds(i_min, len(smooth))]
    _require(thirds[0] < thirds[1] < thirds[2], f"the rise is not steady: {thirds}")
    peak = max(lr.values())
    return _label(
        "diverging", "lr_too_high", first_bad,
        loss_min_step=steps[i_min], loss_min_smoothed=_r(smooth[i_min]),
        loss_tail_median=_r(tail), rise_factor=_r(tail / smooth[i_min]),
        lr_at_first_bad=_r(lr[first_bad]), lr_peak=_r(peak),
        first_bad_step_rule="docs/labels.md: the last logged step at the lowest loss before "
        "the rise that never recovers",
        steps=len(loss), segments=1, config=_config(run_dir),
    )


def _thirds(start: int, end: int) -> list[slice]:
    """Three consecutive slices covering ``start..end``."""
    k = (end - start) // 3
    return [slice(start, start + k), slice(start + k, start + 2 * k), slice(start + 2 * k, end)]


SPIKE_MIN_RATIO = 3.0  # a loss spike: at least 3x the median of the 10 steps before
RECOVERED_RATIO = 1.5  # recovered: 3..8 steps later, the median is back under 1.5x that


def _check_spikes(run_dir: Path, p: Params) -> dict[str, Any]:
    """Loss spikes at exactly the scaled batches, each recovered within a few steps."""
    series = _plain_run(run_dir)
    loss = dict(series["loss"])
    _require(all(math.isfinite(v) for v in loss.values()), "non-finite loss")
    found = []
    for step in range(11, len(loss) + 1):
        before = statistics.median(loss[s] for s in range(step - 10, step))
        if loss[step] >= SPIKE_MIN_RATIO * before:
            found.append(step)
    planted = _spike_steps(p)
    _require(found == planted, f"spikes at {found}, planted {planted}")
    ratios, recovered_after = [], []
    for step in planted:
        before = statistics.median(loss[s] for s in range(step - 10, step))
        after = statistics.median(loss[s] for s in range(step + 3, step + 9))
        _require(after <= RECOVERED_RATIO * before, f"no recovery after the spike at {step}")
        ratios.append(_r(loss[step] / before))
        recovered_after.append(next(s for s in range(step + 1, step + 9)
                                    if loss[s] <= RECOVERED_RATIO * before) - step)
    first5 = statistics.mean(loss[s] for s in range(1, 6))
    last10 = statistics.mean(loss[s] for s in range(len(loss) - 9, len(loss) + 1))
    _require(last10 < 0.5 * first5, "the loss did not fall overall")
    return _label(
        "healthy", None, None,
        warnings=["loss-spikes"],
        spike_steps=planted, spike_ratio_to_median=ratios,
        recovered_within_steps=recovered_after,
        loss_first5_mean=_r(first5), loss_last10_mean=_r(last10),
        note="spikes that recover are a warning, not a failure: verdict healthy + warning",
        steps=len(loss), segments=1, config=_config(run_dir),
    )


# --------------------------------------------------------------------------------------------
# The registry and the orchestration
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class RunSpec:
    """One sample run: how it is trained, checked and described."""

    name: str
    situation: str
    how: str
    train: Callable[[str, int, Params], None]
    check: Callable[[Path, Params], dict[str, Any]]
    conclusion: Callable[[dict[str, Any]], str]
    launches: int = 1
    crash_launches: frozenset[int] = frozenset()  # launches expected to exit non-zero


RUNS: dict[str, RunSpec] = {
    spec.name: spec
    for spec in (
        RunSpec(
            name="healthy_hf_trainer",
            situation="a healthy HF Trainer run: loss and eval_loss fall",
            how="tiny GPT-2, next-token on arithmetic progressions, AdamW lr 1e-2 with linear "
            "decay, warmup 10, clip 1.0, 100 steps, eval every 20, checkpoints 50 and 100",
            train=_train_healthy,
            check=_check_healthy,
            conclusion=lambda lb: f"healthy (loss {lb['loss_first']} → {lb['loss_last']})",
        ),
        RunSpec(
            name="nan_after_grad_spike",
            situation="the loss blows up from the first steps and goes NaN a few steps after a "
            "grad-norm spike; training goes on",
            how=f"tiny GPT-2, SGD at constant lr {NAN_LR:g} (far too high: the loss rises "
            "from step 2), no warmup, max_grad_norm=0 (no clipping), "
            "logging_nan_inf_filter=False, logging every step, 40 steps",
            train=_train_nan,
            check=_check_nan,
            conclusion=lambda lb: (
                f"nan_inf / lr_too_high (or no_clipping, no_warmup): first NaN loss at step "
                f"{lb['first_nan_step']}, after a grad-norm spike at step {lb['spike_step']} "
                f"({lb['spike_ratio_to_median']}× the earlier median)"
            ),
        ),
        RunSpec(
            name="hidden_nan_hf_filter",
            situation="the same NaN, hidden by the Trainer's default logging_nan_inf_filter: "
            "the logged loss stays finite while grad_norm is NaN",
            how="as nan_after_grad_spike, with logging_nan_inf_filter=True (the default)",
            train=_train_hidden_nan,
            check=_check_hidden_nan,
            conclusion=lambda lb: (
                f"nan_inf / lr_too_high: grad_norm NaN from step {lb['first_bad_step']} "
                f"({lb['nonfinite_grad_norm_steps']} steps) while the logged loss is "
                f"{lb['logged_loss_at_bad_steps_min']} at {lb['logged_loss_zero_steps']} of "
                f"them (the filter drops the NaN losses from the logged mean)"
            ),
        ),
        RunSpec(
            name="nan_bad_batch",
            situation="NaN loss at one step with a calm grad norm before it: a corrupted batch",
            how=f"plain PyTorch loop + SummaryWriter: MLP classifier, AdamW 3e-3, warmup 10, "
            f"cosine, clip 1.0, 60 steps; one example of the batch of step {BAD_BATCH_STEP} "
            "has an inf feature",
            train=_train_bad_batch,
            check=_check_bad_batch,
            conclusion=lambda lb: (
                f"nan_inf / bad_data: grad norm {lb['grad_norm_at_bad_step']} at step "
                f"{lb['first_bad_step']} (inspect that batch; its own loss was still "
                f"{lb['loss_at_bad_step']}), NaN loss from step "
                f"{lb['first_nonfinite_loss_step']}; grad norm calm before "
                f"(median {lb['grad_norm_median_before']})"
            ),
        ),
        RunSpec(
            name="fp16_overflow_collapse",
            situation="fp16 loss scaling: the outputs pass the float16 maximum, the loss is "
            "inf, every step is skipped and the loss scale collapses",
            how="plain loop: MLP regression on unnormalised targets (~2e4 × N(2, 4)) under "
            "torch.autocast('cpu', float16) with a real GradScaler('cpu'), Adam 0.3, "
            "120 steps; logs train/loss_scale and train/skipped_steps",
            train=_train_fp16_collapse,
            check=_check_fp16_collapse,
            conclusion=lambda lb: (
                f"nan_inf / fp16_overflow: inf loss from step {lb['first_bad_step']}, "
                f"{lb['collapse_skipped_steps']} skipped steps in a row, loss scale "
                f"{lb['loss_scale_at_collapse']:g} → {lb['loss_scale_last']:.3g}"
            ),
        ),
        RunSpec(
            name="fp16_warmup_skips_healthy",
            situation="healthy fp16 run: only the first few steps are skipped while the "
            "GradScaler finds its scale (must not be flagged)",
            how="as fp16_overflow_collapse with standardised targets and Adam 1e-2",
            train=_train_fp16_healthy,
            check=_check_fp16_healthy,
            conclusion=lambda lb: (
                f"healthy: steps {lb['warmup_skipped_steps']} skipped at the start (scale "
                f"{lb['loss_scale_first']:g} → {lb['loss_scale_last']:g}), then none"
            ),
        ),
        RunSpec(
            name="diverging_finite",
            situation="the loss rises by orders of magnitude while staying finite",
            how="plain loop: MLP regression, plain SGD, linear warm-up over 80 steps "
            "to a far too high peak LR 3.0, clip 1.0, 120 steps",
            train=_train_diverging,
            check=_check_diverging,
            conclusion=lambda lb: (
                f"diverging / lr_too_high: lowest loss at step {lb['first_bad_step']} (LR "
                f"{lb['lr_at_first_bad']} on the way to {lb['lr_peak']}), then rising to "
                f"{lb['rise_factor']:.0f}× its minimum by the end"
            ),
        ),
        RunSpec(
            name="loss_spikes_recover",
            situation="a few loss spikes that recover within a few steps",
            how=f"plain loop: MLP classifier, AdamW 1e-2, warmup 10, cosine, clip 1.0, 110 "
            f"steps; the batches of three steps come from a corrupted shard (features "
            f"×{SPIKE_INPUT_SCALE:g}, labels shifted by one class)",
            train=_train_spikes,
            check=_check_spikes,
            conclusion=lambda lb: (
                f"healthy + warning loss-spikes at steps {lb['spike_steps']} "
                f"({', '.join(f'{r:.1f}×' for r in lb['spike_ratio_to_median'])} the median "
                f"before), each recovered"
            ),
        ),
        RunSpec(
            name="lr_too_low_full_finetune",
            situation="a full fine-tune at LR 1e-8: the loss stays at its initial value",
            how="tiny GPT-2 pretrained in the script (progressions with steps 1..3), then HF "
            "Trainer full fine-tune on steps 1..5 at lr 1e-8, batch 64, warmup 6, clip 1.0, "
            "60 steps",
            train=_train_lr_too_low,
            check=_check_lr_too_low,
            conclusion=lambda lb: (
                f"not_decreasing / lr_too_low: eval loss {lb['eval_loss_first']} → "
                f"{lb['eval_loss_last']}, noisy train loss flat (below chance "
                f"{lb['chance_loss']}), grad norm healthy "
                f"({lb['grad_norm_median']}); full fine-tune at 1e-8"
            ),
        ),
        RunSpec(
            name="frozen_params",
            situation="(almost) every parameter frozen: grad norm ≈ 0, loss flat",
            how="as lr_too_low_full_finetune at lr 3e-5 (the usual full fine-tune range), "
            "with requires_grad=False on every parameter but transformer.ln_f.bias (32 of "
            "~10k)",
            train=_train_frozen,
            check=_check_frozen,
            conclusion=lambda lb: (
                f"not_decreasing / frozen_params: {lb['trainable_params']} of "
                f"{lb['total_params']} parameters trainable, grad norm ≤ {lb['grad_norm_max']}, "
                f"eval loss {lb['eval_loss_first']} → {lb['eval_loss_last']}"
            ),
        ),
        RunSpec(
            name="labels_masked",
            situation="every label is -100 (masked): nothing to learn",
            how="the healthy GPT-2 recipe (60 steps) with every label set to -100",
            train=_train_labels_masked,
            check=_check_labels_masked,
            conclusion=lambda lb: (
                "not_decreasing / labels_masked: transformers 5 logs loss 0.0 and grad_norm "
                f"0.0 at all {lb['logged_points']} logged steps"
            ),
        ),
        RunSpec(
            name="chance_level_classifier",
            situation="labels independent of the inputs: the loss sits at ln(4)",
            how=f"tiny BERT, {CHANCE_LABELS} classes, random labels, {CHANCE_EXAMPLES} "
            "examples (none seen twice), AdamW 1e-3, 120 steps, eval every 40",
            train=_train_chance,
            check=_check_chance,
            conclusion=lambda lb: (
                f"not_decreasing / chance_level: loss {lb['loss_first']} → {lb['loss_last']} "
                f"at ln({lb['num_labels']}) = {lb['chance_loss']}"
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
            check=_check_resumed,
            launches=2,
            crash_launches=frozenset({0}),
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
            check=_check_overfit,
            conclusion=lambda lb: (
                f"overfitting from step {lb['eval_loss_min_step']} (eval_loss min "
                f"{lb['eval_loss_min']} → {lb['eval_loss_last']})"
            ),
        ),
    )
}
#: Modules beside this file that register more runs through a ``SPECS`` tuple.
SPEC_MODULES = ("multirank", "checkpoints", "slowruns", "resumeruns")


def _extra_specs() -> Iterator[Any]:
    """The ``SPECS`` of every module of :data:`SPEC_MODULES` that exists beside this file."""
    for module_name in SPEC_MODULES:
        if (HERE / f"{module_name}.py").exists():
            yield from importlib.import_module(module_name).SPECS


RUNS.update(
    {
        spec.name: RunSpec(
            name=spec.name,
            situation=spec.situation,
            how=spec.how,
            train=spec.train,
            check=spec.check,
            conclusion=spec.conclusion,
            crash_launches=frozenset({0}) if spec.crashes else frozenset(),
        )
        for spec in _extra_specs()
    }
)


def _launch(spec: RunSpec, out: Path, dirname: str, launch: int, p: Params) -> int:
    """Run one training launch in a child process, appending its output to train.log."""
    run_dir = out / dirname
    env = dict(os.environ)
    env.update(
        {
            "PYTHONHASHSEED": "0",
            "OMP_NUM_THREADS": "1",
            "MKL_NUM_THREADS": "1",
            "TENSORBOARD_LOGGING_DIR": f"{out.name}/{dirname}/{TB_SUBDIR}",
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
        "--_dir",
        dirname,
        "--_launch",
        str(launch),
        "--_params",
        p.to_json(),
        "--out",
        out.name,
    ]
    with open(run_dir / LOG_NAME, "ab") as log:
        proc = subprocess.run(cmd, cwd=out.parent, env=env, stdout=log, stderr=log, check=False)
    return proc.returncode


def _cleanup(run_dir: Path) -> None:
    """Remove what is useless for analysis (caches); everything the training wrote stays."""
    for cache in run_dir.rglob("__pycache__"):
        shutil.rmtree(cache)


def guide_step_tolerance(label: dict[str, Any]) -> int | None:
    """The labelling guide's default ``step_tolerance`` for a label (``docs/labels.md``).

    From the label's family and the run's own numbers: ``steps`` (the last step), the config's
    ``logging_steps`` (1 when the label has no config: the plain loops and the rank logs log
    every step) and ``eval_steps``. ``nan_inf``: 0 when every step is logged, else one logging
    interval; ``diverging``: 10% of the logged steps, at least two logging intervals;
    ``not_decreasing`` and ``slow``: 10% of the logged steps; ``overfitting``: one evaluation
    interval; ``oom``, ``hang``, ``crash``, ``resume``: one logging interval; ``healthy``: none.
    """
    family = label["family"]
    config = label.get("config") or {}
    interval = int(config.get("logging_steps") or 1)
    steps = label.get("steps")
    if family == "healthy":
        return None
    if family == "nan_inf":
        return 0 if interval == 1 else interval
    if family in ("diverging", "not_decreasing", "slow"):
        _require(isinstance(steps, int), f"a {family} label needs the run's steps")
        tenth = max(1, round(0.1 * steps))
        return max(tenth, 2 * interval) if family == "diverging" else tenth
    if family == "overfitting":
        return int(config.get("eval_steps") or interval)
    return interval


def _with_tolerance(label: dict[str, Any]) -> dict[str, Any]:
    """``label`` with ``step_tolerance`` (the guide's default unless the check set one) right
    after ``first_bad_step``."""
    tolerance = label.get("step_tolerance", guide_step_tolerance(label))
    out: dict[str, Any] = {}
    for key, value in label.items():
        if key != "step_tolerance":
            out[key] = value
        if key == "first_bad_step":
            out["step_tolerance"] = tolerance
    return out


def label_path(run_dir: Path) -> Path:
    """Where a run's label file goes: ``<run>.label.json`` beside the run directory."""
    return run_dir.with_name(run_dir.name + LABEL_SUFFIX)


def make_run(
    spec: RunSpec, out: Path, p: Params | None = None, dirname: str | None = None,
    verbose: bool = True,
) -> dict[str, Any]:
    """Delete and regenerate one run, self-check it, write and return its label.

    ``verbose``: print one line when the run is made.

    Raises:
        SelfCheckError: a launch failed unexpectedly, or the run did not show its situation
            (the run directory is left for inspection, and no label is written).
    """
    p = p or Params()
    dirname = dirname or spec.name
    run_dir = out / dirname
    label_file = label_path(run_dir)
    for old in (run_dir, label_file):
        if old.is_dir():
            shutil.rmtree(old)
        elif old.exists():
            old.unlink()
    run_dir.mkdir(parents=True)
    t0 = time.perf_counter()
    for launch in range(spec.launches):
        rc = _launch(spec, out, dirname, launch, p)
        if (launch in spec.crash_launches) != (rc != 0):
            tail = (run_dir / LOG_NAME).read_text(encoding="utf-8", errors="replace")[-3000:]
            raise SelfCheckError(f"{dirname}: launch {launch} exited {rc}\n{tail}")
    _cleanup(run_dir)
    label = _with_tolerance(spec.check(run_dir, p))
    if p != Params():
        label["params"] = dataclasses.asdict(p)
    label["situation"] = spec.name
    label_file.write_text(json.dumps(label, indent=2) + "\n", encoding="utf-8")
    size = sum(f.stat().st_size for f in run_dir.rglob("*") if f.is_file())
    if verbose:
        print(f"{dirname}: ok in {time.perf_counter() - t0:.1f}s, {size / 1024:.0f} KiB")
    return label


def relabel_run(spec: RunSpec, out: Path) -> dict[str, Any]:
    """Recompute and write the label of a run already in ``out`` from its own data (the
    self-check), without training it again: for a change of labelling convention."""
    run_dir = out / spec.name
    _require(run_dir.is_dir(), f"no run folder {run_dir}")
    label = _with_tolerance(spec.check(run_dir, Params()))
    label["situation"] = spec.name
    label_path(run_dir).write_text(json.dumps(label, indent=2) + "\n", encoding="utf-8")
    print(f"{spec.name}: relabelled from its data")
    return label


def read_labels(out: Path) -> dict[str, dict[str, Any]]:
    """``{run name: label}`` for every ``<name>.label.json`` in ``out``."""
    return {
        f.name.removesuffix(LABEL_SUFFIX): json.loads(f.read_text(encoding="utf-8"))
        for f in sorted(out.glob("*" + LABEL_SUFFIX))
    }


README_HEAD = """\
# sample_runs

Small **real** training runs for demos, tests and benchmarks. Each was made by really training
a tiny model (GPT-2 or BERT built from a config, no download, or a small MLP) on CPU on
synthetic data by [`make.py`](make.py), either with the Hugging Face `Trainer` (the folder holds
what the Trainer left behind: TensorBoard event files under `runs/`, `trainer_state.json`,
`training_args.bin`, `config.json`, `checkpoint-N/` where the run saves them) or with a plain
PyTorch loop that logs `train/loss`, `train/grad_norm`, `train/learning_rate` (and
`train/loss_scale`, `train/skipped_steps` under fp16) every step with
`torch.utils.tensorboard.SummaryWriter`, and its configuration (learning rate, warm-up,
schedule, clipping, fp16/bf16, batch size...) as a JSON text summary (tag `args`, as the HF
Trainer logs its arguments). Every folder has `train.log`, the captured
stdout/stderr of the training process(es).

Beside each run, `<name>.label.json` says what really happened, following the labelling guide
[`docs/labels.md`](../docs/labels.md): what a practitioner would call the run from its own
data, never a rule's threshold. `family` (one of `nan_inf`, `diverging`, `not_decreasing`,
`overfitting`, `oom`, `slow`, `hang`, `crash`, `resume`, `healthy`), `cause` (null when
healthy; a list when several causes are right, the root first), `first_bad_step` (in the
run's own step numbering, by the guide's convention per family: the first NaN/Inf train loss
(else grad norm) for `nan_inf`, the last step at the lowest loss before the rise for
`diverging`, the first logged step for `not_decreasing`, the best evaluation before the rise
for `overfitting`, the last step completed for `hang`, the step in progress for `crash`, the
step resumed from (the checkpoint's) for `resume`, the step where it became slow for `slow`;
null when the run does not show one: healthy runs, a run slow from its first step),
`step_tolerance` (the guide's default for the family: 0 for a NaN when every step is logged,
10% of the steps for `diverging`, `not_decreasing` and `slow`, one evaluation interval for
`overfitting`, one logging interval otherwise), `culprit_rank` (the rank that failed first;
null for single-process and healthy runs), and the facts the self-check measured
(`warnings`, spike steps, loss scale...). They are computed by `make.py`'s self-check from the
run itself, never typed by hand, and never changed to match autopsy; `bench/accuracy.py`
scores autopsy against them (figures in [`docs/accuracy.md`](../docs/accuracy.md)), and
`bench/variants.py` regenerates every situation with other seeds, learning rates, sizes and
schedules.

The `ddp_*` runs are real multi-rank jobs made by [`multirank.py`](multirank.py): 4 ranks
launched by `torchrun --standalone --nproc_per_node 4` on the gloo backend (CPU, collective
timeout 15 s) run [`ddp_worker.py`](ddp_worker.py), a tiny MLP (DDP, SGD 0.1) on synthetic
batches, every rank logging a timestamped `step N loss X mean_loss X grad_norm X lr X` line per
step (Python `logging`, on stderr), with one failure planted on one rank. Two log layouts:
`--redirects 3 --log-dir logs` (per-rank `logs/<run_id>/attempt_0/<rank>/stdout.log`,
`stderr.log` and `error.json` from `@record`; `train.log` holds torchrun's own output and its
`ChildFailedError` block) and `--tee 3` (every rank interleaved in `train.log` with torchrun's
`[defaultN]:` prefixes). Their labels add per-rank facts (`ranks`: last step, exit code, first
error), `timed_out_ranks`, `connection_closed_ranks`, `sigterm_ranks` and
`torchelastic_root_cause_rank` (torchelastic's "Root Cause", which often names a victim). Each
takes 15-30 s (the failing ones wait for the 15 s timeout). A worker that finishes leaves with
`os._exit(0)` without destroying its process group ([`worker_exit.py`](worker_exit.py)): in
torch 2.13 that teardown can deadlock, and one healthy launch in three hung until the timeout.

More runs come from modules beside `make.py` (each registers a `SPECS` tuple): the
`ckpt_*` runs ([`checkpoints.py`](checkpoints.py)) are real HF Trainer, accelerate, plain
`torch.save`, DCP, and DeepSpeed/Lightning-layout checkpoints, good or with one defect planted
(a file removed, cut short, a NaN in the Adam moments, a hostile pickle...), labelled with what
`autopsy ckpt` should say per component; the `slow_*` runs ([`slowruns.py`](slowruns.py)) are a
starved DataLoader, checkpoint saves that stall, and a 4-rank job with one slow rank; the
`resume_*` runs ([`resumeruns.py`](resumeruns.py)) are two launches into the same TensorBoard
folder, the second resuming from a checkpoint that lacked a part (scheduler, optimizer, grad
scaler, data position), labelled from the first launch's pre-crash tail.

Choices: spikes that recover are a warning, not a failure, so `loss_spikes_recover` is labelled
`healthy` with `"warnings": ["loss-spikes"]`; `resumed_after_stop` is `healthy` (its crash was
resumed from; the crash is in the label's `crash`); the NaN runs accept `lr_too_high`,
`no_clipping` or `no_warmup` (the run had all three). A stalled rank is `hang` /
`dead_rank`; the DETAIL collective mismatch fails fast on every rank, so
it is `crash`, while the same mismatch without DETAIL ends in timeouts, so `hang`.

Relabelled and remade (issue 13: labels by the guide, not by a rule; every sample reproduces):

- `nan_after_grad_spike`, `hidden_nan_hf_filter`: remade. SGD at a constant LR of 2.8 sat at
  the edge of stability for ~20 steps, and the step where it escaped to NaN depended on the
  last bits of the arithmetic: remade on another machine, the run never went NaN. At LR 12
  (still no warm-up, no clipping) the loss rises from step 2 and is NaN at step 8, the same
  step with the initial weights perturbed by up to 1% or on two threads; same label meaning
  (nan_inf / lr_too_high, no_clipping, no_warmup), first bad step 31 → 8.
- `ckpt_hf_*`: remade at the builders' usual AdamW 5e-3; the recipe used 3e-2, raised only so
  that the loss fell enough in 8 steps for HLT001 to call the run healthy. The 8 steps with
  checkpoints 4 and 8 are kept: they are what the checkpoint labels (and the tests that read
  `checkpoint-8`) are about, and HLT001 no longer needs 8 points.
- `diverging_finite`: `first_bad_step` 18 → 17, the guide's last step at the lowest loss
  before the rise, not the first step after it (a definition of the recipe's own, made to
  match a rule's step); `step_tolerance` 12 (10% of 120 steps).
- `resume_*`: `first_bad_step` is the step resumed from, the checkpoint's (40, 60, 60, 20,
  60), not the first step of the resumed launch (kept as `resume_step`).
- `ddp_rank_stall_timeout`, `ddp_collective_mismatch_silent`, `ddp_uneven_batches`:
  `first_bad_step` is the last step every rank completed (9, 7, 19; the step the job stuck in
  is `stuck_step`); the stall's cause is `dead_rank` alone (`straggler` is a slow cause).
- `slow_dataloader_starved`, `slow_rank_straggler_4ranks`: `first_bad_step` null (slow from
  the first step: no step where it became slow), not 1.
- every label: `step_tolerance`, the guide's default for its family.

Regenerate with `python sample_runs/make.py [NAME ...]` (needs torch, transformers,
accelerate, tensorboard; seconds per run); `--list` lists the runs. Seeds are fixed, every
training process runs on one thread with deterministic algorithms, and every failure is
planted or comes within a few steps, so the labels repeat on other machines; wall times,
event-file names and the last digits of values do not. `python sample_runs/make.py --check
[NAME ...]` remakes the runs in a temporary folder (never here) and compares each with its
committed label (family, cause, culprit rank and a checkpoint's audit exactly, the first bad
step within `step_tolerance`) and autopsy's verdict on it with autopsy's verdict on the
committed run; it prints one line per run and exits 1 on any difference (about 5 minutes for
all; CI runs it after the tests).

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


# --------------------------------------------------------------------------------------------
# --check: every sample regenerates to its committed label, and autopsy says the same of both
# --------------------------------------------------------------------------------------------

#: Label keys compared exactly, besides family, cause and the first bad step, when the
#: committed label has them: the culprit rank, a checkpoint sample's audit, a run's warnings.
CHECKED_KEYS = ("culprit_rank", "resumable", "checkpoint", "newest_resumable", "components",
                "warnings")
#: ``bench/accuracy.py``'s ``--step-tolerance`` default: a label without its own
#: ``step_tolerance`` allows this many logging intervals.
STEP_TOLERANCE_K = 2


def _scoring() -> Any:
    """``bench/accuracy.py``, whose matching (causes, steps within the label's tolerance) the
    check shares with the accuracy benchmark."""
    bench = str(HERE.parent / "bench")
    if bench not in sys.path:
        sys.path.insert(0, bench)
    return importlib.import_module("accuracy")


def _fmt(family: Any, cause: Any, step: Any, rank: Any = None) -> str:
    """``family/cause@step`` (``#rank`` when there is one), as the check prints it."""
    cause_text = "|".join(cause) if isinstance(cause, list) else str(cause)
    return f"{family}/{cause_text}@{step}" + ("" if rank is None else f"#{rank}")


def label_differences(committed: dict[str, Any], made: dict[str, Any]) -> list[str]:
    """What a regenerated label says otherwise than the committed one: family, cause, and
    the :data:`CHECKED_KEYS` exactly; the first bad step within the committed label's
    tolerance (as ``bench/accuracy.py`` scores a verdict)."""
    acc = _scoring()
    out = [f"{key} {committed.get(key)!r} -> {made.get(key)!r}"
           for key in ("family", "cause", *CHECKED_KEYS)
           if (key in committed or key in ("family", "cause"))
           and committed.get(key) != made.get(key)]
    tol = acc.tolerance(committed, STEP_TOLERANCE_K)
    if not acc.step_matches(committed.get("first_bad_step"), made.get("first_bad_step"), tol):
        out.append(f"first_bad_step {committed.get('first_bad_step')} -> "
                   f"{made.get('first_bad_step')} (tolerance {tol})")
    return out


def verdict_differences(committed: Any, made: Any, label: dict[str, Any]) -> list[str]:
    """What autopsy's verdict on the regenerated run says otherwise than on the committed one:
    family, cause and first rank exactly, the step within the label's tolerance."""
    acc = _scoring()
    out = []
    if committed.family != made.family:
        out.append(f"family {committed.family.value} -> {made.family.value}")
    if committed.cause != made.cause:
        out.append(f"cause {committed.cause} -> {made.cause}")
    tol = acc.tolerance(label, STEP_TOLERANCE_K)
    if not acc.step_matches(committed.step, made.step, tol):
        out.append(f"step {committed.step} -> {made.step} (tolerance {tol})")
    if committed.ranks[:1] != made.ranks[:1]:
        out.append(f"rank {list(committed.ranks[:1])} -> {list(made.ranks[:1])}")
    return out


def _verdict(run_dir: Path, problems: list[str], which: str) -> Any:
    """autopsy's verdict on a run directory (its public API); None, with the reason added to
    ``problems``, when autopsy raises."""
    from autopsy.api import diagnose, load_run

    try:
        return diagnose(load_run(run_dir)).verdict
    except Exception as exc:  # autopsy failing on a sample is a difference too
        problems.append(f"autopsy raised on the {which} run: {type(exc).__name__}: {exc}")
        return None


def check_one(name: str, work: Path, committed_root: Path = HERE) -> list[str]:
    """Regenerate one sample into ``work`` and compare it with the committed one.

    Returns the differences (empty: the sample reproduces) and prints one line.
    """
    t0 = time.perf_counter()
    label_file = committed_root / f"{name}{LABEL_SUFFIX}"
    problems: list[str] = []
    made: dict[str, Any] | None = None
    if not label_file.is_file():
        problems.append(f"no committed label {label_file.name}")
    try:
        made = make_run(RUNS[name], work, verbose=False)
    except Exception as exc:  # a self-check or a launch failed: the sample did not reproduce
        first = (str(exc).strip().splitlines() or [""])[0]
        problems.append(f"not remade: {type(exc).__name__}: {first[:300]}")
    committed = (json.loads(label_file.read_text(encoding="utf-8"))
                 if label_file.is_file() else {})
    if committed and made is not None:
        problems += [f"label: {d}" for d in label_differences(committed, made)]
    said = ""
    if committed and (committed_root / name).is_dir():
        before = _verdict(committed_root / name, problems, "committed")
        if before is not None:
            said = (f"autopsy "
                    f"{_fmt(before.family.value, before.cause, before.step, *before.ranks[:1])}")
        after = _verdict(work / name, problems, "remade") if made is not None else None
        if before is not None and after is not None:
            problems += [f"autopsy: {d}" for d in verdict_differences(before, after, committed)]
    elif committed:
        problems.append(f"no committed run folder {name}/")
    what = (_fmt(committed["family"], committed["cause"], committed["first_bad_step"],
                 committed.get("culprit_rank")) if committed else "(no label)")
    status = "ok" if not problems else "MISMATCH"
    print(f"{status:8s} {name:34s} {time.perf_counter() - t0:5.1f}s  label {what}  {said}"
          + "".join(f"\n           - {d}" for d in problems), flush=True)
    return problems


def check(names: list[str], keep: bool = False, committed: Path = HERE) -> int:
    """``--check``: regenerate ``names`` in a temporary folder, never in ``sample_runs/``, and
    compare each with its committed label and with autopsy's verdict on the committed run
    (those in ``committed``: ``sample_runs/`` itself unless a copy is given).

    Returns the exit status: 0 when every sample reproduces, 1 otherwise.
    """
    work = Path(tempfile.mkdtemp(prefix="sample_runs_check_")).resolve()
    _require(work != HERE and HERE not in work.parents, "the check must not write sample_runs/")
    t0 = time.perf_counter()
    failed = []
    try:
        for name in names:
            if check_one(name, work, committed.resolve()):
                failed.append(name)
    finally:
        if keep:
            print(f"regenerated runs kept in {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)
    took = time.perf_counter() - t0
    if failed:
        print(f"{len(failed)} of {len(names)} sample(s) did not reproduce ({took:.0f}s): "
              f"{', '.join(failed)}")
        return 1
    print(f"all {len(names)} sample(s) reproduce ({took:.0f}s)")
    return 0


def _child(name: str, dirname: str, launch: int, params: str, out_name: str) -> None:
    """Entry point of a training launch (run with the CWD = the output folder's parent)."""
    RUNS[name].train(f"{out_name}/{dirname}", launch, Params.from_json(params))


def main(argv: list[str] | None = None) -> int:
    """Parse the command line and regenerate the requested runs."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("names", nargs="*", metavar="NAME", help="runs to regenerate (all)")
    parser.add_argument("--out", type=Path, default=HERE, help="output folder (%(default)s)")
    parser.add_argument("--list", action="store_true", help="list the runs and exit")
    parser.add_argument("--check", action="store_true",
                        help="remake the runs in a temporary folder and compare them with the "
                        "committed labels and autopsy's verdicts; exit 1 on any difference")
    parser.add_argument("--relabel", action="store_true",
                        help="recompute the labels of the runs already there from their data "
                        "(the self-checks), without training them again")
    parser.add_argument("--keep", action="store_true",
                        help="with --check: keep the temporary folder and print its path")
    parser.add_argument("--committed", type=Path, default=HERE, metavar="DIR",
                        help="with --check: the committed runs and labels to compare with "
                        "(%(default)s)")
    parser.add_argument("--_child", help=argparse.SUPPRESS)
    parser.add_argument("--_dir", help=argparse.SUPPRESS)
    parser.add_argument("--_launch", type=int, default=0, help=argparse.SUPPRESS)
    parser.add_argument("--_params", default="{}", help=argparse.SUPPRESS)
    ns = parser.parse_args(argv)

    if ns._child:
        _child(ns._child, ns._dir or ns._child, ns._launch, ns._params, str(ns.out))
        return 0
    if ns.list:
        for spec in RUNS.values():
            print(f"{spec.name:26s} {spec.situation}")
        return 0
    unknown = [n for n in ns.names if n not in RUNS]
    if unknown:
        parser.error(f"unknown run(s): {', '.join(unknown)}; see --list")
    if ns.check:
        return check(ns.names or list(RUNS), keep=ns.keep, committed=ns.committed)
    out = ns.out.resolve()
    out.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    for name in ns.names or list(RUNS):
        if ns.relabel:
            relabel_run(RUNS[name], out)
        else:
            make_run(RUNS[name], out)
    (out / "labels.json").unlink(missing_ok=True)  # replaced by the per-run label files
    _write_readme(out, read_labels(out))
    print(f"done in {time.perf_counter() - t0:.1f}s -> {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
