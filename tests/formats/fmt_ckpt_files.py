"""Helpers of the checkpoint format tests: files written by torch, and reading them back."""

from __future__ import annotations

import zipfile
from pathlib import Path
from typing import Any

import pytest

torch = pytest.importorskip("torch")


def tiny_model() -> Any:
    """A small module with a LayerNorm, an Embedding and two Linears."""
    torch.manual_seed(0)
    return torch.nn.Sequential(
        torch.nn.Embedding(11, 8), torch.nn.Linear(8, 6), torch.nn.LayerNorm(6),
        torch.nn.Linear(6, 3),
    )


def trained_checkpoint() -> dict[str, Any]:
    """``{model, optimizer, scheduler, scaler, step}`` after one AdamW step, as a trainer saves."""
    model = tiny_model()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: 1.0)
    model(torch.tensor([[1, 2, 3]])).sum().backward()
    opt.step()
    sched.step()
    scaler = {"scale": 65536.0, "growth_factor": 2.0, "backoff_factor": 0.5,
              "growth_interval": 2000, "_growth_tracker": 0}
    return {"model": model.state_dict(), "optimizer": opt.state_dict(),
            "scheduler": sched.state_dict(), "scaler": scaler, "step": 7}


def mixed_tensors() -> dict[str, Any]:
    """Tensors of many dtypes, views sharing one storage, a parameter and a transposed view."""
    torch.manual_seed(1)
    base = torch.randn(40)
    return {
        "bf16": torch.randn(5, 3).to(torch.bfloat16),
        "fp16": torch.randn(7).to(torch.float16),
        "fp64": torch.randn(2, 2, dtype=torch.float64),
        "i64": torch.arange(9).reshape(3, 3),
        "i32": torch.arange(4, dtype=torch.int32),
        "i8": torch.arange(-3, 3, dtype=torch.int8),
        "u8": torch.arange(6, dtype=torch.uint8),
        "flag": torch.tensor([True, False, True]),
        "scalar": torch.tensor(3.5),
        "empty": torch.zeros(0, 4),
        "param": torch.nn.Parameter(torch.randn(3, 2)),
        "view_a": base[2:12],
        "view_b": base[20:40].reshape(4, 5),
        "transposed": torch.randn(3, 4).t(),
    }


def get_path(obj: Any, path: str) -> Any:
    """The value at a dotted key path (dict keys, which may hold dots, and list indexes)."""
    parts = path.split(".")
    while parts:
        if isinstance(obj, (list, tuple)):
            obj = obj[int(parts.pop(0))]
            continue
        for n in range(len(parts), 0, -1):
            key = ".".join(parts[:n])
            if key in obj or (key.isdigit() and int(key) in obj):
                obj = obj[key] if key in obj else obj[int(key)]
                parts = parts[n:]
                break
        else:
            raise KeyError(path)
    return obj


def tensor_bytes(tensor: Any) -> bytes:
    """A tensor's elements as raw row-major bytes."""
    flat = tensor.detach().reshape(-1).contiguous()
    if flat.numel() == 0:
        return b""
    return flat.view(torch.uint8).numpy().tobytes()


def read_at(path: Path | str, offset: int, n: int) -> bytes:
    """``n`` bytes of a file at ``offset``."""
    with open(path, "rb") as fh:
        fh.seek(offset)
        return fh.read(n)


def rewrite_zip(src: Path, dst: Path, *, drop: str | None = None,
                replace: dict[str, bytes] | None = None,
                compression: int = zipfile.ZIP_STORED) -> None:
    """Copy a zip member by member, leaving one out or replacing some, with ``compression``."""
    replace = replace or {}
    with zipfile.ZipFile(src) as zin, zipfile.ZipFile(dst, "w", compression) as zout:
        for info in zin.infolist():
            if drop is not None and info.filename.endswith(drop):
                continue
            data = replace.get(info.filename.split("/", 1)[-1], zin.read(info.filename))
            zout.writestr(info.filename, data)
