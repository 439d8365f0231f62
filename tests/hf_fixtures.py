"""A tiny real Hugging Face Trainer run, made once per test session.

``trainer_run(tmp_path_factory)`` trains a 1-layer BERT classifier (vocab 100,
hidden 32) for 6 steps on synthetic data with the real ``Trainer``: logging every
step, evaluating and saving every 3 steps, then ``save_state()`` and
``save_model()``. The run directory holds the root ``trainer_state.json``,
``training_args.bin`` and ``config.json``, and ``checkpoint-3/`` and
``checkpoint-6/`` with their own copies plus optimizer, scheduler and RNG state.
It takes a few seconds on a CPU; the result is cached for the session.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

#: The arguments the run was trained with (tests compare against them).
RUN_ARGS: dict[str, object] = {
    "max_steps": 6,
    "per_device_train_batch_size": 4,
    "gradient_accumulation_steps": 1,
    "logging_steps": 1,
    "save_steps": 3,
    "eval_steps": 3,
    "learning_rate": 1e-3,
    "warmup_steps": 2,
    "max_grad_norm": 0.5,
    "weight_decay": 0.01,
    "lr_scheduler_type": "linear",
    "seed": 7,
}
NUM_LABELS = 3

_CACHE: dict[str, Path] = {}


def make_trainer_run(out: Path) -> Path:
    """Train the tiny model into ``out`` with the real Trainer; return ``out``."""
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")

    class Synthetic(torch.utils.data.Dataset):
        def __init__(self, n: int, seed: int) -> None:
            gen = torch.Generator().manual_seed(seed)
            self.ids = torch.randint(0, 100, (n, 8), generator=gen)
            self.labels = torch.randint(0, NUM_LABELS, (n,), generator=gen)

        def __len__(self) -> int:
            return len(self.ids)

        def __getitem__(self, i: int) -> dict[str, object]:
            return {"input_ids": self.ids[i], "attention_mask": torch.ones(8, dtype=torch.long),
                    "labels": self.labels[i]}

    torch.manual_seed(0)
    config = transformers.BertConfig(vocab_size=100, hidden_size=32, num_hidden_layers=1,
                                     num_attention_heads=2, intermediate_size=37,
                                     num_labels=NUM_LABELS)
    model = transformers.BertForSequenceClassification(config)
    args = transformers.TrainingArguments(
        output_dir=str(out), eval_strategy="steps", report_to=[], use_cpu=True,
        disable_tqdm=True, **RUN_ARGS,
    )
    trainer = transformers.Trainer(model=model, args=args, train_dataset=Synthetic(40, 1),
                                   eval_dataset=Synthetic(8, 2))
    trainer.train()
    trainer.save_state()
    trainer.save_model()
    return out


def trainer_run(factory: pytest.TempPathFactory) -> Path:
    """The session's tiny Trainer run directory (made on first use). Do not modify it."""
    if "run" not in _CACHE:
        _CACHE["run"] = make_trainer_run(factory.mktemp("hf_run") / "out")
    return _CACHE["run"]
