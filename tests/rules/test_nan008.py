"""NAN008 captured-first-bad-module: an autopsy.capture bundle names the step, the samples
and the first module that went non-finite (bundles written by the real Recorder)."""

from __future__ import annotations

from pathlib import Path

import torch
from torch import nn

import autopsy
from autopsy.api import diagnose
from autopsy.capture import Recorder


def _bundle(out: Path, x: torch.Tensor, *, guard_error: bool = False) -> None:
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 3))
    rec = Recorder(out, model, None, num_classes=3, on_nan="continue")
    y = torch.zeros(len(x), dtype=torch.long)
    if guard_error:
        y[1] = 9
    try:
        with rec.guard((x, y), batch_ids=list(range(len(x)))):
            loss = nn.functional.cross_entropy(model(x), y)
            loss.backward()
            rec.step(loss, batch=(x, y), batch_ids=list(range(len(x))))
    except IndexError:
        pass


def test_fires_with_the_step_samples_and_module(tmp_path: Path) -> None:
    x = torch.rand(4, 4)
    x[2, 1] = float("inf")
    _bundle(tmp_path, x)
    (f,) = [f for f in diagnose(autopsy.load_run(tmp_path)).findings if f.code == "NAN008"]
    assert f.step == 0 and f.cause == "bad_data"
    assert "module 0 (Linear)" in f.message and "sample(s) [2]" in f.message


def test_near_misses_pass(tmp_path: Path) -> None:
    # a bundle of a step that raised (the label check): a crash, CRASH001's
    _bundle(tmp_path / "error", torch.rand(4, 4), guard_error=True)
    codes = {f.code for f in diagnose(autopsy.load_run(tmp_path / "error")).findings}
    assert "NAN008" not in codes and "CRASH001" in codes
    # a finite step writes no bundle at all
    _bundle(tmp_path / "fine", torch.rand(4, 4))
    assert not (tmp_path / "fine" / "autopsy-capture").exists()
