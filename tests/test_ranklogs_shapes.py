"""Learned line shapes (``autopsy.readers.ranklogs.shapes``) give exactly what the usual
parse of every line gives: the same points in the same order, the same segments, the same
events, whatever the search engine, the block size and the matcher (the compiled one or the
regular expression)."""

from __future__ import annotations

import random
from pathlib import Path

import pandas as pd
import pytest

from autopsy.readers.ranklogs import lines, scan
from autopsy.readers.ranklogs import shapes as shapes_mod
from autopsy.readers.ranklogs.metrics import MetricLine
from autopsy.readers.ranklogs.reader import read_group
from autopsy.readers.ranklogs.shapes import Shapes, learn


def _generic(rng: random.Random, n: int, prefix: str = "") -> list[str]:
    return [f"{prefix}2026-11-22 16:{(s // 60) % 60:02d}:{s % 60:02d},962 INFO step {s} loss "
            f"{2.5 * 0.999 ** s + rng.random() * 0.01:.4f} lr {1e-4:.6f} grad_norm "
            f"{1 + rng.random():.4f}" for s in range(1, n + 1)]


def _megatron(rng: random.Random, steps: range) -> list[str]:
    return [f" iteration {s:>8}/  500000 | consumed samples:     {s * 512:>9} | elapsed time "
            f"per iteration (ms): {450 + rng.random() * 10:.1f} | learning rate: {3e-4:.3E} | "
            f"global batch size:   512 | lm loss: {2.5 * 0.999 ** s:.6E} | loss scale: 65536.0 "
            f"| grad norm: {1 + rng.random():.3f} | number of skipped iterations:   0 | number "
            f"of nan iterations:   0 |" for s in steps]


def _mmengine(rng: random.Random, n: int) -> list[str]:
    out = []
    for s in range(n):
        e, i = s // 50 + 1, s % 50 + 1
        out.append(f"2023/03/01 12:00:00 - mmengine - INFO - Epoch(train)  [{e}][{i:>3}/50]  "
                   f"lr: 2.0000e-04  eta: 1:23:45  time: {0.5 + rng.random() * 0.01:.4f}  "
                   f"data_time: 0.0100  memory: 3456  loss: {2.5 * 0.999 ** s:.4f}")
        if i == 50:
            out.append(f"2023/03/01 12:00:00 - mmengine - INFO - Epoch(val) [{e}][10/10]    "
                       f"coco/bbox_mAP: 0.{e:03d}  data_time: 0.0030  time: 0.0500")
    return out


def _logs(rng: random.Random) -> dict[str, str]:
    generic = _generic(rng, 3000)
    generic[1700] = generic[1700].replace("loss 2.", "loss nan").replace("loss 0.", "loss nan")
    generic.insert(2200, "Traceback (most recent call last):\n  File \"x.py\", line 1, in <m>\n"
                         "KeyError: 10")
    doubled = [x for line in _generic(rng, 400) for x in (line, line)]
    resumed = [*_megatron(rng, range(1, 801)), "resuming from checkpoint",
               *_megatron(rng, range(500, 1501))]
    interleaved = [line for pair in zip(_generic(rng, 1500, "[rank0]:"),
                                        _generic(rng, 1500, "[rank1]:"), strict=True)
                   for line in pair]
    stamps = [f"2026-11-22T16:{(s // 60) % 60:02d}:{s % 60:02d}.{s % 997} step {s} loss "
              f"{1 / s:.5f}" for s in range(1, 2500)]  # fractions of 1 to 3 digits
    odd = [f"step {s} loss {1 / s:.5f} lr 0.1" for s in range(1, 1500)]
    odd[700] = "step nan loss 0.5 lr 0.1"  # a step the shape must not read
    odd[900] = "step 99999999999999999999999 loss 0.5 lr 0.1"
    many = [f"[rank{(s * 7) % 300}]:step {s // 300} loss {1 + rng.random():.4f} lr 0.0001"
            for s in range(3000)]  # 300 ranks interleaved, each restarting nowhere
    # numbers and spacing a shape's expression reads (some only by backtracking, which the
    # compiled matcher declines and leaves to the usual parse)
    tricky = [f"step {s} loss {1 / s:.5f} lr 0.1" for s in range(1, 1200)]
    for i, text in enumerate(["inf", "-inf", "Infinity", "-Infinity", "NaN", "NAN", "1e999",
                              "1e-999", ".5", "5.", "0.5E+3", "0.5e", "  0.5", "05", "1" * 400,
                              "1" * 600, "+inf", "infinity", "nan1"]):
        tricky[300 + 20 * i] = f"step {301 + 20 * i} loss {text} lr 0.1"
    tricky[800] = "step 801 loss 0.5 lr 0.1 "
    tricky[801] = "step  802 loss 0.5 lr 0.1\r"
    tricky[802] = "step 803 loss 0.5 lr 0.1e5"
    tricky[803] = "step 804 loss 0.5 lr 0.1.2"
    return {"generic.log": "\n".join(generic) + "\n", "doubled.log": "\n".join(doubled) + "\n",
            "manyranks.log": "\n".join(many) + "\n", "odd.log": "\n".join(odd) + "\n",
            "stamps.log": "\n".join(stamps) + "\n", "tricky.log": "\n".join(tricky),
            "megatron.log": "\n".join(resumed) + "\n",
            "mmengine.log": "\n".join(_mmengine(rng, 1000)) + "\n",
            "interleaved.log": "\n".join(interleaved) + "\n"}


def _read(path: Path, shapes: str, monkeypatch: pytest.MonkeyPatch) -> tuple[pd.DataFrame,
                                                                             pd.DataFrame]:
    monkeypatch.setenv(scan.SHAPES_ENV, shapes)
    part = read_group([path], [path.name])
    return part.scalars, part.events


@pytest.mark.parametrize("matcher", ["1", "regex"])  # the compiled matcher, the expression
@pytest.mark.parametrize("engine", ["python", "rg"])
@pytest.mark.parametrize("block", [16 << 10, 4 << 20])
@pytest.mark.parametrize("name", ["generic.log", "doubled.log", "megatron.log", "mmengine.log",
                                  "interleaved.log", "stamps.log", "manyranks.log",
                                  "odd.log", "tricky.log"])
def test_shapes_give_what_every_line_gives(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                           name: str, block: int, engine: str,
                                           matcher: str) -> None:
    path = tmp_path / name
    path.write_text(_logs(random.Random(7))[name], encoding="utf-8")
    monkeypatch.setattr(lines, "BLOCK_BYTES", block)
    monkeypatch.setenv("AUTOPSY_RANKLOGS_SEARCH", engine)
    from autopsy.readers.ranklogs import fastpath

    monkeypatch.setattr(fastpath, "MIN_BYTES", 0)
    fastpath._tool.cache_clear()
    fast_s, fast_e = _read(path, matcher, monkeypatch)
    slow_s, slow_e = _read(path, "0", monkeypatch)
    assert len(slow_s) > 1000
    pd.testing.assert_frame_equal(fast_s, slow_s)
    pd.testing.assert_frame_equal(fast_e, slow_e)


def test_shapes_read_most_lines_of_a_dense_log(tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "generic.log"
    path.write_text("\n".join(_generic(random.Random(1), 2000)) + "\n", encoding="utf-8")
    calls = []
    real = scan._metrics_of_line

    def counting(*args: object) -> None:
        calls.append(1)
        real(*args)  # type: ignore[arg-type]

    monkeypatch.setattr(scan, "_metrics_of_line", counting)
    monkeypatch.setenv(scan.SHAPES_ENV, "1")
    assert shapes_mod._matcher() is not None  # the compiled matcher was built and is used
    part = read_group([path], [path.name])
    assert (part.scalars["tag"] == "loss").sum() == 2000
    # the step equals the clock's seconds up to step 59: the shape is trusted from the line
    # that tells them apart (step 60), and the other 1,940 lines are read at once
    assert 3 <= len(calls) <= 61


def test_a_shape_needs_agreeing_lines_and_one_column_per_role() -> None:
    shapes = Shapes()
    line = b"step 10 loss 2.5 lr 0.1"
    for step, loss in ((10, 2.5), (11, 2.4)):
        raw = line.replace(b"10", str(step).encode()).replace(b"2.5", str(loss).encode())
        learn(shapes, raw, MetricLine("generic", step, [("loss", loss), ("lr", 0.1)]), None,
              None, float("nan"))
    assert not shapes.confirmed  # two lines are not enough
    learn(shapes, b"step 12 loss 2.3 lr 0.1",
          MetricLine("generic", 12, [("loss", 2.3), ("lr", 0.1)]), None, None, float("nan"))
    assert len(shapes.confirmed) == 1
    # a parse that needed earlier lines is never learned
    other = Shapes()
    for s in range(5):
        learn(other, f"Epoch {s} loss 1.{s}".encode(),
              MetricLine("generic", s, [("loss", 1.0 + s / 10)], stateless=False), None, None,
              float("nan"))
    assert not other.confirmed and not other.learning


def _confirmed(lines_: list[bytes], kind: str, step_of: int, values_of: list[tuple[str, int]],
               wall: float = float("nan")) -> shapes_mod.Shape:
    """The shape learned from lines whose usual parse gives the step and values at the given
    token columns."""
    import re

    got = Shapes()
    for raw in lines_:
        nums = [float(t) for t in re.findall(rb"\d+(?:\.\d*)?(?:[eE][-+]?\d+)?", raw)]
        learn(got, raw, MetricLine(kind, int(nums[step_of]),
                                   [(t, nums[j]) for t, j in values_of]), None, None, wall)
    (shape,) = got.confirmed
    return shape


_ALPHABET = b"0123456789.eE+- inftyNaIn\tx:|/"


@pytest.mark.parametrize("seed", range(4))
def test_the_compiled_matcher_accepts_only_what_the_expression_reads_alike(seed: int) -> None:
    """Mutated lines of a shape: every line the compiled matcher accepts, the shape's
    expression matches with the same numbers; declined lines are few among well-formed
    ones (they go to the usual parse)."""
    import numpy as np

    fast = shapes_mod._matcher()
    assert fast is not None, "the compiled matcher (_shapematch) was not built"
    rng = random.Random(seed)
    base = [f"step {s} loss {1 / s:.5f}  lr 1.0e-4 | gn {s % 7}.5".encode()
            for s in range(1, 6)]
    shape = _confirmed(base, "generic", 0, [("loss", 1), ("lr", 2), ("gn", 3)])
    assert shape.ops is not None
    lines_ = []
    for i in range(4000):
        line = bytearray(base[i % len(base)])
        for _ in range(rng.randrange(0, 3)):
            at = rng.randrange(len(line) + 1)
            what = rng.random()
            if what < 0.4:
                line[at:at] = bytes([rng.choice(_ALPHABET)])
            elif what < 0.7 and at < len(line):
                del line[at]
            elif at < len(line):
                line[at] = rng.choice(_ALPHABET)
        lines_.append(bytes(line).replace(b"\n", b""))
    data = b"\n".join(lines_) + b"\n"
    compiled = shapes_mod._match_compiled(fast, shape, data, 0)
    regex = shapes_mod._match_regex(shape, data, 0)
    assert compiled is not None and regex is not None
    assert set(compiled.starts.tolist()) <= set(regex.starts.tolist())
    at = {s: i for i, s in enumerate(regex.starts.tolist())}
    rows = [at[s] for s in compiled.starts.tolist()]
    np.testing.assert_array_equal(compiled.ends, regex.ends[rows])
    np.testing.assert_array_equal(compiled.steps, regex.steps[rows])
    np.testing.assert_array_equal(compiled.values, regex.values[rows])
    # declined: only lines the expression matches by backtracking, a handful here
    assert len(regex.starts) - len(compiled.starts) <= len(regex.starts) // 50
    assert len(compiled.starts) > 1000


def test_the_compiled_matcher_reads_time_stamps_as_the_expression() -> None:
    import numpy as np

    fast = shapes_mod._matcher()
    assert fast is not None, "the compiled matcher (_shapematch) was not built"
    base = [f"2026-11-22 16:05:1{s},96{s} INFO step {s} loss {1 / s:.5f}".encode()
            for s in range(1, 6)]
    shape = _confirmed(base, "generic", 7, [("loss", 8)], wall=0.0)
    assert shape.stamp_group is not None and shape.ops is not None
    data = b"\n".join([*base, b"2026-11-22T16:00:09.1 INFO step 9 loss 0.5",
                        b"2026-11-22_16:00:09.1234567 INFO step 10 loss 0.5",
                        b"2026-13-22 16:00:09 INFO step 11 loss 0.5", b"x"])
    compiled = shapes_mod._match_compiled(fast, shape, data, 0)
    regex = shapes_mod._match_regex(shape, data, 0)
    assert compiled is not None and regex is not None
    np.testing.assert_array_equal(compiled.starts, regex.starts)
    np.testing.assert_array_equal(compiled.walls, regex.walls)
    assert np.isnan(compiled.walls[-1]) and len(compiled.starts) == 7


@pytest.mark.parametrize("seed", range(6))
def test_the_compiled_marker_search_finds_the_lines_find_finds(seed: int) -> None:
    """``_shapematch.lines_with`` gives the lines ``hit_lines_py`` gives (one find per
    marker): markers at a line's start and end, several in a line, a one-byte marker, a
    last line without a newline, CR and NUL bytes, an empty block."""
    from autopsy.readers.ranklogs import markers

    fast = shapes_mod._matcher()
    assert fast is not None, "the compiled matcher (_shapematch) was not built"
    rng = random.Random(seed)
    pieces = [b"Traceback (most recent call last)", b"loss", b"NCCL", b"\n", b"\n", b" ",
              b"x", b"lo", b"\r", b"\x00", b"error:", b"Error", b"12.5", b"\n\n"]
    for markers_ in (markers.EVENT_MARKERS, markers.METRIC_MARKERS, markers.ALL_MARKERS,
                     (b"l",), (b"loss", b"lo"), ()):
        data = b"".join(rng.choice(pieces) for _ in range(rng.randrange(0, 3000)))
        assert fast.lines_with(data, markers_) == markers.hit_lines_py(data, markers_)
    assert fast.lines_with(b"", markers.ALL_MARKERS) == []
    assert fast.lines_with(b"a\nNCCL WARN", (b"NCCL",)) == [2]
