"""Lightning ``CSVLogger`` files, written by Lightning itself, read by ``lightning_csv``."""

from __future__ import annotations

import csv
import math
from pathlib import Path

import lightning
import pytest

import autopsy


def _fit(root: Path, lr: float, nan_at: int | None = None, runs: int = 1) -> None:
    """Train a tiny linear model with Lightning and its CSVLogger, ``runs`` times."""
    import torch
    from lightning.pytorch.loggers import CSVLogger

    class Tiny(lightning.LightningModule):
        def __init__(self, lr: float = 0.1) -> None:
            super().__init__()
            self.save_hyperparameters()
            self.lin = torch.nn.Linear(4, 1)

        def training_step(self, batch, idx):  # type: ignore[no-untyped-def]
            x, y = batch
            loss = torch.nn.functional.mse_loss(self.lin(x), y)
            if nan_at is not None and self.global_step >= nan_at:
                loss = loss * float("nan")
            self.log("train_loss", loss, on_step=True, on_epoch=True)
            return loss

        def validation_step(self, batch, idx):  # type: ignore[no-untyped-def]
            x, y = batch
            self.log("val_loss", torch.nn.functional.mse_loss(self.lin(x), y))

        def configure_optimizers(self):  # type: ignore[no-untyped-def]
            return torch.optim.SGD(self.parameters(), lr=self.hparams.lr)

    gen = torch.Generator().manual_seed(0)
    x = torch.randn(64, 4, generator=gen)
    data = torch.utils.data.TensorDataset(x, x.sum(1, keepdim=True))
    loader = torch.utils.data.DataLoader(data, batch_size=8)
    for _ in range(runs):
        trainer = lightning.Trainer(
            max_epochs=2, logger=CSVLogger(str(root)), log_every_n_steps=1,
            enable_progress_bar=False, enable_checkpointing=False, enable_model_summary=False,
            num_sanity_val_steps=0)
        trainer.fit(Tiny(lr), loader, loader)


def _column(path: Path, name: str) -> list[tuple[int, float]]:
    """(step, value) of the non-empty cells of one column, read with the csv module."""
    with open(path, newline="") as fh:
        return [(int(r["step"]), float(r[name])) for r in csv.DictReader(fh) if r[name]]


def test_metrics_csv_steps_values_and_hparams(tmp_path: Path) -> None:
    _fit(tmp_path, lr=0.05)
    csv_path = tmp_path / "lightning_logs" / "version_0" / "metrics.csv"
    run = autopsy.load_run(tmp_path)
    loss = run.scalars[run.scalars["tag"] == "loss"]
    assert list(zip(loss["step"], loss["value"], strict=True)) == pytest.approx(
        _column(csv_path, "train_loss_step"))
    assert set(loss["raw_tag"]) == {"train_loss_step"}
    val = run.scalars[run.scalars["tag"] == "eval_loss"]
    assert list(zip(val["step"], val["value"], strict=True)) == pytest.approx(
        _column(csv_path, "val_loss"))
    assert len(val) == 2  # one validation per epoch
    assert run.config["learning_rate"] == pytest.approx(0.05)
    assert run.config.get_entry("learning_rate").source.endswith("version_0/hparams.yaml")
    assert {s.reader for s in run.sources} == {"lightning_csv"}


def test_versions_are_segments(tmp_path: Path) -> None:
    _fit(tmp_path, lr=0.05, runs=2)
    run = autopsy.load_run(tmp_path)
    loss = run.scalars[run.scalars["tag"] == "loss"]
    by_source = loss.groupby(loss["source"].astype(str))["segment"].unique()
    assert {k.split("/")[-2]: list(v) for k, v in by_source.items()} == {
        "version_0": [0], "version_1": [1]}


def test_first_nan_step_is_found(tmp_path: Path) -> None:
    _fit(tmp_path, lr=0.05, nan_at=5)
    run = autopsy.load_run(tmp_path)
    loss = run.series("loss")
    bad = [int(s) for s, v in loss.items() if not math.isfinite(v)]
    assert bad and bad[0] == 5
    verdict = autopsy.diagnose(run).verdict
    assert verdict.family.value == "nan_inf"
    assert verdict.step == 5
