"""autopsy.capture.HFCallback in a real transformers.Trainer run (a tiny BERT built from its
config; no download): a dataset with one poisoned sample."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

import autopsy
from autopsy.api import diagnose
from autopsy.capture import HFCallback, NonFiniteStep


class Embedded(torch.utils.data.Dataset):
    """Sequence-classification samples given as embeddings; sample ``poison`` holds a NaN."""

    def __init__(self, n: int, poison: int) -> None:
        g = torch.Generator().manual_seed(0)
        self.x = torch.randn(n, 6, 16, generator=g)
        self.x[poison, 3, 5] = float("nan")
        self.y = torch.randint(0, 2, (n,), generator=g)

    def __len__(self) -> int:
        return len(self.y)

    def __getitem__(self, i: int) -> dict[str, torch.Tensor]:
        return {"inputs_embeds": self.x[i], "labels": self.y[i]}


def test_a_poisoned_sample_in_an_hf_trainer_run(tmp_path: Path) -> None:
    from transformers import BertConfig, BertForSequenceClassification, Trainer, TrainingArguments

    torch.manual_seed(0)
    model = BertForSequenceClassification(BertConfig(
        vocab_size=32, hidden_size=16, num_hidden_layers=2, num_attention_heads=2,
        intermediate_size=32, max_position_embeddings=16, num_labels=2))
    args = TrainingArguments(output_dir=str(tmp_path), per_device_train_batch_size=4,
                             max_steps=12, logging_steps=1, save_strategy="no",
                             report_to=[], use_cpu=True, seed=0)
    trainer = HFCallback().attach(Trainer(model=model, args=args,
                                          train_dataset=Embedded(48, poison=29)))
    with pytest.raises(NonFiniteStep) as info:
        trainer.train()
    bundle = info.value.bundle
    meta = json.loads((bundle / "meta.json").read_text())
    assert meta["data"]["bad"] and "inputs_embeds" in meta["data"]["nonfinite_inputs"]
    batch = torch.load(bundle / "batch.pt")  # the recorder's own file: the poisoned batch
    assert torch.isnan(batch["inputs_embeds"]).sum() == 1
    v = diagnose(autopsy.load_run(tmp_path)).verdict
    assert (v.code, v.cause, v.step) == ("NAN008", "bad_data", info.value.step)
    assert "input inputs_embeds holds 1 non-finite value(s)" in v.message
