"""TFRecord framing, CRC32C and the layout templates, on hand-made frames."""

from __future__ import annotations

import struct
from pathlib import Path

import numpy as np

from autopsy.formats.crc32c import crc32c, crc32c_long, crc32c_rows, masked_crc32c
from autopsy.formats.event_scalars import read_event_scalars
from autopsy.formats.tfrecord import TFRecordFile, frame, looks_like_event_file


def test_crc32c_known_values_and_tensorboard_agree() -> None:
    from tensorboard.compat.tensorflow_stub.pywrap_tensorflow import masked_crc32c as tb_masked

    assert crc32c(b"123456789") == 0xE3069283
    assert crc32c(b"") == 0
    for data in (b"a", b"abc", bytes(range(256)) * 3):
        assert masked_crc32c(data) == tb_masked(data)


def test_vectorised_crcs_equal_the_scalar_one() -> None:
    rng = np.random.default_rng(0)
    rows = rng.integers(0, 256, (300, 57), dtype=np.uint8)
    rows[:, 5:20] = 7  # constant columns cost nothing but must still count
    assert crc32c_rows(rows).tolist() == [crc32c(r.tobytes()) for r in rows]
    buf = rng.integers(0, 256, 300_000, dtype=np.uint8)
    starts = np.array([0, 1, 17, 1000, 40_000, 5])
    lengths = np.array([0, 3, 4, 255, 257_000, 99_999])
    expect = [crc32c(buf[s : s + n].tobytes()) for s, n in zip(starts, lengths, strict=True)]
    assert crc32c_long(buf, starts, lengths).tolist() == expect


def _event(step_bytes: bytes, tag: bytes = b"loss", wall: float = 1.5) -> bytes:
    value = b"\x0a" + bytes([len(tag)]) + tag + b"\x15" + struct.pack("<f", 2.5)
    summary = b"\x0a" + bytes([len(value)]) + value
    return (b"\x09" + struct.pack("<d", wall) + b"\x10" + step_bytes
            + b"\x2a" + bytes([len(summary)]) + summary)


HEADER_EVENT = b"\x09" + struct.pack("<d", 1.0) + b"\x1a\x0dbrain.Event:2"


def test_long_records_and_records_without_wall_time_are_framed(tmp_path: Path) -> None:
    histo = b"\x0a\x01h" + b"\x2a" + _varint(1 << 24) + bytes(1 << 24)  # a 16 MiB histo value
    summary = b"\x0a" + _varint(len(histo)) + histo
    big = b"\x09" + struct.pack("<d", 2.0) + b"\x2a" + _varint(len(summary)) + summary
    no_wall = b"\x10\x07\x2a\x0a\x0a\x08\x0a\x01n\x15" + struct.pack("<f", 4.0)
    records = [HEADER_EVENT, _event(b"\x01"), big, _event(b"\x02"), no_wall, _event(b"\x03")]
    path = tmp_path / "events.out.tfevents.t"
    path.write_bytes(b"".join(frame(r) for r in records))
    got = read_event_scalars(path)
    assert got.framing.records == 6 and got.bad_events == 0
    assert got.step.tolist() == [1, 2, 7, 3]
    assert [got.tags[c] for c in got.tag_code] == ["loss", "loss", "n", "loss"]
    assert np.isnan(got.wall_time[2]) and got.skipped_values == 1
    assert looks_like_event_file(path.read_bytes()[:64])


def _varint(n: int) -> bytes:
    out = bytearray()
    while n >= 0x80:
        out.append(n & 0x7F | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def test_template_rejects_a_step_varint_that_ends_early(tmp_path: Path) -> None:
    # Same length and same bytes outside the step span as a good record, but the
    # step varint ends after one byte: the record is not an Event.
    good = [_event(b"\x81\x01", wall=float(i)) for i in range(5)]
    odd = _event(b"\x01\x01")
    path = tmp_path / "events.out.tfevents.t"
    path.write_bytes(b"".join(frame(r) for r in [HEADER_EVENT, *good, odd, *good]))
    got = read_event_scalars(path)
    assert got.step.tolist() == [129] * 10
    assert got.bad_events == 1


def test_windows_cover_every_record_once(tmp_path: Path) -> None:
    records = [HEADER_EVENT] + [_event(_varint(i), wall=float(i)) for i in range(1, 500)]
    path = tmp_path / "events.out.tfevents.w"
    path.write_bytes(b"".join(frame(r) for r in records))
    for window in (1, 7, 100, 1 << 20):
        with TFRecordFile(path, window=window) as tf:
            seen = []
            for win in tf.windows():
                order = np.concatenate([g.index for g in win.groups])
                starts = np.concatenate([g.starts for g in win.groups])
                seen.extend(starts[np.argsort(order)].tolist())
        assert len(seen) == 500 and seen == sorted(set(seen))


def test_output_arrays_grow_past_the_first_reservation(tmp_path: Path, monkeypatch) -> None:
    from autopsy.formats import event_scalars

    records = [HEADER_EVENT] + [_event(_varint(i), wall=float(i)) for i in range(1, 300)]
    path = tmp_path / "events.out.tfevents.g"
    path.write_bytes(b"".join(frame(r) for r in records))
    monkeypatch.setattr(event_scalars, "_MAX_RESERVE", 3)
    got = read_event_scalars(path, window=200)
    assert got.step.tolist() == list(range(1, 300))
    assert got.wall_time.tolist() == [float(i) for i in range(1, 300)]
