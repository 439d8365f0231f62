"""Rank logs: robust streaming (CR bars, ANSI, CRLF, bad bytes, huge lines, gz, binary)."""

from __future__ import annotations

import gzip
from pathlib import Path

from autopsy.readers import ranklogs
from autopsy.readers.ranklogs.lines import MAX_LINE_BYTES, clean, iter_blocks, split_cr
from autopsy.readers.ranklogs.scan import scan_file

OOM = ("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 22.00 MiB. GPU 0 has a "
       "total capacity of 23.65 GiB of which 11.06 MiB is free.")


def _read(path: Path):
    return ranklogs.read(path, path.name)


def test_cr_progress_bar_glued_to_error_is_found(tmp_path: Path) -> None:
    log = tmp_path / "rank0.log"
    log.write_bytes(b"ok\n 45%|####5     | 45/100 [00:03<00:04, 12.1it/s]\r"
                    + OOM.encode() + b"\n")
    part = _read(log)
    oom = part.events[part.events["kind"] == "oom"]
    assert len(oom) == 1
    assert oom["line"].iloc[0] == 2
    assert oom["details"].iloc[0]["tried"] == 22 * 2**20


def test_split_cr_keeps_meaningful_segment() -> None:
    assert split_cr(b"\r 10%|#  | 10/100 [00:01<00:09]\r    \r{'loss': 1.0}") == b"{'loss': 1.0}"
    assert split_cr(b"RuntimeError: boom\r 10%|#  | 10/100 [00:01<00:09]") == b"RuntimeError: boom"


def test_ansi_crlf_and_bad_bytes_are_cleaned() -> None:
    assert clean(b"\x1b[31mRuntimeError: x\x1b[0m\r\n") == "RuntimeError: x"
    assert clean(b"caf\xe9 \xff ok") == "caf\ufffd \ufffd ok"


def test_crlf_log_gives_events_and_line_numbers(tmp_path: Path) -> None:
    log = tmp_path / "stdout.log"
    log.write_bytes(b"a\r\nb\r\n\x1b[1;31mKilled\x1b[0m\r\n")
    part = _read(log)
    assert part.events["kind"].tolist() == ["host_kill"]
    assert part.events["line"].tolist() == [3]


def test_non_utf8_bytes_do_not_stop_reading(tmp_path: Path) -> None:
    log = tmp_path / "train.log"
    log.write_bytes(b"\xff\xfe\xfa garbage \x80\n" + OOM.encode() + b"\n")
    part = _read(log)
    assert (part.events["kind"] == "oom").sum() == 1


def test_huge_single_line_is_capped(tmp_path: Path) -> None:
    log = tmp_path / "rank1.log"
    with open(log, "wb") as fh:
        chunk = b"x" * (1 << 20)
        for _ in range(100):
            fh.write(chunk)
        fh.write(b" " + OOM.encode() + b"\nstep 3 loss 1.5\n")
    res = scan_file(log, "rank1.log")
    kinds = [e[3] for e in res.events]
    assert kinds == ["oom"]
    assert res.events[0][6] == 1  # 1-based line of the huge line
    assert [p.kind for p in res.problems] == ["long_line"]
    rows = res.scalars.rows()
    assert rows == [(3, "loss", 1.5, rows[0][3], 1, 0)]


def test_blocks_never_exceed_cap_for_a_line(tmp_path: Path) -> None:
    path = tmp_path / "x.log"
    path.write_bytes(b"y" * (5 * MAX_LINE_BYTES) + b"\nshort\n")
    with open(path, "rb") as fh:
        blocks = list(iter_blocks(fh, block_bytes=MAX_LINE_BYTES // 2))
    assert all(len(b.data) <= 2 * MAX_LINE_BYTES for b in blocks)
    assert blocks[-1].data.endswith(b"short\n")
    assert sum(b.truncated_lines for b in blocks) == 1


def test_binary_garbage_and_empty_files(tmp_path: Path) -> None:
    garbage = tmp_path / "rank0.log"
    garbage.write_bytes(bytes(range(256)) * 40)
    assert not ranklogs.sniff(garbage)
    part = _read(garbage)
    assert part.events.empty and [p.kind for p in part.problems] == ["not_text"]
    empty = tmp_path / "rank1.log"
    empty.write_bytes(b"")
    assert ranklogs.sniff(empty)
    part = _read(empty)
    assert part.events.empty and part.scalars.empty and part.problems == []


def test_gz_log_is_read(tmp_path: Path) -> None:
    log = tmp_path / "rank2.log.gz"
    with gzip.open(log, "wb") as fh:
        fh.write(b"step 1 loss 2.0\n" + OOM.encode() + b"\n")
    assert ranklogs.sniff(log)
    part = _read(log)
    assert part.events["kind"].tolist() == ["oom"]
    assert part.events["rank"].tolist() == [2]
    assert part.events["step"].tolist() == [1]
    torn = tmp_path / "rank3.log.gz"
    torn.write_bytes(log.read_bytes()[:-12])
    part = _read(torn)
    assert [p.kind for p in part.problems] == ["truncated"]


def test_a_torn_gz_log_keeps_the_lines_before_the_tear(tmp_path: Path) -> None:
    whole = gzip.compress(b"".join(b"step %d loss 1.5\n" % s for s in range(1, 20_001)))
    torn = tmp_path / "rank0.log.gz"
    torn.write_bytes(whole[: len(whole) // 2])
    part = _read(torn)
    assert [p.kind for p in part.problems] == ["truncated"]
    steps = part.scalars["step"]
    assert len(steps) > 5_000 and steps.min() == 1  # ("the lines before it" are used)
    assert steps.tolist() == list(range(1, len(steps) + 1))


def test_sniff_by_name(tmp_path: Path) -> None:
    for name in ("rank3.log", "job-rank-3.out", "slurm-1234.out", "stderr.log", "node01.err",
                 "train_log.txt", "stdout"):
        p = tmp_path / name
        p.write_text("hello\n")
        assert ranklogs.sniff(p), name
    for name in ("notes.txt", "trainer_state.json", "config.json", "model.bin", "a.py"):
        p = tmp_path / name
        p.write_text("{}\n")
        assert not ranklogs.sniff(p), name
    err = tmp_path / "error.json"
    err.write_text('{"message": {"message": "RuntimeError: x", "extraInfo": {}}}')
    assert ranklogs.sniff(err)


def test_random_bytes_with_markers_never_raise(tmp_path: Path) -> None:
    import random

    rng = random.Random(7)
    pieces = [b"Traceback (most recent call last):", b"ChildFailedError:", b"[rank1]: ",
              b"{'loss': ", b"\r", b"\n", b"\x1b[31m", b"out of memory", b"Tried to allocate ",
              b"iteration 3/ 9 |", b"step=", b"Watchdog caught collective operation timeout",
              b"WorkNCCL(SeqNum=", b"[0]:", b"  File \"", b"caused the desync are:", b"\xff"]
    for i in range(30):
        data = b"".join(rng.choice(pieces) if rng.random() < 0.6 else
                        bytes(rng.randrange(32, 256) for _ in range(rng.randrange(1, 40)))
                        for _ in range(rng.randrange(1, 400)))
        log = tmp_path / f"rank{i}.log"
        log.write_bytes(data)
        part = ranklogs.read(log, log.name)  # must not raise
        assert part.events is not None and part.scalars is not None


def test_terminal_wrapped_oom_message_is_joined(tmp_path: Path) -> None:
    msg = ("RuntimeError: CUDA out of memory. Tried to allocate 2.26 GiB (GPU 0; 6.00 GiB total "
           "capacity; 781.59 MiB already allocated; 3.03 GiB free; 1.24 GiB reserved in total "
           "by PyTorch)")
    wrapped = "\n".join(msg[i:i + 80] for i in range(0, len(msg), 80))
    log = tmp_path / "rank0.log"
    log.write_text("step 1 loss 2.0\n" + wrapped + "\nnext line\n")
    part = _read(log)
    oom = part.events[part.events["kind"] == "oom"]
    assert len(oom) == 1 and oom["line"].iloc[0] == 2
    assert oom["details"].iloc[0]["reserved"] == round(1.24 * 2**30)


# A traceback pasted with its editor's line numbers (the numbers the paste starts from are
# the log's own line numbers: 1173, 1174, ...), in the message format PyTorch 2.x prints.
NUMBERED_OOM = (
    "1173 Traceback (most recent call last):\n"
    '1174   File "/home/user/repo/train.py", line 834, in <module>\n'
    "1175     loss.backward()\n"
    '1176   File "/usr/lib/python3.10/site-packages/torch/_tensor.py", line 522, in backward\n'
    "1177     torch.autograd.backward(\n"
    f"1178 {OOM}\n"
)


def test_a_paste_with_line_numbers_is_read_without_them(tmp_path: Path) -> None:
    log = tmp_path / "train.log"
    log.write_text(NUMBERED_OOM)
    part = _read(log)
    oom = part.events[part.events["kind"] == "oom"]
    assert len(oom) == 1
    assert oom["details"].iloc[0]["tried"] == 22 * 2**20
    assert oom["line"].iloc[0] == 6  # the file's own line, not the pasted number
    assert not oom["message"].iloc[0].startswith("1178")
    tb = part.events[part.events["kind"] == "traceback"]
    assert len(tb) == 1
    details = tb["details"].iloc[0]
    assert details["exception"] == "torch.OutOfMemoryError"
    assert [f["line"] for f in details["frames"]] == [834, 522]


def test_cat_n_numbered_metric_lines_keep_their_values(tmp_path: Path) -> None:
    # ``cat -n``: the number right-aligned in six columns, then a tab; the PyTorch quickstart's
    # ``loss: 2.303633  [   64/60000]`` is read only from the start of its line
    losses = [2.3 - i / 10 for i in range(8)]
    rows = [f"loss: {loss:>7f}  [{64 + 6400 * i:>5d}/60000]" for i, loss in enumerate(losses)]
    log = tmp_path / "train.log"
    log.write_text("".join(f"{n:6d}\t{row}\n" for n, row in enumerate(rows, 1)))
    part = _read(log)
    loss = part.scalars[part.scalars["tag"] == "loss"]
    assert loss["value"].round(6).tolist() == [round(v, 6) for v in losses]
    assert loss["step"].tolist() == [64 + 6400 * i for i in range(8)]


def test_numbered_lines_across_blocks(tmp_path: Path, monkeypatch) -> None:
    from autopsy.readers.ranklogs import lines as lines_mod

    monkeypatch.setattr(lines_mod, "BLOCK_BYTES", 4096)
    # the char-RNN tutorial's ``5000 5% (0m 12s) 2.4177 Coelho / Portuguese ✓``, read only
    # from the line's start
    rows = [f"{i} {i // 20}% (0m {i % 60}s) {1.0 / i:.4f} Coelho / Portuguese ✓"
            for i in range(1, 2001)]
    log = tmp_path / "train.log"
    log.write_text("".join(f"{n} {row}\n" for n, row in enumerate(rows, 1)))
    assert log.stat().st_size > 10 * 4096
    part = _read(log)
    loss = part.scalars[part.scalars["tag"] == "loss"].sort_values("step")
    assert loss["step"].tolist() == list(range(1, 2001))
    assert loss["value"].iloc[-1] == round(1.0 / 2000, 4)


def test_what_is_not_a_numbered_paste() -> None:
    from autopsy.readers.ranklogs.lines import numbered_lines

    assert numbered_lines(NUMBERED_OOM.encode())
    assert not numbered_lines(b"1 0.52\n2 0.50\n3 0.47\n4 0.45\n")  # a bare step/value table
    assert not numbered_lines(b"1 step a\n2 step b\n4 step c\n")  # not consecutive
    assert not numbered_lines(b"1 step a\n2 step b\n")  # too few lines
    assert not numbered_lines(b"Epoch 1 loss 0.5\nEpoch 2 loss 0.4\nEpoch 3 loss 0.3\n")
