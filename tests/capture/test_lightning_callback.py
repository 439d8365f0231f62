"""autopsy.capture.LightningCallback in a real lightning.Trainer run."""

from __future__ import annotations

from pathlib import Path

import lightning.pytorch as pl
import pytest
import torch
from torch import nn

import autopsy
from autopsy.api import diagnose
from autopsy.capture import LightningCallback, NonFiniteStep


class LogLayer(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.log(x)


class Model(pl.LightningModule):
    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.net = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 8), LogLayer(),
                                 nn.Linear(8, 3))
        with torch.no_grad():
            self.net[0].weight.abs_()
            self.net[0].bias.zero_()
            self.net[2].weight.copy_(-self.net[2].weight.abs() * 0.1)
            self.net[2].bias.fill_(5.0)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(x)

    def training_step(self, batch: tuple[torch.Tensor, ...], i: int) -> torch.Tensor:
        x, y, _ = batch
        return nn.functional.cross_entropy(self(x), y)

    def configure_optimizers(self) -> torch.optim.Optimizer:
        return torch.optim.SGD(self.parameters(), lr=0.01)


def test_the_callback_names_the_step_sample_and_module(tmp_path: Path) -> None:
    g = torch.Generator().manual_seed(1)
    x, y = torch.rand(64, 4, generator=g), torch.randint(0, 3, (64,), generator=g)
    x[45] = 1000.0  # the poisoned sample: batch 5 (ids 40-47)
    data = torch.utils.data.TensorDataset(x, y, torch.arange(64))
    trainer = pl.Trainer(max_epochs=1, default_root_dir=tmp_path, logger=False,
                         enable_checkpointing=False, enable_progress_bar=False,
                         enable_model_summary=False,
                         callbacks=[LightningCallback(batch_ids=lambda b: b[2])])
    with pytest.raises(NonFiniteStep):
        trainer.fit(Model(), torch.utils.data.DataLoader(data, batch_size=8))
    v = diagnose(autopsy.load_run(tmp_path)).verdict
    assert (v.code, v.step, v.cause) == ("NAN008", 5, "numerical_instability")
    assert "module net.3 (LogLayer)" in v.message and "sample(s) [45]" in v.message


class Amplify(nn.Module):
    """A custom layer that squares its input: in fp16, past 256 it overflows to inf."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * x


class Fp16Model(pl.LightningModule):
    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.net = nn.Sequential(nn.Linear(8, 32), nn.ReLU(), Amplify(), nn.Linear(32, 3))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(x)

    def training_step(self, batch: tuple[torch.Tensor, ...], i: int) -> torch.Tensor:
        x, y, _ = batch
        return nn.functional.cross_entropy(self(x).float(), y)

    def configure_optimizers(self) -> torch.optim.Optimizer:
        return torch.optim.SGD(self.parameters(), lr=1e-3)


def test_an_fp16_overflow_in_a_custom_layer_on_the_cpu(tmp_path: Path) -> None:
    g = torch.Generator().manual_seed(1)
    x, y = torch.randn(64, 8, generator=g), torch.randint(0, 3, (64,), generator=g)
    x[45] *= 300  # its activations square past fp16's 65,504
    data = torch.utils.data.TensorDataset(x, y, torch.arange(64))
    trainer = pl.Trainer(max_epochs=1, precision="16-true", default_root_dir=tmp_path,
                         logger=False, enable_checkpointing=False, enable_progress_bar=False,
                         enable_model_summary=False,
                         callbacks=[LightningCallback(batch_ids=lambda b: b[2])])
    with pytest.raises(NonFiniteStep):
        trainer.fit(Fp16Model(), torch.utils.data.DataLoader(data, batch_size=8))
    v = diagnose(autopsy.load_run(tmp_path)).verdict
    assert (v.code, v.step, v.cause) == ("NAN008", 5, "numerical_instability")
    assert "module net.2 (Amplify)" in v.message and "sample(s) [45]" in v.message
