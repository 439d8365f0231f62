"""read_safetensors_meta against files written by safetensors.torch.save_file, whole and damaged."""

from __future__ import annotations

import json
import struct
from pathlib import Path

import pytest
from fmt_ckpt_files import read_at, tensor_bytes

from autopsy.formats.ckpterrors import CheckpointFormatError
from autopsy.formats.safetensors import read_safetensors_meta

torch = pytest.importorskip("torch")
st = pytest.importorskip("safetensors.torch")


def _tensors() -> dict[str, object]:
    torch.manual_seed(2)
    return {
        "wte.weight": torch.randn(11, 8),
        "ln.bias": torch.randn(8).to(torch.bfloat16),
        "head.weight": torch.randn(3, 8).to(torch.float16),
        "pos": torch.arange(5, dtype=torch.int64),
        "mask": torch.tensor([True, False]),
        "d": torch.randn(2, 2, dtype=torch.float64),
        "f8": torch.tensor([1.0, -0.5], dtype=torch.float8_e4m3fn),
        "e5": torch.tensor([2.0, 0.25], dtype=torch.float8_e5m2),
    }


@pytest.fixture(scope="module")
def good(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("st") / "model.safetensors"
    st.save_file(_tensors(), str(path), metadata={"format": "pt", "step": "12"})
    return path


def _write(path: Path, header: dict, data: bytes, length: int | None = None) -> Path:
    raw = json.dumps(header).encode()
    path.write_bytes(struct.pack("<Q", len(raw) if length is None else length) + raw + data)
    return path


def test_tensors_match_what_was_saved(good: Path) -> None:
    meta = read_safetensors_meta(good)
    tensors = _tensors()
    assert meta.problems == []
    assert meta.metadata == {"format": "pt", "step": "12"}
    assert set(meta.tensors) == set(tensors)
    names = {"float32", "bfloat16", "float16", "int64", "bool", "float64", "float8_e4m3fn",
             "float8_e5m2"}
    assert {info.dtype for info in meta.tensors.values()} == names
    for key, info in meta.tensors.items():
        tensor = tensors[key]
        assert info.shape == tuple(tensor.shape), key
        assert str(tensor.dtype) == f"torch.{info.dtype}", key
        assert info.storage is None and info.stride is None
        assert read_at(good, info.data_offset, info.nbytes) == tensor_bytes(tensor), key


def test_truncated_file(good: Path, tmp_path: Path) -> None:
    data = good.read_bytes()
    meta = read_safetensors_meta(good)
    last = max(meta.tensors.values(), key=lambda i: i.data_offset)
    cut = tmp_path / "cut.safetensors"
    cut.write_bytes(data[: last.data_offset + 1])
    damaged = read_safetensors_meta(cut)
    assert any("past the end of the file" in p for p in damaged.problems)
    lost = [k for k, i in damaged.tensors.items() if i.data_offset is None]
    assert lost == [k for k, i in meta.tensors.items() if i is last]
    for n in (0, 4, 20):
        cut.write_bytes(data[:n])
        with pytest.raises(CheckpointFormatError):
            read_safetensors_meta(cut)


def test_header_length_absurd(tmp_path: Path) -> None:
    path = _write(tmp_path / "big.safetensors", {}, b"", length=2**63)
    with pytest.raises(CheckpointFormatError, match="over the"):
        read_safetensors_meta(path)
    path = _write(tmp_path / "long.safetensors", {}, b"", length=5000)
    with pytest.raises(CheckpointFormatError, match="runs past the end"):
        read_safetensors_meta(path)


def test_not_json_and_not_an_object(tmp_path: Path) -> None:
    path = tmp_path / "x.safetensors"
    path.write_bytes(struct.pack("<Q", 4) + b"\xff{{{")
    with pytest.raises(CheckpointFormatError, match="not valid JSON"):
        read_safetensors_meta(path)
    with pytest.raises(CheckpointFormatError, match="not a JSON object"):
        read_safetensors_meta(_write(path, [1, 2], b""))  # type: ignore[arg-type]


def test_offset_beyond_the_file(tmp_path: Path) -> None:
    header = {"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]},
              "b": {"dtype": "F32", "shape": [2], "data_offsets": [1000, 1008]}}
    meta = read_safetensors_meta(_write(tmp_path / "o.safetensors", header, b"\0" * 8))
    assert meta.tensors["a"].data_offset is not None
    assert meta.tensors["b"].data_offset is None
    assert any("tensor b" in p and "past the end" in p for p in meta.problems)


def test_overlap_size_mismatch_and_bad_entries(tmp_path: Path) -> None:
    header = {
        "a": {"dtype": "F32", "shape": [4], "data_offsets": [0, 16]},
        "b": {"dtype": "F32", "shape": [2], "data_offsets": [8, 16]},
        "c": {"dtype": "BF16", "shape": [3], "data_offsets": [16, 24]},
        "d": {"dtype": "Q9", "shape": [1], "data_offsets": [24, 25]},
        "e": {"dtype": "F16", "shape": "x", "data_offsets": [24, 26]},
        "f": {"dtype": "F16", "shape": [1], "data_offsets": [26]},
        "__metadata__": {"format": "pt"},
    }
    meta = read_safetensors_meta(_write(tmp_path / "bad.safetensors", header, b"\0" * 24))
    text = "\n".join(meta.problems)
    assert "tensors a and b overlap" in text
    assert "tensor c: bfloat16 (3,) needs 6 bytes, its data_offsets span 8" in text
    assert "unknown dtype 'Q9'" in text
    assert "tensor e: shape 'x'" in text
    assert "tensor f: data_offsets [26]" in text
    assert meta.tensors["c"].data_offset is None
    assert meta.tensors["a"].data_offset == 8 + len(json.dumps(header))
    assert "d" not in meta.tensors and "e" not in meta.tensors


def test_empty_file(tmp_path: Path) -> None:
    path = tmp_path / "e.safetensors"
    path.write_bytes(b"")
    with pytest.raises(CheckpointFormatError, match="empty"):
        read_safetensors_meta(path)


def test_many_tensors_past_the_end_make_one_problem(tmp_path: Path) -> None:
    path = tmp_path / "many.safetensors"
    st.save_file({f"w{i:02d}": torch.randn(64) for i in range(20)}, str(path))
    data = path.read_bytes()
    path.write_bytes(data[: len(data) - 64 * 4 * 12 - 10])
    meta = read_safetensors_meta(path)
    assert len(meta.problems) == 1, meta.problems
    assert meta.problems[0].startswith("13 tensors lie past the end of the file (truncated")
    assert sum(info.data_offset is None for info in meta.tensors.values()) == 13


def test_shape_over_any_tensor_is_a_problem_found_fast(tmp_path: Path) -> None:
    # 2**62 cubed overflows int64; 200,000 sizes of 10**18 would take minutes to multiply out
    # and give a number too long to print: both are a problem line about that tensor.
    header = {
        "cube": {"dtype": "F32", "shape": [2**62] * 3, "data_offsets": [0, 4]},
        "long": {"dtype": "F32", "shape": [10**18] * 200_000, "data_offsets": [0, 4]},
        "ok": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]},
        "empty": {"dtype": "F32", "shape": [10**18] * 50 + [0], "data_offsets": [4, 4]},
    }
    meta = read_safetensors_meta(_write(tmp_path / "huge.safetensors", header, b"\0" * 4))
    assert set(meta.tensors) == {"ok", "empty"}
    assert meta.tensors["empty"].nbytes == 0
    huge = [p for p in meta.problems if "elements (damaged header)" in p]
    assert len(huge) == 2 and any("200,000 sizes" in p for p in huge)
    assert all(len(p) < 200 for p in meta.problems)
