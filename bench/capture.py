"""Benchmark: the cost of ``autopsy.capture.Recorder`` in a training loop.

A small model (an MLP of ``--width`` hidden units, 3 layers, batch ``--batch``; or a 2-layer
transformer encoder with ``--model transformer``) is trained for ``--steps`` steps on
synthetic data, without the recorder and with it (default settings, and
``check_every=10``), alternating runs so that drift hits both; the median steps/s of
``--repeats`` runs each is reported with the overhead. On the GPU when one is there (and
``--device`` says so). Figures under ``## Capture overhead`` of ``docs/performance.md``.

Usage: ``python bench/capture.py [--steps 300] [--repeats 5] [--device cpu] [--no-write]``
"""

from __future__ import annotations

import argparse
import platform
import statistics
import tempfile
import time

import torch
from docfile import DOC, update_section
from torch import nn

from autopsy.capture import Recorder

HEADING = "## Capture overhead"


def _model(kind: str, width: int) -> nn.Module:
    if kind == "transformer":
        layer = nn.TransformerEncoderLayer(d_model=width, nhead=4, dim_feedforward=4 * width,
                                           batch_first=True)
        return nn.Sequential(nn.TransformerEncoder(layer, num_layers=2), nn.Flatten(),
                             nn.LazyLinear(10))
    return nn.Sequential(nn.Linear(width, width), nn.ReLU(), nn.Linear(width, width), nn.ReLU(),
                         nn.Linear(width, 10))


def run(kind: str, width: int, batch: int, steps: int, device: str,
        recorder: dict[str, int] | None) -> float:
    """Steps per second of one training run (after 10 warm-up steps)."""
    torch.manual_seed(0)
    model = _model(kind, width).to(device)
    shape = (batch, 16, width) if kind == "transformer" else (batch, width)
    x, y = torch.randn(*shape, device=device), torch.randint(0, 10, (batch,), device=device)
    model(x)  # materialise lazy layers
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    with tempfile.TemporaryDirectory() as out:
        rec = Recorder(out, model, opt, **recorder) if recorder is not None else None
        t0 = 0.0
        for step in range(steps + 10):
            if step == 10:
                if device == "cuda":
                    torch.cuda.synchronize()
                t0 = time.perf_counter()
            loss = nn.functional.cross_entropy(model(x), y)
            loss.backward()
            if rec is not None:
                rec.step(loss, batch=(x, y), batch_ids=range(step * batch, (step + 1) * batch))
            opt.step()
            opt.zero_grad(set_to_none=True)
        if device == "cuda":
            torch.cuda.synchronize()
        seconds = time.perf_counter() - t0
        if rec is not None:
            rec.close()
    return steps / seconds


def own_time(kind: str, width: int, batch: int, device: str, calls: int = 500) -> float:
    """Milliseconds of one ``rec.step`` call at the default settings, timed alone (the
    end-to-end difference is within the run-to-run noise of a shared machine)."""
    torch.manual_seed(0)
    model = _model(kind, width).to(device)
    shape = (batch, 16, width) if kind == "transformer" else (batch, width)
    x, y = torch.randn(*shape, device=device), torch.randint(0, 10, (batch,), device=device)
    loss = nn.functional.cross_entropy(model(x), y)
    loss.backward()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    with tempfile.TemporaryDirectory() as out:
        rec = Recorder(out, model, opt)
        t0 = time.perf_counter()
        for i in range(calls):
            rec.step(loss, batch=(x, y), batch_ids=range(i * batch, (i + 1) * batch))
        if device == "cuda":
            torch.cuda.synchronize()
        seconds = time.perf_counter() - t0
        rec.close()
    return seconds / calls * 1000


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", choices=["mlp", "transformer"], default="mlp")
    parser.add_argument("--width", type=int, default=1024)
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--no-write", action="store_true")
    ns = parser.parse_args(argv)
    torch.set_num_threads(max(1, torch.get_num_threads()))
    configs = {"without the recorder": None, "Recorder (defaults)": {},
               "Recorder(check_every=1)": {"check_every": 1}}
    rates: dict[str, list[float]] = {k: [] for k in configs}
    for _ in range(ns.repeats):
        for name, rec in configs.items():
            rates[name].append(run(ns.model, ns.width, ns.batch, ns.steps, ns.device, rec))
    base = statistics.median(rates["without the recorder"])
    own = own_time(ns.model, ns.width, ns.batch, ns.device)
    dev = torch.cuda.get_device_name() if ns.device == "cuda" else platform.processor() or "CPU"
    lines = [
        f"`python bench/capture.py --model {ns.model} --width {ns.width} --batch {ns.batch} "
        f"--steps {ns.steps} --repeats {ns.repeats} --device {ns.device}` ({dev}, "
        f"{torch.get_num_threads()} threads, torch {torch.__version__}): median steps/s of "
        f"{ns.repeats} alternating runs, AdamW.",
        "",
        "| loop | steps/s | overhead |",
        "|---|---|---|",
        *[f"| {name} | {statistics.median(r):.1f} | "
          f"{(base / statistics.median(r) - 1) * 100:+.1f}% |" for name, r in rates.items()],
        "",
        f"The recorder's own time, `rec.step` timed alone at the defaults: {own:.3f} ms a "
        f"step, {own / (1000 / base) * 100:.1f}% of a step of this loop ({1000 / base:.1f} ms). "
        "The end-to-end rows differ by about as much as runs of the same loop do on a shared "
        "machine (a few percent).",
    ]
    body = "\n".join(lines)
    print(body)
    if not ns.no_write:
        update_section(DOC, HEADING, body)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
