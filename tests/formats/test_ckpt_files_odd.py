"""Odd inputs for the checkpoint readers: FIFOs, folders, RNG state, zip64, legacy payloads."""

from __future__ import annotations

import io
import os
import pickle
import random
import struct
import zipfile
import zlib
from pathlib import Path
from typing import Any

import pytest
from fmt_ckpt_files import mixed_tensors, read_at, tensor_bytes

from autopsy.formats import torchzip
from autopsy.formats.ckpterrors import CheckpointFormatError
from autopsy.formats.safetensors import read_safetensors_meta
from autopsy.formats.tensorinfo import TensorInfo
from autopsy.formats.torchmeta import read_torch_meta
from autopsy.formats.valuescan import scan_values

torch = pytest.importorskip("torch")
np = pytest.importorskip("numpy")


@pytest.mark.parametrize("reader", [read_torch_meta, read_safetensors_meta])
def test_fifo_and_folder_are_refused_without_blocking(tmp_path: Path, reader: Any) -> None:
    fifo = tmp_path / "pipe.pt"
    os.mkfifo(fifo)
    with pytest.raises(CheckpointFormatError, match="not a regular file"):
        reader(fifo)
    with pytest.raises(CheckpointFormatError, match="not a regular file"):
        reader(tmp_path)
    info = TensorInfo("float32", (2,), str(fifo), 0, 8)
    ((_, stats),) = scan_values([("x", info)])
    assert not stats.checked and "not a regular file" in stats.reason


def test_rng_state_file_is_benign(tmp_path: Path) -> None:
    """Like HF Trainer's rng_state.pth: Python, numpy and torch generator states."""
    state = {"python": random.getstate(), "numpy": np.random.get_state(),
             "cpu": torch.get_rng_state()}
    path = tmp_path / "rng_state.pth"
    torch.save(state, path)
    meta = read_torch_meta(path)
    assert meta.unsafe == [] and meta.problems == []
    ((key, info),) = meta.tensors
    assert key == "cpu" and info.dtype == "uint8"
    assert read_at(path, info.data_offset, info.nbytes) == tensor_bytes(state["cpu"])
    assert any(g.startswith("numpy") for g in meta.globals)
    assert meta.obj["python"][0] == 3


def test_zip64_members_salvaged_when_the_directory_is_lost(tmp_path: Path) -> None:
    src = tmp_path / "m.pt"
    tensors = mixed_tensors()
    torch.save(tensors, src)
    z64 = tmp_path / "z64.pt"
    with zipfile.ZipFile(src) as zin, zipfile.ZipFile(z64, "w") as zout:
        for info in zin.infolist():
            with zout.open(info.filename, "w", force_zip64=True) as dst:
                dst.write(zin.read(info.filename))
    data = z64.read_bytes()
    cut = tmp_path / "cut.pt"
    cut.write_bytes(data[: data.rfind(b"PK\x01\x02") - 1])
    meta = read_torch_meta(cut)
    assert any("central directory unreadable" in p for p in meta.problems)
    assert len(meta.problems) == 1, meta.problems
    for key, info in meta.tensors:
        if info.is_contiguous:
            assert read_at(cut, info.data_offset, info.nbytes) == tensor_bytes(tensors[key])


class _Payload:
    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self) -> tuple[Any, ...]:
        return (os.system, (f"touch {self.marker}",))


def test_hostile_pickle_in_a_legacy_torch_file(tmp_path: Path) -> None:
    marker = tmp_path / "pwned"
    path = tmp_path / "evil_legacy.pt"
    torch.save({"w": torch.ones(2), "x": _Payload(marker)}, path,
               _use_new_zipfile_serialization=False, pickle_module=pickle)
    assert not marker.exists()
    meta = read_torch_meta(path)
    assert not marker.exists()
    assert meta.container == "torch_legacy"
    assert [n for n, _ in meta.unsafe] and meta.unsafe[0][0].endswith(".system")
    assert dict(meta.tensors)["w"].data_offset is not None


def _mutants(data: bytes, seed: int, count: int, span: int) -> list[bytes]:
    """Copies of ``data`` with 1-4 random bytes of its first ``span`` bytes changed."""
    rng = random.Random(seed)
    out = []
    for _ in range(count):
        raw = bytearray(data)
        for _ in range(rng.randint(1, 4)):
            raw[rng.randrange(min(span, len(raw)))] = rng.randrange(256)
        out.append(bytes(raw))
    return out


@pytest.mark.parametrize("kind", ["zip", "legacy", "safetensors"])
def test_damaged_headers_never_escape_as_other_errors(tmp_path: Path, kind: str) -> None:
    st = pytest.importorskip("safetensors.torch")
    small = {"a": torch.randn(3, 4), "b": torch.ones(5, dtype=torch.bfloat16)}
    src = tmp_path / "src"
    if kind == "safetensors":
        st.save_file(small, str(src))
        reader: Any = read_safetensors_meta
    else:
        torch.save(small, src, _use_new_zipfile_serialization=kind == "zip")
        reader = read_torch_meta
    data = src.read_bytes()
    span = len(data) if kind != "safetensors" else 200
    target = tmp_path / "mutant"
    outcomes = {"read": 0, "refused": 0}
    for raw in _mutants(data, seed=len(kind), count=150, span=span):
        target.write_bytes(raw)
        try:
            meta = reader(target)
        except CheckpointFormatError as exc:
            assert "\n" not in str(exc)
            outcomes["refused"] += 1
            continue
        outcomes["read"] += 1
        tensors = meta.tensors.items() if kind == "safetensors" else meta.tensors
        for _name, stats in scan_values(list(tensors), chunk_bytes=64):
            assert stats.checked or stats.reason
    assert outcomes["read"] and outcomes["refused"], outcomes


@pytest.mark.parametrize("slot", [0, 1, 2, 4])
def test_payload_in_any_pickle_of_a_legacy_file(tmp_path: Path, slot: int) -> None:
    """Magic number, protocol version, sys_info, object, storage keys: torch.load reads all."""
    marker = tmp_path / "pwned"
    good = tmp_path / "good.pt"
    torch.save({"w": torch.ones(2)}, good, _use_new_zipfile_serialization=False)
    from autopsy.formats.unpickle.loader import scan_stream

    limits = {"max_bytes": 1 << 20, "max_ops": 100_000, "max_depth": 64}
    bounds = [0]
    with open(good, "rb") as fh:
        for _ in range(5):
            scan_stream(fh, limits)
            bounds.append(fh.tell())
    data = good.read_bytes()
    evil = pickle.dumps(_Payload(marker), protocol=2)
    patched = data[: bounds[slot]] + evil + data[bounds[slot + 1]:]
    path = tmp_path / "evil.pt"
    path.write_bytes(patched)
    meta = read_torch_meta(path)  # slot 0: no magic number left, so read as a plain pickle
    assert not marker.exists()
    assert meta.container == ("pickle" if slot == 0 else "torch_legacy")
    assert any(name.endswith(".system") for name, _ in meta.unsafe), (slot, meta.unsafe)


def _streamed_member(name: bytes, data: bytes) -> bytes:
    """A stored zip member with flag bit 3: sizes only in the data descriptor after the data."""
    head = struct.pack("<4sHHHHHIIIHH", b"PK\x03\x04", 20, 8, 0, 0, 0, 0, 0, 0, len(name), 0)
    return head + name + data + struct.pack("<4sIII", b"PK\x07\x08", zlib.crc32(data),
                                            len(data), len(data))


@pytest.mark.parametrize("chunk", [7, 64, 1 << 20])
def test_descriptor_search_past_false_signatures_and_chunk_edges(
        monkeypatch: pytest.MonkeyPatch, chunk: int) -> None:
    monkeypatch.setattr(torchzip, "_SEARCH_CHUNK", chunk)
    # data holding descriptor signatures that match neither size nor CRC
    first = b"PK\x07\x08" * 40 + b"x" * 13 + b"PK\x07\x08\x00\x00"
    raw = _streamed_member(b"a/one", first) + _streamed_member(b"a/two", b"tail")
    index = torchzip.salvage_zip(io.BytesIO(raw), len(raw))
    one, two = index.members["a/one"], index.members["a/two"]
    assert (one.size, two.size) == (len(first), 4)
    assert raw[one.data_offset:one.data_offset + one.size] == first
    assert raw[two.data_offset:two.data_offset + 4] == b"tail"
    # a member full of signatures and no descriptor: a problem, not a search per signature
    hostile = _streamed_member(b"a/x", b"")[:-16] + b"PK\x07\x08" * (1 << 18)
    index = torchzip.salvage_zip(io.BytesIO(hostile), len(hostile))
    assert "a/x: size unknown" in index.problems[-1]
