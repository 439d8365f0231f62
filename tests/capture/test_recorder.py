"""autopsy.capture.Recorder in plain training loops (real torch loops on tiny models): the
bundle names the step, the samples and the module, and ``autopsy analyze`` reads it."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from torch import nn

import autopsy
from autopsy.api import diagnose
from autopsy.capture import NonFiniteStep, Recorder
from autopsy.model import Family


class LogLayer(nn.Module):
    """A custom layer that leaves its domain on negative input (log of a negative: NaN)."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.log(x)


def _model() -> nn.Sequential:
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 8), LogLayer(),
                          nn.Linear(8, 3))
    with torch.no_grad():  # positive for inputs in [0, 1); negative for a huge one
        model[0].weight.abs_()
        model[0].bias.zero_()
        model[2].weight.copy_(-model[2].weight.abs() * 0.1)
        model[2].bias.fill_(5.0)
    return model


def _data(poison: int | None = 37, nan_at: int | None = None) -> tuple[torch.Tensor, ...]:
    g = torch.Generator().manual_seed(1)
    x, y = torch.rand(64, 4, generator=g), torch.randint(0, 3, (64,), generator=g)
    if poison is not None:
        x[poison] = 1000.0
    if nan_at is not None:
        x[nan_at, 2] = float("nan")
    return x, y


def _train(out: Path, x: torch.Tensor, y: torch.Tensor, **kwargs: object) -> Recorder:
    model = _model()
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    rec = Recorder(out, model, opt, num_classes=3, **kwargs)
    for step in range(8):
        idx = torch.arange(step * 8, step * 8 + 8)
        loss = nn.functional.cross_entropy(model(x[idx]), y[idx])
        loss.backward()
        rec.step(loss, batch=(x[idx], y[idx]), batch_ids=idx)
        opt.step()
        opt.zero_grad()
    rec.close()
    return rec


def test_a_poisoned_sample_names_its_step_sample_and_module(tmp_path: Path) -> None:
    with pytest.raises(NonFiniteStep) as info:
        _train(tmp_path, *_data(poison=37))
    assert info.value.step == 4 and info.value.bundle.name == "step_4"
    meta = json.loads((tmp_path / "autopsy-capture" / "step_4" / "meta.json").read_text())
    assert meta["batch_ids"] == list(range(32, 40))
    assert meta["probe"]["module"] == "3" and meta["probe"]["type"] == "LogLayer"
    assert meta["probe"]["output"]["nonfinite_rows"] == [5]  # row 5 of the batch: id 37
    assert meta["data"]["bad"] is False and meta["batch_saved"]
    d = diagnose(autopsy.load_run(tmp_path))
    assert (d.verdict.code, d.verdict.step, d.verdict.cause) == ("NAN008", 4,
                                                                 "numerical_instability")
    assert "module 3 (LogLayer)" in d.verdict.message and "sample(s) [37]" in d.verdict.message


def test_a_nan_in_the_inputs_is_bad_data(tmp_path: Path) -> None:
    with pytest.raises(NonFiniteStep):
        _train(tmp_path, *_data(poison=None, nan_at=21))
    d = diagnose(autopsy.load_run(tmp_path))
    assert d.verdict.code == "NAN008" and d.verdict.step == 2 and d.verdict.cause == "bad_data"
    assert "sample(s) [21]" in d.verdict.message


def test_on_the_cpu_every_step_is_checked_whatever_check_every(tmp_path: Path) -> None:
    # the values are on the host already: no synchronisation to save, so no deferral
    rec = _train(tmp_path, *_data(poison=37), check_every=3, on_nan="continue")
    assert [b.name for b in rec.bundles] == ["step_4"]
    meta = json.loads((rec.bundles[0] / "meta.json").read_text())
    assert meta["probe"]["module"] == "3"


def test_a_probe_after_the_bad_update_says_so_instead_of_guessing() -> None:
    # a deferred check (an accelerator, check_every > 1) finds the weights already spoiled
    from autopsy.capture.recorder import probe

    model = _model()
    with torch.no_grad():
        model[0].weight[0, 0] = float("nan")
    got = probe(model, (torch.rand(8, 4), torch.zeros(8, dtype=torch.long)))
    assert got["module"] is None and got["weights_nonfinite"] == ["0.weight"]
    assert "check every step" in got["error"]


def test_continue_restores_the_gradients_and_rng(tmp_path: Path) -> None:
    model = _model()
    x, y = _data(poison=37)
    idx = torch.arange(32, 40)
    loss = nn.functional.cross_entropy(model(x[idx]), y[idx])
    loss.backward()
    before = [p.grad.clone() for p in model.parameters()]
    rng = torch.get_rng_state()
    rec = Recorder(tmp_path, model, None, on_nan="continue")
    assert rec.step(loss, batch=(x[idx], y[idx]), batch_ids=idx) is not None
    for p, g in zip(model.parameters(), before, strict=True):
        assert torch.equal(p.grad.nan_to_num(), g.nan_to_num())
    assert torch.equal(torch.get_rng_state(), rng)


def test_guard_names_the_samples_whose_label_is_out_of_range(tmp_path: Path) -> None:
    model = nn.Sequential(nn.Linear(4, 5))
    rec = Recorder(tmp_path, model, None, num_classes=5)
    x, y = torch.rand(32, 4), torch.randint(0, 5, (32,))
    y[13] = 7
    with pytest.raises(IndexError):
        for step in range(4):
            idx = torch.arange(step * 8, step * 8 + 8)
            with rec.guard((x[idx], y[idx]), batch_ids=idx):
                loss = nn.functional.cross_entropy(model(x[idx]), y[idx])
                loss.backward()
                rec.step(loss, batch=(x[idx], y[idx]), batch_ids=idx)
    v = diagnose(autopsy.load_run(tmp_path)).verdict
    assert (v.family, v.cause, v.step) == (Family.CRASH, "label_out_of_range", 1)
    assert "sample(s) [13]" in v.message


def test_importing_autopsy_or_capture_does_not_import_torch() -> None:
    code = ("import sys, autopsy, autopsy.capture\n"
            "print('torch' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout.strip()
    assert out == "False"


def test_hang_evidence_goes_into_the_capture_folder(tmp_path: Path) -> None:
    # a step that hangs past hang_timeout_s: faulthandler writes every thread's stack there,
    # and the text-log reader reads it back as stack dumps; the Flight Recorder environment
    # points torch's dumps at the same folder
    code = (
        "import os, sys, time, torch\n"
        "from autopsy.capture import Recorder, enable_flight_recorder\n"
        "out = sys.argv[1]\n"
        "folder = enable_flight_recorder(out)\n"
        "print(os.environ['TORCH_FR_DUMP_TEMP_FILE'], os.environ['TORCH_FR_BUFFER_SIZE'])\n"
        "model = torch.nn.Linear(2, 2)\n"
        "rec = Recorder(out, model, None, hang_timeout_s=0.5)\n"
        "def load_batch():\n"
        "    time.sleep(1.3)\n"
        "load_batch()\n"
        "rec.close()\n")
    done = subprocess.run([sys.executable, "-c", code, str(tmp_path)], capture_output=True,
                          text=True, timeout=60, check=True)
    prefix, size = done.stdout.split()
    assert prefix == str(tmp_path / "autopsy-capture" / "nccl_trace_rank_") and size == "2000"
    stacks = (tmp_path / "autopsy-capture" / "stacks_rank0.log").read_text()
    assert "load_batch" in stacks
    run = autopsy.load_run(tmp_path)
    dumps = run.events[run.events["kind"] == "stack_dump"]
    assert len(dumps) and any(f["function"] == "load_batch"
                              for d in dumps["details"] for f in d["frames"])


def test_the_data_position_of_a_stateful_loader_is_saved(tmp_path: Path) -> None:
    from torchdata.stateful_dataloader import StatefulDataLoader

    x, y = _data(poison=37)
    loader = StatefulDataLoader(torch.utils.data.TensorDataset(x, y, torch.arange(64)),
                                batch_size=8)
    model = _model()
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    rec = Recorder(tmp_path, model, opt, num_classes=3, loader=loader)
    with pytest.raises(NonFiniteStep) as info:
        for xb, yb, ids in loader:
            loss = nn.functional.cross_entropy(model(xb), yb)
            loss.backward()
            rec.step(loss, batch=(xb, yb), batch_ids=ids)
            opt.step()
            opt.zero_grad()
    meta = json.loads((info.value.bundle / "meta.json").read_text())
    assert meta["data_position"] == {"saved": "data_position.pt", "from": "StatefulDataLoader"}
    state = torch.load(info.value.bundle / "data_position.pt", weights_only=False)
    assert state["_num_yielded"] == 5  # the bad batch was the fifth the loader gave


def test_group_grad_norms_and_the_context_manager(tmp_path: Path) -> None:
    model = _model()
    opt = torch.optim.SGD([{"params": model[0].parameters()},
                           {"params": [p for m in list(model)[1:] for p in m.parameters()]}],
                          lr=0.01)
    x, y = _data(poison=None)
    with Recorder(tmp_path, model, opt, check_every=1) as rec:
        loss = nn.functional.cross_entropy(model(x[:8]), y[:8])
        loss.backward()
        rec.step(loss, batch=(x[:8], y[:8]))
    (entry,) = rec.ring
    first = torch.linalg.vector_norm(torch.stack([p.grad.norm() for p in model[0].parameters()]))
    assert entry.group_grad_norms[0] == pytest.approx(float(first), rel=1e-5)
    assert entry.grad_norm == pytest.approx(
        (entry.group_grad_norms[0] ** 2 + entry.group_grad_norms[1] ** 2) ** 0.5, rel=1e-5)
