"""Many small event files: analysing a run costs a small multiple of reading it (issue 19).

2,000 TensorBoard event files of five steps each, written one after the other by real
SummaryWriters, make 1,999 relaunch boundaries. The resume rules asked for the loss on
both sides of each, and every question was a pass over the whole frame: ``analyze``
took 5.4 times as long as ``timeline`` reading the same files (5.9 s against 1.1 s).
The rows of a tag are now split by segment and by file once.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from inputs import many_event_files
from measure import run_autopsy

from autopsy.api import load_run
from autopsy.model.run import Run

#: Ceiling of analyze's time over timeline's on the same files (2.2 after the fix, 5.4
#: before it); both include the interpreter's start.
MAX_RATIO = 4.0


def test_analysis_costs_a_small_multiple_of_reading(tmp_path: Path) -> None:
    run = many_event_files(tmp_path / "run", 2000, restart=False)
    read = run_autopsy("timeline", run, "--format", "csv")
    assert read.rc == 0, read.stderr
    analysed = run_autopsy("analyze", run)
    assert analysed.rc == 0, analysed.stderr
    assert analysed.wall_s < MAX_RATIO * read.wall_s, (
        f"analyze {analysed.wall_s:.1f} s, timeline {read.wall_s:.1f} s")


@pytest.mark.parametrize("restart", [False, True])
def test_one_pass_over_the_frame_per_tag(tmp_path: Path, restart: bool,
                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """Series of every segment or every file: the tag's rows are gathered once."""
    run_dir = many_event_files(tmp_path / "run", 200, restart=restart)
    run = load_run(run_dir)
    passes = []
    original = Run._rows

    def counting(self: Run, tag: str, rank: int | None) -> dict:
        key = ("rows", tag, rank)
        if key not in self._series_memo:
            passes.append(tag)
        return original(self, tag, rank)

    monkeypatch.setattr(Run, "_rows", counting)
    segments = sorted(int(s["segment"]) for s in run.segments())
    sources = sorted({s.path for s in run.sources})
    assert len(segments) == (200 if restart else 1) and len(sources) == 200
    total = sum(len(run.series("loss", segment=seg)) for seg in segments)
    total += sum(len(run.series("loss", segment=segments[0], source=src)) for src in sources)
    # every point once by segment; by file within the first segment: all, or its one file
    assert total == (1000 + 5 if restart else 2000)
    assert passes == ["loss"]
