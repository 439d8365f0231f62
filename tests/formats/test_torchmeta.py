"""read_torch_meta against files written by torch.save (zip and legacy), whole and damaged."""

from __future__ import annotations

import os
import pickle
import zipfile
from pathlib import Path
from typing import Any

import pytest
from fmt_ckpt_files import (
    get_path,
    mixed_tensors,
    read_at,
    rewrite_zip,
    tensor_bytes,
    trained_checkpoint,
)

from autopsy.formats.ckpterrors import CheckpointFormatError
from autopsy.formats.tensorinfo import TensorInfo
from autopsy.formats.torchmeta import read_torch_meta

torch = pytest.importorskip("torch")

TORCH_DTYPES = {
    torch.float32: "float32", torch.float16: "float16", torch.bfloat16: "bfloat16",
    torch.float64: "float64", torch.int64: "int64", torch.int32: "int32", torch.int8: "int8",
    torch.uint8: "uint8", torch.bool: "bool", torch.float8_e4m3fn: "float8_e4m3fn",
}


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The same objects saved as torch zip and legacy files."""
    root = tmp_path_factory.mktemp("torchmeta")
    out: dict[str, Path] = {}
    for name, obj in {"ckpt": trained_checkpoint(), "mixed": mixed_tensors()}.items():
        out[f"{name}_zip"] = root / f"{name}.pt"
        torch.save(obj, out[f"{name}_zip"])
        out[f"{name}_legacy"] = root / f"{name}_legacy.pt"
        torch.save(obj, out[f"{name}_legacy"], _use_new_zipfile_serialization=False)
    return out


def check_against_torch(path: Path, meta: Any, *, weights_only: bool = True) -> int:
    """Every TensorInfo matches what torch.load gives: dtype, shape, bytes at its offset."""
    loaded = torch.load(path, weights_only=weights_only)
    for key, info in meta.tensors:
        tensor = get_path(loaded, key)
        assert isinstance(info, TensorInfo)
        assert info.dtype == TORCH_DTYPES[tensor.dtype], key
        assert info.shape == tuple(tensor.shape), key
        assert info.nbytes == tensor.numel() * tensor.element_size(), key
        assert info.data_offset is not None, key
        assert info.file == str(path)
        if info.is_contiguous:
            assert read_at(path, info.data_offset, info.nbytes) == tensor_bytes(tensor), key
        assert info.stride == tuple(tensor.stride()), key
        assert info.storage_offset == tensor.storage_offset(), key
    return len(meta.tensors)


@pytest.mark.parametrize("kind", ["zip", "legacy"])
def test_checkpoint_dict_tensors_match_torch(files: dict[str, Path], kind: str) -> None:
    path = files[f"ckpt_{kind}"]
    meta = read_torch_meta(path)
    assert meta.container == ("torch_zip" if kind == "zip" else "torch_legacy")
    assert meta.problems == [] and meta.unsafe == []
    keys = dict(meta.tensors)
    assert {"model.0.weight", "optimizer.state.0.exp_avg", "optimizer.state.0.exp_avg_sq",
            "optimizer.state.5.step"} <= set(keys)
    assert check_against_torch(path, meta) == 7 + 7 * 3
    assert meta.obj["step"] == 7
    assert meta.obj["scaler"]["scale"] == 65536.0
    assert meta.obj["scheduler"]["last_epoch"] == 1
    assert meta.obj["optimizer"]["param_groups"][0]["lr"] == 1e-3
    assert isinstance(meta.obj["optimizer"]["state"][0]["exp_avg"], TensorInfo)
    assert "torch._utils._rebuild_tensor_v2" in meta.globals


@pytest.mark.parametrize("kind", ["zip", "legacy"])
def test_dtypes_views_parameters_match_torch(files: dict[str, Path], kind: str) -> None:
    path = files[f"mixed_{kind}"]
    meta = read_torch_meta(path)
    assert meta.problems == []
    assert check_against_torch(path, meta) == len(mixed_tensors())
    infos = dict(meta.tensors)
    a, b = infos["view_a"], infos["view_b"]
    assert a.storage == b.storage and (a.storage_offset, b.storage_offset) == (2, 20)
    assert b.data_offset - a.data_offset == 18 * 4
    assert infos["param"].dtype == "float32" and infos["param"].shape == (3, 2)
    assert not infos["transposed"].is_contiguous and infos["transposed"].stride == (1, 4)
    assert infos["scalar"].shape == () and infos["scalar"].numel == 1
    assert infos["empty"].nbytes == 0


def test_fp8_tensor_through_rebuild_v3(tmp_path: Path) -> None:
    t = torch.tensor([1.0, -2.0, 448.0], dtype=torch.float8_e4m3fn)
    path = tmp_path / "fp8.pt"
    torch.save({"w": t, "b": torch.ones(2, dtype=torch.bfloat16)}, path)
    meta = read_torch_meta(path)
    infos = dict(meta.tensors)
    assert infos["w"].dtype == "float8_e4m3fn" and infos["w"].nbytes == 3
    assert read_at(path, infos["w"].data_offset, 3) == tensor_bytes(t)
    assert meta.problems == []


def test_tied_tensor_listed_under_both_paths(tmp_path: Path) -> None:
    shared = torch.randn(4, 2)
    path = tmp_path / "tied.pt"
    torch.save({"wte": shared, "lm_head": shared}, path)
    meta = read_torch_meta(path)
    infos = dict(meta.tensors)
    assert set(infos) == {"wte", "lm_head"}
    assert infos["wte"] == infos["lm_head"]


def _biggest(meta: Any) -> tuple[str, TensorInfo]:
    """The tensor stored last among those of 16 bytes or more."""
    return max((kv for kv in meta.tensors if kv[1].nbytes >= 16),
               key=lambda kv: kv[1].data_offset)


@pytest.mark.parametrize("kind", ["zip", "legacy"])
def test_cut_inside_a_storage(files: dict[str, Path], tmp_path: Path, kind: str) -> None:
    src = files[f"ckpt_{kind}"]
    whole = read_torch_meta(src)
    key, big = _biggest(whole)
    cut = tmp_path / "cut.pt"
    cut.write_bytes(src.read_bytes()[: big.data_offset + big.nbytes // 2])
    meta = read_torch_meta(cut)
    assert any("cut short" in p and f"storage {big.storage}" in p for p in meta.problems)
    infos = dict(meta.tensors)
    assert infos[key].data_offset is None
    before = [(k, i) for k, i in whole.tensors if i.data_offset < big.data_offset]
    assert before, "expected tensors stored before the cut"
    for k, info in before:
        assert infos[k].data_offset == info.data_offset, k
    if kind == "zip":
        assert any("central directory unreadable" in p for p in meta.problems)


def test_cut_inside_the_zip_directory(files: dict[str, Path], tmp_path: Path) -> None:
    src = files["ckpt_zip"]
    whole = read_torch_meta(src)
    data = src.read_bytes()
    for trim in (5, 30, 200):
        cut = tmp_path / f"dir{trim}.pt"
        cut.write_bytes(data[:-trim])
        meta = read_torch_meta(cut)
        assert any("central directory unreadable" in p for p in meta.problems), trim
        assert [(k, i.data_offset) for k, i in meta.tensors] == [
            (k, i.data_offset) for k, i in whole.tensors
        ], trim
        assert not any("storage" in p for p in meta.problems), meta.problems


def test_cut_at_many_points_never_crashes(files: dict[str, Path], tmp_path: Path) -> None:
    for kind in ("ckpt_zip", "ckpt_legacy"):
        data = files[kind].read_bytes()
        for i, end in enumerate(range(1, len(data), max(1, len(data) // 40))):
            cut = tmp_path / f"{kind}_{i}.pt"
            cut.write_bytes(data[:end])
            try:
                meta = read_torch_meta(cut)
            except CheckpointFormatError as exc:
                assert "\n" not in str(exc)
                continue
            assert meta.problems, (kind, end)
            for _key, info in meta.tensors:
                if info.data_offset is not None:
                    assert info.data_offset + info.nbytes <= end


def test_cut_inside_the_pickle_is_an_error(files: dict[str, Path], tmp_path: Path) -> None:
    data = files["ckpt_legacy"].read_bytes()
    cut = tmp_path / "pkl.pt"
    cut.write_bytes(data[:300])
    with pytest.raises(CheckpointFormatError, match="not a readable"):
        read_torch_meta(cut)


def test_zero_length_and_garbage_files(tmp_path: Path) -> None:
    empty = tmp_path / "empty.pt"
    empty.write_bytes(b"")
    with pytest.raises(CheckpointFormatError, match="empty file"):
        read_torch_meta(empty)
    junk = tmp_path / "junk.pt"
    junk.write_bytes(os.urandom(64) + b"\xff" * 64)
    with pytest.raises(CheckpointFormatError):
        read_torch_meta(junk)
    with pytest.raises(CheckpointFormatError, match="cannot open"):
        read_torch_meta(tmp_path / "absent.pt")


def test_missing_storage_member(files: dict[str, Path], tmp_path: Path) -> None:
    src = files["ckpt_zip"]
    whole = read_torch_meta(src)
    key, big = _biggest(whole)
    damaged = tmp_path / "missing.pt"
    rewrite_zip(src, damaged, drop=f"/data/{big.storage}")
    meta = read_torch_meta(damaged)
    assert any(f"storage {big.storage}" in p and "missing" in p for p in meta.problems)
    infos = dict(meta.tensors)
    assert infos[key].data_offset is None
    loaded = torch.load(src, weights_only=True)
    for k, info in meta.tensors:  # the others are found in the rewritten zip
        if k != key and info.storage != big.storage:
            assert read_at(damaged, info.data_offset, info.nbytes) == tensor_bytes(
                get_path(loaded, k))


def test_short_and_compressed_members(files: dict[str, Path], tmp_path: Path) -> None:
    src = files["ckpt_zip"]
    key, big = _biggest(read_torch_meta(src))
    with zipfile.ZipFile(src) as z:
        name = next(n for n in z.namelist() if n.endswith(f"/data/{big.storage}"))
        short = z.read(name)[:8]
    damaged = tmp_path / "short.pt"
    rewrite_zip(src, damaged, replace={f"data/{big.storage}": short})
    meta = read_torch_meta(damaged)
    assert any(f"holds 8 bytes; the pickle declares {big.nbytes:,}" in p for p in meta.problems)
    assert dict(meta.tensors)[key].data_offset is None
    deflated = tmp_path / "deflated.pt"
    rewrite_zip(src, deflated, compression=zipfile.ZIP_DEFLATED)
    meta = read_torch_meta(deflated)
    assert any("compressed" in p for p in meta.problems)
    assert all(info.data_offset is None for _k, info in meta.tensors)


class _Payload:
    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self) -> tuple[Any, ...]:
        return (os.system, (f"touch {self.marker}",))


def test_hostile_pickle_in_a_torch_zip_is_reported_not_run(
    files: dict[str, Path], tmp_path: Path
) -> None:
    marker = tmp_path / "pwned"
    evil = pickle.dumps({"model": {"w": 1}, "hook": _Payload(marker)}, protocol=2)
    damaged = tmp_path / "evil.pt"
    rewrite_zip(files["mixed_zip"], damaged, replace={"data.pkl": evil})
    meta = read_torch_meta(damaged)
    assert not marker.exists()
    names = [name for name, _reason in meta.unsafe]
    assert names and names[0].endswith(".system")
    assert all(reason for _name, reason in meta.unsafe)
    assert meta.obj["model"] == {"w": 1}


def test_plain_pickle_is_read_without_tensor_bytes(tmp_path: Path) -> None:
    path = tmp_path / "state.pkl"
    path.write_bytes(pickle.dumps({"epoch": 3, "seed": [1, 2]}))
    meta = read_torch_meta(path)
    assert meta.container == "pickle" and meta.obj == {"epoch": 3, "seed": [1, 2]}
    assert meta.tensors == [] and meta.problems == []


def test_import_pulls_in_neither_torch_numpy_nor_pandas() -> None:
    import subprocess
    import sys

    code = ("import sys, autopsy.formats.torchmeta, autopsy.formats.safetensors; "
            "print(sorted(m for m in ('torch', 'numpy', 'pandas') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True)
    assert out.stdout.strip() == "[]"


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16, torch.float64])
def test_module_state_dict_in_lower_precision(tmp_path: Path, dtype: Any) -> None:
    model = torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.LayerNorm(3)).to(dtype)
    path = tmp_path / "model.bin"
    torch.save(model.state_dict(), path)
    meta = read_torch_meta(path)
    assert check_against_torch(path, meta) == 4
    assert {info.dtype for _k, info in meta.tensors} == {TORCH_DTYPES[dtype]}


class _Tagged(torch.Tensor):
    """A tensor subclass: torch pickles it through ``_rebuild_from_type_v2``."""


def test_tensor_subclass_through_rebuild_from_type(tmp_path: Path) -> None:
    t = torch.arange(6, dtype=torch.float32).reshape(2, 3).as_subclass(_Tagged)
    path = tmp_path / "sub.pt"
    torch.save({"t": t}, path)
    meta = read_torch_meta(path)
    assert "torch._tensor._rebuild_from_type_v2" in meta.globals
    ((key, info),) = meta.tensors
    assert key == "t" and info.shape == (2, 3) and info.dtype == "float32"
    assert read_at(path, info.data_offset, info.nbytes) == tensor_bytes(
        torch.arange(6, dtype=torch.float32))


@pytest.mark.parametrize("protocol", [4, 5])
def test_newer_pickle_protocols(tmp_path: Path, protocol: int) -> None:
    path = tmp_path / f"p{protocol}.pt"
    torch.save(mixed_tensors(), path, pickle_protocol=protocol)
    meta = read_torch_meta(path)
    assert meta.problems == [] and meta.unsafe == []
    # torch's weights-only unpickler refuses the FRAME opcode; the file is our own
    assert check_against_torch(path, meta, weights_only=False) == len(mixed_tensors())


class _Rebuild:
    """Pickles as a tensor rebuild over a real storage, with the view arguments given."""

    def __init__(self, storage: Any, offset: int, shape: tuple[int, ...],
                 stride: tuple[int, ...]) -> None:
        self.args = (storage, offset, shape, stride, False, {})

    def __reduce__(self) -> tuple[Any, ...]:
        return torch._utils._rebuild_tensor_v2, self.args


def test_shapes_no_torch_file_can_hold_are_problems_found_fast(tmp_path: Path) -> None:
    # 200,000 sizes of 10**18 took minutes to multiply out; a size or stride of 5,000 digits
    # failed on printing; a negative size was listed as a tensor.
    storage = torch.zeros(4).untyped_storage()
    obj = {
        "ok": torch.ones(2),
        "long": _Rebuild(storage, 0, (10**18,) * 200_000, (1,) * 200_000),
        "stride": _Rebuild(storage, 0, (2, 2), (10**5000, 1)),
        "offset": _Rebuild(storage, 10**5000, (2,), (1,)),
        "negative": _Rebuild(storage, 0, (-4,), (1,)),
    }
    path = tmp_path / "hostile.pt"
    torch.save(obj, path)
    meta = read_torch_meta(path)
    assert [key for key, _info in meta.tensors] == ["ok"]
    bad = [p for p in meta.problems if "not a tensor torch can load" in p]
    assert len(bad) == 4
    assert any(p.startswith("tensor long: its shape of 200,000 sizes") for p in bad)
    assert any(p.startswith("tensor negative: a negative size") for p in bad)
    assert all(len(p) < 200 for p in meta.problems)
