"""Builders of the pathological inputs of issue 19, shared by the bound tests and the
campaign (``bench/robustness/``): each makes one class of input at the size asked for,
with the real writer where one exists."""

from __future__ import annotations

import json
import os
import struct
import sys
import types
from pathlib import Path
from typing import Any

MB = 1 << 20


def nested_list(levels: int, fan_out: int = 70) -> list[Any]:
    """``levels`` lists, each holding the previous one ``fan_out`` times (one object):
    a few hundred bytes pickled, ``fan_out ** (levels + 1)`` elements as a tree."""
    value: list[Any] = list(range(fan_out))
    for _ in range(levels):
        value = [value] * fan_out
    return value


def _history(run: Path, steps: int = 10) -> None:
    history = [{"step": s, "loss": 2.0 - 0.1 * s} for s in range(1, steps + 1)]
    (run / "trainer_state.json").write_text(json.dumps({"global_step": steps,
                                                        "log_history": history}))


def training_args_bomb(run: Path, levels: int = 4) -> Path:
    """A run whose ``training_args.bin`` (torch.save of a TrainingArguments-like object)
    keeps one shared nested list under ``deepspeed``, ``lr_scheduler_kwargs`` and ``fsdp``."""
    import torch

    package = sys.modules.setdefault("transformers_bomb", types.ModuleType("transformers_bomb"))
    module = types.ModuleType("transformers_bomb.training_args")
    sys.modules["transformers_bomb.training_args"] = module
    package.training_args = module  # type: ignore[attr-defined]

    class TrainingArguments:
        pass

    TrainingArguments.__module__ = "transformers_bomb.training_args"
    TrainingArguments.__qualname__ = "TrainingArguments"
    module.TrainingArguments = TrainingArguments  # type: ignore[attr-defined]
    shared = nested_list(levels)
    args = TrainingArguments()
    args.__dict__.update(learning_rate=1e-3, output_dir="out", deepspeed=shared,
                         lr_scheduler_kwargs={"a": shared, "b": [shared, shared]},
                         fsdp=shared, max_steps=10)
    run.mkdir(parents=True)
    torch.save(args, run / "training_args.bin")
    _history(run)
    return run / "training_args.bin"


def sparse_logs(folder: Path, ranks: int = 3, size: int = 2 << 30) -> Path:
    """``ranks`` rank logs of 49 step lines, each then a hole up to ``size`` bytes: NUL
    bytes with no newline when read, no blocks on disk."""
    folder.mkdir(parents=True)
    for rank in range(ranks):
        path = folder / f"rank{rank}.log"
        with open(path, "w", encoding="utf-8") as fh:
            for step in range(1, 50):
                fh.write(f"[rank{rank}]: step {step} loss {2.0 - step * 0.01:.4f}\n")
        os.truncate(path, size)
    return folder


def tb_giant_tag(logdir: Path, tag_mb: int = 0) -> Path:
    """40 loss steps by a real SummaryWriter, with one scalar whose tag is ``tag_mb`` MiB."""
    from torch.utils.tensorboard import SummaryWriter

    writer = SummaryWriter(str(logdir))
    for step in range(1, 21):
        writer.add_scalar("train/loss", 2.0 - 0.05 * step, step)
    if tag_mb:
        writer.add_scalar("x" * (tag_mb * MB), 1.0, 20)
    for step in range(21, 41):
        writer.add_scalar("train/loss", 2.0 - 0.05 * step, step)
    writer.close()
    return logdir


def many_event_files(logdir: Path, count: int, restart: bool = False) -> Path:
    """``count`` event files of five loss steps, by one SummaryWriter each; the steps go
    on from file to file, or start again at 1 in each (``restart``)."""
    from torch.utils.tensorboard import SummaryWriter

    for i in range(count):
        writer = SummaryWriter(str(logdir), filename_suffix=f".{i}")
        for s in range(5):
            step = s + 1 if restart else i * 5 + s + 1
            writer.add_scalar("train/loss", 3.0 / (1 + 0.001 * step), step)
        writer.close()
    return logdir


def many_ranks_log(path: Path, ranks: int = 100_000, culprit: int | None = 4242) -> Path:
    """One interleaved log: ``[rankN]: step 1 ...`` for every rank, then a CUDA error
    traceback on ``culprit`` (none when None)."""
    lines = [f"[rank{r}]: step 1 loss 2.3456\n" for r in range(ranks)]
    if culprit is not None:
        lines += [f"[rank{culprit}]: {text}\n" for text in (
            "Traceback (most recent call last):",
            '  File "/w/train.py", line 10, in <module>',
            "    main()",
            '  File "/w/train.py", line 8, in main',
            "    loss.backward()",
            "RuntimeError: CUDA error: an illegal memory access was encountered")]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(lines), encoding="utf-8")
    return path


def overlapping_safetensors(path: Path, entries: int = 50_000) -> Path:
    """A safetensors file whose ``entries`` tensors all point at the same 4 bytes."""
    header = json.dumps({f"t{i}": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]}
                         for i in range(entries)}).encode()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(struct.pack("<Q", len(header)) + header + b"\0" * 4)
    return path


def overflowing_numbers(folder: Path) -> Path:
    """A good 4-rank interleaved log with one ``[rank99999999999999999999]`` line, and a
    ``trainer_state.json`` with one step of 2**63: each one bad value in a good file."""
    folder.mkdir(parents=True)
    lines = [f"[rank{r}]: step {s} loss {2.0 - s * 0.01:.4f}\n"
             for s in range(1, 30) for r in range(4)]
    lines.insert(50, "[rank99999999999999999999]: hello\n")
    (folder / "job.log").write_text("".join(lines), encoding="utf-8")
    history = [{"step": s, "loss": 2.0 - s * 0.01} for s in range(1, 30)]
    history[5]["step"] = 1 << 63
    (folder / "hf").mkdir()
    (folder / "hf" / "trainer_state.json").write_text(json.dumps({"global_step": 29,
                                                                 "log_history": history}))
    return folder
