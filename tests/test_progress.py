"""Progress of long reads: readers report bytes, the stderr bar draws only after a second."""

from __future__ import annotations

import io
from pathlib import Path

from autopsy.readers.progress import listening, report
from autopsy.readers.ranklogs.reader import read_group
from autopsy.report.progress import DELAY_S, StderrBar


def test_nobody_listening_is_fine() -> None:
    report("reading", 1, 2)  # no listener: nothing happens, nothing raises


def test_rank_logs_report_their_bytes_in_order(tmp_path: Path) -> None:
    paths = []
    for rank in range(3):
        path = tmp_path / f"rank{rank}.log"
        path.write_text("".join(f"step {s} loss 1.0\n" for s in range(1, 50 * (rank + 1))),
                        encoding="utf-8")
        paths.append(path)
    seen: list[tuple[str, int, int]] = []
    with listening(lambda what, done, total: seen.append((what, done, total))):
        read_group(paths, [p.name for p in paths])
    total = sum(p.stat().st_size for p in paths)
    assert [s[2] for s in seen] == [total] * 3
    assert [s[1] for s in seen] == sorted(s[1] for s in seen) and seen[-1][1] == total
    report("after", 1, 1)  # the listener is gone after the block
    assert len(seen) == 3


def test_event_files_report_too(tmp_path: Path) -> None:
    from torch.utils.tensorboard import SummaryWriter

    from autopsy.readers.tensorboard import read_group as read_tb

    writer = SummaryWriter(log_dir=str(tmp_path / "a"))
    writer.add_scalar("loss", 1.0, 1)
    writer.add_scalar("loss", 0.5, 2)
    writer.close()
    files = sorted(tmp_path.rglob("*tfevents*"))
    seen: list[int] = []
    with listening(lambda what, done, total: seen.append(done)):
        read_tb(files, [f.name for f in files])
    assert seen == [files[0].stat().st_size]


class _Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_the_bar_waits_a_second_and_stays_off_pipes() -> None:
    clock = _Clock()
    out = io.StringIO()
    bar = StderrBar(out, force_terminal=True, clock=clock)
    bar("reading rank logs", 10, 100)
    assert out.getvalue() == ""  # a short read draws nothing
    clock.now += DELAY_S + 0.1
    bar("reading rank logs", 50, 100)
    bar.close()
    assert "reading rank logs" in out.getvalue()
    piped = io.StringIO()  # not a terminal
    quiet = StderrBar(piped, clock=clock)
    clock.now += 10
    quiet("reading rank logs", 50, 100)
    quiet.close()
    assert piped.getvalue() == "" and not quiet.enabled


def test_one_large_log_reports_block_by_block(tmp_path: Path, monkeypatch) -> None:
    from autopsy.readers.ranklogs import scan

    monkeypatch.setattr(scan, "PROGRESS_BYTES", 1)
    path = tmp_path / "rank0.log"
    path.write_text("".join(f"step {s} loss 1.0 lr 0.1 and some padding to fill blocks\n"
                            for s in range(1, 100_001)), encoding="utf-8")
    seen: list[tuple[str, int, int]] = []
    with listening(lambda what, done, total: seen.append((what, done, total))):
        read_group([path], [path.name])
    own = [s for s in seen if s[0] == "reading rank0.log"]
    size = path.stat().st_size
    assert len(own) >= 2 and own[-1][1:] == (size, size)
    assert [s[1] for s in own] == sorted(s[1] for s in own)


def test_progress_never_goes_back_past_a_cut_long_line(tmp_path: Path, monkeypatch) -> None:
    from autopsy.readers.ranklogs import lines, scan

    monkeypatch.setattr(scan, "PROGRESS_BYTES", 1)
    monkeypatch.setattr(lines, "BLOCK_BYTES", 1 << 16)
    monkeypatch.setenv("AUTOPSY_RANKLOGS_SEARCH", "python")
    path = tmp_path / "rank0.log"
    rows = "".join(f"step {s} loss 1.0\n" for s in range(1, 20_001))
    path.write_text(rows + "y" * (300 << 10) + "\n" + rows, encoding="utf-8")
    seen: list[int] = []
    with listening(lambda what, done, total: seen.append(done) if what != "reading rank logs"
                   else None):
        read_group([path], [path.name])
    assert len(seen) >= 4 and seen == sorted(seen) and seen[-1] == path.stat().st_size
