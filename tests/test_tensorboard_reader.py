"""The TensorBoard reader against tensorboard's own protobuf parse of the same files.

Every event file here is written at test time by torch's real SummaryWriter (some
summaries built with tensorboard's protos and handed to its file writer), then
checked value for value (steps, tags, float32-exact values, NaN-aware, wall times)
against ``event_pb2`` reading the frames itself.
"""

from __future__ import annotations

import math
import os
import struct
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from autopsy.formats.event_scalars import read_event_scalars
from autopsy.model.scalars import SCALAR_COLUMNS
from autopsy.readers import tensorboard as tb

torch_tb = pytest.importorskip("torch.utils.tensorboard")


# -- reference: tensorboard's protobuf parse ---------------------------------------------
def reference(path: Path) -> pd.DataFrame:
    """Scalars of ``path`` parsed with ``event_pb2``; frames with a bad CRC are skipped."""
    from tensorboard.compat.proto import event_pb2
    from tensorboard.compat.tensorflow_stub.pywrap_tensorflow import masked_crc32c
    from tensorboard.util import tensor_util

    data = path.read_bytes()
    rows = []
    pos = 0
    while pos + 12 <= len(data):
        (n,) = struct.unpack_from("<Q", data, pos)
        if masked_crc32c(data[pos : pos + 8]) != struct.unpack_from("<I", data, pos + 8)[0]:
            break
        if pos + 16 + n > len(data):
            break
        body = data[pos + 12 : pos + 12 + n]
        good = masked_crc32c(body) == struct.unpack_from("<I", data, pos + 12 + n)[0]
        pos += 16 + n
        if not good:
            continue
        ev = event_pb2.Event.FromString(body)
        for v in ev.summary.value:
            kind = v.WhichOneof("value")
            plugin = v.metadata.plugin_data.plugin_name
            if kind == "simple_value":
                value = float(v.simple_value)
            elif kind == "tensor" and plugin in ("", "scalars"):
                arr = tensor_util.make_ndarray(v.tensor)
                if arr.size != 1 or arr.dtype.kind not in "fiub":
                    continue
                value = float(arr.reshape(()).astype(np.float64))
            else:
                continue
            rows.append((ev.step, v.tag, value, ev.wall_time))
    return pd.DataFrame(rows, columns=["step", "raw_tag", "value", "wall_time"])


def event_files(logdir: Path) -> list[Path]:
    return sorted(logdir.rglob("*tfevents*"))


def read_dir(logdir: Path):
    paths = event_files(logdir)
    return tb.read_group(paths, [p.relative_to(logdir).as_posix() for p in paths])


def assert_same(frame: pd.DataFrame, ref: pd.DataFrame) -> None:
    """Rows equal, in order: steps, raw tags, values (NaN-aware, exact) and wall times."""
    assert len(frame) == len(ref)
    np.testing.assert_array_equal(frame["step"].to_numpy(), ref["step"].to_numpy())
    assert frame["raw_tag"].astype(str).tolist() == ref["raw_tag"].tolist()
    np.testing.assert_array_equal(frame["value"].to_numpy(), ref["value"].to_numpy())
    np.testing.assert_array_equal(frame["wall_time"].to_numpy(), ref["wall_time"].to_numpy())


def writer(logdir: Path, **kw):
    return torch_tb.SummaryWriter(log_dir=str(logdir), **kw)


def tensor_summary(tag: str, tensor) -> object:
    """A Summary holding one scalar tensor, marked as a scalars-plugin value."""
    from tensorboard.compat.proto.summary_pb2 import Summary, SummaryMetadata

    meta = SummaryMetadata(plugin_data=SummaryMetadata.PluginData(plugin_name="scalars"))
    return Summary(value=[Summary.Value(tag=tag, tensor=tensor, metadata=meta)])


# -- scalars ------------------------------------------------------------------------------
STEPS = [0, 1, 5, 127, 128, 129, 300, 16383, 16384, 2**21, 2**31 + 7, 2**40]


def test_simple_scalars_equal_protobuf_parse(tmp_path: Path) -> None:
    rng = np.random.default_rng(1)
    w = writer(tmp_path)
    tags = ["a", "loss", "train/loss", "train/learning_rate", "x" * 40, "eval/accuracy"]
    for step in STEPS:
        for tag in tags:
            w.add_scalar(tag, float(rng.standard_normal() * 10.0 ** rng.integers(-30, 30)), step)
    w.add_scalar("late", 1e-45, 3)  # a float32 subnormal
    w.close()
    (path,) = event_files(tmp_path)
    part = tb.read(path, path.name)
    assert part.problems == []
    assert_same(part.scalars, reference(path))
    assert list(part.scalars.columns) == list(SCALAR_COLUMNS)
    assert part.scalars["rank"].isna().all()
    assert set(part.scalars["source"].astype(str)) == {path.name}
    assert (part.scalars["segment"] == 0).all()


def test_many_scalars_equal_protobuf_parse_across_windows(tmp_path: Path) -> None:
    rng = np.random.default_rng(2)
    w = writer(tmp_path)
    tags = [f"t{i}/{'q' * i}" for i in range(12)]
    for step in range(0, 3000, 3):
        for tag in rng.choice(tags, size=4, replace=False):
            w.add_scalar(str(tag), float(rng.standard_normal()), step)
    w.close()
    (path,) = event_files(tmp_path)
    ref = reference(path)
    assert_same(tb.read(path, "f").scalars, ref)
    for window in (50, 999, 4096):  # tiny windows: many window boundaries
        got = read_event_scalars(path, window=window)
        assert len(got) == len(ref)
        np.testing.assert_array_equal(got.step, ref["step"].to_numpy())
        np.testing.assert_array_equal(got.value, ref["value"].to_numpy())


def test_new_style_tensor_scalars_all_dtypes(tmp_path: Path) -> None:
    from tensorboard.compat.proto.tensor_pb2 import TensorProto
    from tensorboard.compat.proto.tensor_shape_pb2 import TensorShapeProto
    from tensorboard.util import tensor_util

    w = writer(tmp_path)
    fw = w._get_file_writer()
    for step in range(1, 40, 7):
        w.add_scalar("f32", 0.1 * step, step, new_style=True)
        w.add_scalar("f64", 0.1 * step, step, new_style=True, double_precision=True)
        for dtype in (np.float16, np.float32, np.float64, np.int32, np.int64, np.bool_):
            arr = np.array(step % 3 == 0 if dtype is np.bool_ else -1.5 * step, dtype=dtype)
            fw.add_summary(tensor_summary(f"typed/{np.dtype(dtype).name}",
                                          tensor_util.make_tensor_proto(arr)), step)
        # the same values as raw tensor_content bytes
        for dtype, code in ((np.float16, 19), (np.float32, 1), (np.float64, 2), (np.int32, 3),
                            (np.int64, 9)):
            content = np.array(-2.5 * step, dtype=dtype).tobytes()
            proto = TensorProto(dtype=code, tensor_shape=TensorShapeProto(), tensor_content=content)
            fw.add_summary(tensor_summary(f"content/{np.dtype(dtype).name}", proto), step)
    w.close()
    (path,) = event_files(tmp_path)
    part = tb.read(path, "x")
    ref = reference(path)
    assert len(ref) == 6 * (2 + 6 + 5)
    assert_same(part.scalars, ref)
    assert part.problems == []


def test_nan_and_infinities_kept(tmp_path: Path) -> None:
    w = writer(tmp_path)
    specials = [math.nan, math.inf, -math.inf, 0.0, -0.0, 3.0]
    for step, v in enumerate(specials):
        w.add_scalar("loss", v, step)
        w.add_scalar("grad_norm", v, step, new_style=True)
        w.add_scalar("grad_norm64", v, step, new_style=True, double_precision=True)
    w.close()
    (path,) = event_files(tmp_path)
    frame = tb.read(path, "x").scalars
    assert_same(frame, reference(path))
    loss = frame[frame["raw_tag"] == "loss"]["value"].to_numpy()
    assert math.isnan(loss[0]) and loss[1] == math.inf and loss[2] == -math.inf
    assert np.signbit(loss[4])


def test_histograms_images_text_hparams_skipped_or_configured(tmp_path: Path) -> None:
    rng = np.random.default_rng(3)
    w = writer(tmp_path)
    for step in range(5):
        w.add_scalar("loss", 1.0 / (step + 1), step)
        w.add_histogram("weights", rng.standard_normal(1000), step)
        w.add_image("img", rng.random((3, 16, 16)), step)
        w.add_scalar("lr", 1e-3, step, new_style=True)
    w.add_text("args", '{"learning_rate": 0.001, "warmup_steps": 0, "nested": {"a": 1}}')
    w.add_text("big", "x" * 5000)
    w.add_hparams({"lr": 0.1, "optim": "adam", "fp16": True}, {"hparam/acc": 0.5})
    w.close()
    part = read_dir(tmp_path)
    frame = part.scalars
    assert sorted(set(frame["raw_tag"].astype(str))) == ["hparam/acc", "loss", "lr"]
    main = next(p for p in event_files(tmp_path) if p.parent == tmp_path)
    assert_same(frame[frame["source"] == main.name].reset_index(drop=True), reference(main))
    config = {c.key: c for c in part.config}
    assert config["args/text_summary"].value.startswith('{"learning_rate"')
    assert config["learning_rate"].value == 0.001 and config["warmup_steps"].value == 0
    assert "nested" not in config and "big/text_summary" not in config
    assert config["optim"].value == "adam" and config["lr"].value == 0.1
    assert config["lr"].source.endswith(tuple(p.name for p in event_files(tmp_path)))
    assert part.problems == []


# -- restarts and streams --------------------------------------------------------------------
def test_restart_new_writer_gives_two_segments_and_keeps_the_tail(tmp_path: Path) -> None:
    first = writer(tmp_path, filename_suffix=".a")
    for step in range(100):
        first.add_scalar("loss", 1.0, step, walltime=1000.0 + step)
        if step % 10 == 0:
            first.add_scalar("epoch", step / 10, step // 10, walltime=1000.0 + step)
    first.close()
    second = writer(tmp_path, filename_suffix=".b")
    for step in range(50, 80):
        second.add_scalar("loss", 2.0, step, walltime=2000.0 + step)
    second.close()
    frame = read_dir(tmp_path).scalars
    loss = frame[frame["raw_tag"] == "loss"]
    assert loss["segment"].tolist() == [0] * 100 + [1] * 30
    assert loss["step"].tolist() == list(range(100)) + list(range(50, 80))  # tail kept
    assert (frame[frame["raw_tag"] == "epoch"]["segment"] == 0).all()


def test_restart_inside_one_file_is_a_segment(tmp_path: Path) -> None:
    w = writer(tmp_path)
    for step in [*range(10), *range(3, 8)]:
        w.add_scalar("loss", float(step), step)
    w.close()
    frame = read_dir(tmp_path).scalars
    assert frame["segment"].tolist() == [0] * 10 + [1] * 5


def test_restart_at_the_same_step_in_a_new_file(tmp_path: Path) -> None:
    first = writer(tmp_path, filename_suffix=".a")
    for step in (10, 20):
        first.add_scalar("loss", 1.0, step, walltime=100.0 + step)
    first.close()
    second = writer(tmp_path, filename_suffix=".b")
    for step in (20, 30):
        second.add_scalar("loss", 1.0, step, walltime=200.0 + step)
    second.close()
    assert read_dir(tmp_path).scalars["segment"].tolist() == [0, 0, 1, 1]


def test_relaunch_directories_chain_but_concurrent_ones_stay_apart(tmp_path: Path) -> None:
    # HF Trainer: a new runs/<date>_<host>/ per launch, one after the other
    for k, (name, start, steps) in enumerate(
        [("Jan01_host", 0.0, range(0, 60)), ("Jan02_host", 1e5, range(40, 90))]
    ):
        w = writer(tmp_path / "runs" / name)
        for s in steps:
            w.add_scalar("train/loss", float(k), s, walltime=start + s)
        w.close()
    # Keras: train/ and validation/ written at the same time with the same tags
    for name in ("train", "validation"):
        w = writer(tmp_path / "keras" / name)
        for s in range(10):
            w.add_scalar("epoch_loss", 1.0, s, walltime=5e5 + s)
        w.close()
    frame = read_dir(tmp_path).scalars
    src = frame["source"].astype(str)
    hf = frame[src.str.startswith("runs/")]
    assert hf["segment"].tolist() == [0] * 60 + [1] * 50
    assert hf["step"].tolist() == list(range(60)) + list(range(40, 90))
    keras = frame[src.str.startswith("keras/")]
    assert len(keras) == 20 and (keras["segment"] == 0).all()


# -- bad input ---------------------------------------------------------------------------------
def _simple_file(tmp_path: Path, n: int = 50) -> Path:
    w = writer(tmp_path)
    for step in range(n):
        w.add_scalar("loss", 1.0 / (step + 1), step)
        w.add_scalar("lr", 0.5, step)
    w.close()
    (path,) = event_files(tmp_path)
    return path


def _record_offsets(data: bytes) -> list[tuple[int, int]]:
    out, pos = [], 0
    while pos + 12 <= len(data):
        (n,) = struct.unpack_from("<Q", data, pos)
        out.append((pos, n))
        pos += 16 + n
    return out


def test_truncated_tail_is_a_problem_and_the_rest_is_read(tmp_path: Path) -> None:
    path = _simple_file(tmp_path)
    full = reference(path)
    for chop in (1, 5, 13, 30):
        cut = tmp_path / f"cut{chop}" / path.name
        cut.parent.mkdir()
        cut.write_bytes(path.read_bytes()[:-chop])
        part = tb.read(cut, "cut")
        assert [p.kind for p in part.problems] == ["truncated"]
        assert_same(part.scalars, reference(cut))
        assert len(part.scalars) == len(full) - 1


def test_corrupt_record_data_is_skipped_and_counted(tmp_path: Path) -> None:
    path = _simple_file(tmp_path)
    data = bytearray(path.read_bytes())
    pos, n = _record_offsets(bytes(data))[40]
    data[pos + 12 + n // 2] ^= 0x40
    bad = tmp_path / "bad" / path.name
    bad.parent.mkdir()
    bad.write_bytes(bytes(data))
    part = tb.read(bad, "bad")
    assert [(p.kind, p.count) for p in part.problems] == [("corrupt_record", 1)]
    assert len(part.scalars) == len(reference(path)) - 1
    assert_same(part.scalars, reference(bad))


def test_corrupt_length_resynchronises(tmp_path: Path) -> None:
    path = _simple_file(tmp_path)
    data = bytearray(path.read_bytes())
    offsets = _record_offsets(bytes(data))
    data[offsets[30][0] + 1] ^= 0x01  # the length of record 30 no longer matches its CRC
    data[offsets[60][0] + 9] ^= 0x01  # the length CRC of record 60 is wrong
    bad = tmp_path / "bad" / path.name
    bad.parent.mkdir()
    bad.write_bytes(bytes(data))
    part = tb.read(bad, "bad")
    (problem,) = part.problems
    assert problem.kind == "corrupt_record" and problem.count == 2
    ref = reference(path)
    lost = {offsets[30][0], offsets[60][0]}
    keep = [i for i, (p, _) in enumerate(offsets[1:]) if p not in lost]
    assert_same(part.scalars, ref.iloc[keep].reset_index(drop=True))


@pytest.mark.parametrize(
    ("content", "kind"),
    [
        (b"", "empty"),
        (b"this is not an event file\n" * 100, "not_an_event_file"),
        (bytes(np.random.default_rng(5).integers(0, 256, 1 << 20, dtype=np.uint8)),
         "not_an_event_file"),
        (bytes(64), "not_an_event_file"),
    ],
)
def test_fake_event_files_are_problems(tmp_path: Path, content: bytes, kind: str) -> None:
    path = tmp_path / "events.out.tfevents.x"
    path.write_bytes(content)
    assert tb.sniff(path)
    part = tb.read(path, "events.out.tfevents.x")
    assert [p.kind for p in part.problems] == [kind]
    assert len(part.scalars) == 0
    assert list(part.scalars.columns) == list(SCALAR_COLUMNS)


def test_valid_frames_that_are_not_events(tmp_path: Path) -> None:
    from autopsy.formats.tfrecord import frame

    path = tmp_path / "events.out.tfevents.y"
    path.write_bytes(b"".join(frame(b"\xff\xff\xff" + bytes([i])) for i in range(5)))
    part = tb.read(path, "y")
    assert [p.kind for p in part.problems] == ["not_an_event_file"]


def test_unreadable_is_a_problem(tmp_path: Path) -> None:
    path = tmp_path / "events.out.tfevents.dir"
    path.mkdir()  # opening a directory fails for everyone, root included
    part = tb.read(path, "d")
    assert [p.kind for p in part.problems] == ["unreadable"]
    if os.geteuid() != 0:
        f = _simple_file(tmp_path / "perm")
        f.chmod(0)
        try:
            assert [p.kind for p in tb.read(f, "f").problems] == ["unreadable"]
        finally:
            f.chmod(0o644)


def test_sniff_by_name_and_by_first_bytes(tmp_path: Path) -> None:
    path = _simple_file(tmp_path)
    renamed = tmp_path / "renamed.bin"
    renamed.write_bytes(path.read_bytes())
    text = tmp_path / "notes.txt"
    text.write_text("hello\n" * 20)
    assert tb.sniff(path) and tb.sniff(renamed) and not tb.sniff(text)
    assert not tb.sniff(tmp_path / "missing.bin")


def test_read_group_of_nothing_gives_an_empty_frame() -> None:
    part = tb.read_group([], [])
    assert len(part.scalars) == 0 and part.problems == []
    with pytest.raises(ValueError):
        tb.read_group([Path("a")], [])
