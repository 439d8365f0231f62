"""PyTorch's "Learn the Basics" quickstart loop, run for real on a tiny model: its printed
lines are read as the training loss at the samples seen and the test accuracy and loss."""

from __future__ import annotations

import contextlib
import io
from pathlib import Path

import pytest

import autopsy


def _quickstart(root: Path, epochs: int = 3, lr: float = 0.5) -> dict[str, list[float]]:
    """The tutorial's train/test loops, with its own print statements, on synthetic data
    (64 batches of 64 samples: a line every 100 batches would print once; this prints every
    16, as a shorter loop does)."""
    import torch
    from torch import nn
    from torch.utils.data import DataLoader, TensorDataset

    torch.manual_seed(0)
    x = torch.randn(4096, 20)
    y = (x[:, 0] > 0).long() + (x[:, 1] > 0).long()
    train_dataloader = DataLoader(TensorDataset(x, y), batch_size=64)
    test_dataloader = DataLoader(TensorDataset(x[:512], y[:512]), batch_size=64)
    model = nn.Sequential(nn.Linear(20, 32), nn.ReLU(), nn.Linear(32, 3))
    loss_fn = nn.CrossEntropyLoss()
    optimizer = torch.optim.SGD(model.parameters(), lr=lr)
    seen: dict[str, list[float]] = {"loss": [], "test_loss": [], "test_acc": []}

    def train(dataloader, model, loss_fn, optimizer):
        size = len(dataloader.dataset)
        model.train()
        for batch, (X, y) in enumerate(dataloader):
            pred = model(X)
            loss = loss_fn(pred, y)
            loss.backward()
            optimizer.step()
            optimizer.zero_grad()
            if batch % 16 == 0:
                loss, current = loss.item(), (batch + 1) * len(X)
                seen["loss"].append(float(f"{loss:>7f}"))
                print(f"loss: {loss:>7f}  [{current:>5d}/{size:>5d}]")

    def test(dataloader, model, loss_fn):
        size = len(dataloader.dataset)
        num_batches = len(dataloader)
        model.eval()
        test_loss, correct = 0, 0
        with torch.no_grad():
            for X, y in dataloader:
                pred = model(X)
                test_loss += loss_fn(pred, y).item()
                correct += (pred.argmax(1) == y).type(torch.float).sum().item()
        test_loss /= num_batches
        correct /= size
        seen["test_loss"].append(float(f"{test_loss:>8f}"))
        seen["test_acc"].append(float(f"{(100*correct):>0.1f}") / 100)
        print(f"Test Error: \n Accuracy: {(100*correct):>0.1f}%, Avg loss: {test_loss:>8f} \n")

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        for t in range(epochs):
            print(f"Epoch {t+1}\n-------------------------------")
            train(train_dataloader, model, loss_fn, optimizer)
            test(test_dataloader, model, loss_fn)
        print("Done!")
    (root / "train.log").write_text(out.getvalue(), encoding="utf-8")
    return seen


def test_quickstart_lines_are_the_loss_and_the_test_metrics(tmp_path: Path) -> None:
    seen = _quickstart(tmp_path)
    run = autopsy.load_run(tmp_path)
    loss = run.series("loss")
    # positions 64, 1088, 2112, 3136 of 4096 in each epoch, the epochs one after the other
    assert list(loss.index) == [e * 4096 + p for e in range(3) for p in (64, 1088, 2112, 3136)]
    assert list(loss.values) == pytest.approx(seen["loss"])
    evals = run.series("eval_loss")
    assert list(evals.index) == [3136, 4096 + 3136, 2 * 4096 + 3136]  # after each epoch
    assert list(evals.values) == pytest.approx(seen["test_loss"])
    assert list(run.series("eval_accuracy").values) == pytest.approx(seen["test_acc"])
    assert run.series("accuracy").empty  # the test accuracy is not a training accuracy


def test_a_quickstart_run_that_learns_is_healthy(tmp_path: Path) -> None:
    _quickstart(tmp_path, epochs=4, lr=0.5)
    verdict = autopsy.api.diagnose(autopsy.load_run(tmp_path)).verdict
    assert verdict.family.value == "healthy"
