"""``autopsy timeline --format csv``: the fast writer gives what the csv module would."""

from __future__ import annotations

import csv
import io
import math
from pathlib import Path

import pandas as pd
import pytest

import autopsy
from autopsy.report import timeline

SAMPLES = Path(__file__).resolve().parent.parent / "sample_runs"


def _reference(frame) -> str:  # type: ignore[no-untyped-def]
    """The same table through the standard library's csv writer (QUOTE_MINIMAL)."""
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(timeline.TIMELINE_COLUMNS)
    for row in frame.loc[:, list(timeline.TIMELINE_COLUMNS)].itertuples(index=False):
        step, tag, raw, value, wall, rank, seg, source = row
        w.writerow([int(step), str(tag), str(raw), repr(float(value)),
                    "" if math.isnan(wall) else repr(float(wall)),
                    "" if pd.isna(rank) else int(rank), int(seg), str(source)])
    return buf.getvalue()


@pytest.mark.parametrize("name", ["ddp_rank_exception", "diverging_finite",
                                  "fp16_overflow_collapse"])
def test_csv_matches_the_csv_module_across_chunks(name: str,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    frame = autopsy.load_run(SAMPLES / name).scalars
    assert len(frame) > 7
    monkeypatch.setattr(timeline, "CSV_CHUNK_ROWS", 7)  # many chunks, a short last one
    out = io.StringIO()
    timeline.write_csv(frame, out)
    assert out.getvalue() == _reference(frame)


def test_csv_quotes_tags_with_commas_and_quotes() -> None:
    frame = autopsy.load_run(SAMPLES / "diverging_finite").scalars.head(4).copy()
    frame["raw_tag"] = frame["raw_tag"].astype(str)
    frame.loc[frame.index[0], "raw_tag"] = 'loss, "total"'
    out = io.StringIO()
    timeline.write_csv(frame, out)
    assert out.getvalue() == _reference(frame)
    rows = list(csv.reader(io.StringIO(out.getvalue())))
    assert rows[1][2] == 'loss, "total"'
