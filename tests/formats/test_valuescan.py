"""scan_values: NaN/Inf planted at known indexes, counted as torch counts them, in both formats."""

from __future__ import annotations

from pathlib import Path

import pytest

from autopsy.formats.safetensors import read_safetensors_meta
from autopsy.formats.tensorinfo import TensorInfo
from autopsy.formats.torchmeta import read_torch_meta
from autopsy.formats.valuescan import ValueStats, bits_to_float, scan_values

torch = pytest.importorskip("torch")
st = pytest.importorskip("safetensors.torch")

FLOATS = [torch.float32, torch.float16, torch.bfloat16, torch.float64]


def planted() -> dict[str, object]:
    """Tensors with NaN/Inf at known flat indexes, and clean ones."""
    torch.manual_seed(3)
    out: dict[str, object] = {}
    for dt in FLOATS:
        name = str(dt).removeprefix("torch.")
        t = torch.randn(3000, dtype=torch.float32).to(dt)
        t[1234] = float("nan")
        t[2000] = float("inf")
        t[2001] = -float("inf")
        t[2999] = float("nan")
        out[f"{name}.bad"] = t.reshape(30, 100)
        out[f"{name}.clean"] = -torch.rand(257, dtype=torch.float32).to(dt) - 0.5
    out["only_nan"] = torch.full((5,), float("nan"))
    out["ints"] = torch.arange(10)
    out["f8"] = torch.tensor([1.0, -448.0, float("nan"), 2.0], dtype=torch.float8_e4m3fn)
    out["e5"] = torch.tensor([1.0, -float("inf"), float("nan"), 57344.0],
                             dtype=torch.float8_e5m2)
    return out


def expected(t: object) -> ValueStats:
    v = t.float() if t.dtype in (torch.float8_e4m3fn, torch.float8_e5m2) else t  # type: ignore[attr-defined]
    flat = v.reshape(-1)
    nan, inf = torch.isnan(flat), torch.isinf(flat)
    bad = (nan | inf).nonzero()
    finite = flat[torch.isfinite(flat)]
    return ValueStats(
        True, int(nan.sum()), int((inf & (flat > 0)).sum()), int((inf & (flat < 0)).sum()),
        int(bad[0]) if len(bad) else None,
        float(finite.abs().max()) if finite.numel() else None,
    )


@pytest.fixture(scope="module")
def saved(tmp_path_factory: pytest.TempPathFactory) -> dict[str, list[tuple[str, TensorInfo]]]:
    root = tmp_path_factory.mktemp("scan")
    tensors = planted()
    torch.save(tensors, root / "zip.pt")
    legacy = {k: v for k, v in tensors.items() if k not in ("f8", "e5")}
    torch.save(legacy, root / "legacy.pt", _use_new_zipfile_serialization=False)
    st.save_file(tensors, str(root / "m.safetensors"))
    return {
        "zip": read_torch_meta(root / "zip.pt").tensors,
        "legacy": read_torch_meta(root / "legacy.pt").tensors,
        "safetensors": list(read_safetensors_meta(root / "m.safetensors").tensors.items()),
    }


@pytest.mark.parametrize("fmt", ["zip", "legacy", "safetensors"])
@pytest.mark.parametrize(("chunk", "workers"), [(64, 1), (64, 3), (1000, 2), (64 << 20, None)])
def test_counts_equal_torch(saved: dict, fmt: str, chunk: int, workers: int | None) -> None:
    tensors = planted()
    order = [name for name, _ in scan_values(saved[fmt], chunk_bytes=chunk, workers=workers)]
    assert order == [k for k, _ in saved[fmt]]
    results = dict(scan_values(saved[fmt], chunk_bytes=chunk, workers=workers))
    assert set(results) == {k for k, _ in saved[fmt]}
    for key, stats in results.items():
        if key == "ints":
            assert not stats.checked and stats.reason == "not a floating dtype"
            continue
        assert stats == expected(tensors[key]), (fmt, key)
    assert results["float32.bad"].nan == 2 and results["float32.bad"].first_bad == 1234
    assert results["bfloat16.bad"].posinf == 1 and results["bfloat16.bad"].neginf == 1
    assert results["float64.clean"].finite and not results["float16.bad"].finite
    assert results["only_nan"].max_abs is None and results["only_nan"].nan == 5


def test_fp8_bit_patterns(saved: dict) -> None:
    results = dict(scan_values(saved["zip"]))
    assert results["f8"] == ValueStats(True, nan=1, first_bad=2, max_abs=448.0)
    assert results["e5"] == ValueStats(True, nan=1, neginf=1, first_bad=1, max_abs=57344.0)


def test_transposed_and_complex(tmp_path: Path) -> None:
    t = torch.randn(6, 5).t()
    t[3, 4] = float("nan")
    c = torch.randn(8, dtype=torch.complex64)
    c[5] = complex(float("inf"), 1.0)
    torch.save({"t": t, "c": c, "slice": torch.randn(20)[5:15]}, tmp_path / "x.pt")
    results = dict(scan_values(read_torch_meta(tmp_path / "x.pt").tensors, chunk_bytes=64))
    assert results["t"].nan == 1 and results["t"].first_bad == 3 * 6 + 4
    assert results["t"].max_abs == pytest.approx(float(t[~torch.isnan(t)].abs().max()))
    assert results["c"].posinf == 1 and results["c"].first_bad == 5
    assert results["slice"].finite


def test_unreadable_bytes_are_unchecked_not_errors(tmp_path: Path) -> None:
    path = tmp_path / "w.safetensors"
    st.save_file({"a": torch.randn(100)}, str(path))
    info = read_safetensors_meta(path).tensors["a"]
    cases = {
        "nowhere": TensorInfo("float32", (4,), str(path), None, 16),
        "short": TensorInfo("float32", (1000,), str(path), info.data_offset, 4000),
        "gone": TensorInfo("float32", (4,), str(tmp_path / "absent"), 0, 16),
        "fnuz": TensorInfo("float8_e4m3fnuz", (4,), str(path), info.data_offset, 4),
        "empty": TensorInfo("float32", (0, 3), str(path), info.data_offset, 0),
    }
    results = dict(scan_values(cases.items()))
    assert results["nowhere"].reason == "bytes not locatable"
    assert "ends before" in results["short"].reason
    assert results["gone"].reason.startswith("cannot open")
    assert "not supported" in results["fnuz"].reason
    assert all(not results[k].checked for k in ("nowhere", "short", "gone", "fnuz"))
    assert results["empty"].finite and results["empty"].max_abs is None


def test_bits_to_float() -> None:
    assert bits_to_float("float32", 0x3F800000) == 1.0
    assert bits_to_float("bfloat16", 0x4000) == 2.0
    assert bits_to_float("float8_e4m3fn", 0x7E) == 448.0
    assert bits_to_float("float8_e5m2", 0x7B) == 57344.0


def test_read_path_when_a_file_cannot_be_mapped(
    saved: dict, monkeypatch: pytest.MonkeyPatch
) -> None:
    import mmap

    def refuse(*_args: object, **_kwargs: object) -> None:
        raise OSError("no mmap here")

    monkeypatch.setattr(mmap, "mmap", refuse)
    tensors = planted()
    results = dict(scan_values(saved["safetensors"], chunk_bytes=100))
    for key in ("float32.bad", "bfloat16.bad", "float64.clean", "f8"):
        assert results[key] == expected(tensors[key]), key


def test_stopping_early_closes_cleanly(saved: dict) -> None:
    scan = scan_values(saved["zip"], chunk_bytes=64, workers=2)
    first = next(scan)
    assert first[0] == saved["zip"][0][0]
    scan.close()  # cancels pending windows, joins the threads, unmaps the files
