"""Giant TensorBoard records: stepped over unread, named in a problem, the rest read (issue 19).

One event record whose summary tag was 60 MB made ``analyze`` peak at 730 MB and
``timeline`` at 840 MB (200 MB: 2.1 and 2.5 GB). A record longer than
:data:`autopsy.formats.tfrecord.MAX_RECORD` is now never read: what it was is told from
its first bytes; graphs, images and histograms are skipped silently, anything autopsy
could have kept is a ``record_too_large`` problem naming the offset and size.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from inputs import MB, tb_giant_tag
from measure import run_autopsy

from autopsy.formats import tfrecord
from autopsy.formats.event_scalars import read_event_scalars
from autopsy.readers import tensorboard


def test_a_record_past_the_limit_costs_nothing_and_is_named(tmp_path: Path) -> None:
    plain = run_autopsy("analyze", tb_giant_tag(tmp_path / "plain"), "--format", "json")
    giant_run = tb_giant_tag(tmp_path / "giant", tag_mb=64)
    for command in ("analyze", "timeline"):
        got = run_autopsy(command, giant_run, *(["--format", "json"] if command == "analyze"
                                                else []))
        assert got.rc in (0, 1), got.stderr
        # the bound: three times the largest record read, plus the frame
        allowed = plain.peak_bytes + 3 * tfrecord.MAX_RECORD + 16 * MB
        assert got.peak_bytes < allowed, f"{command}: {got.peak_mb:.0f} MB"
        if command == "timeline":
            assert len(got.stdout) < 64 * 1024  # the tag was never decoded into rows
            continue
        report = json.loads(got.stdout)
        assert report["run"]["tags"][0]["points"] == 40
        [problem] = [p for p in report["problems"] if p["kind"] == "record_too_large"]
        assert "tag is 67,108,864 bytes" in problem["what"]
        assert "at byte " in problem["what"]


def test_unused_kinds_are_skipped_silently(tmp_path: Path,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    from torch import nn
    from torch.utils.tensorboard import SummaryWriter

    logdir = tmp_path / "run"
    writer = SummaryWriter(str(logdir))
    writer.add_graph(nn.Sequential(nn.Linear(8, 8), nn.ReLU(), nn.Linear(8, 1)),
                     __import__("torch").zeros(2, 8))
    writer.add_image("sample", np.random.default_rng(0).random((3, 64, 64)), 1)
    writer.add_histogram("weights", np.random.default_rng(0).random(5000), 1)
    for step in range(1, 11):
        writer.add_scalar("loss", 1.0 / step, step)
    writer.add_text("notes", "y" * 3000, 1)
    writer.close()
    [events] = logdir.glob("events.out.tfevents.*")
    monkeypatch.setattr(tfrecord, "MAX_RECORD", 1000)
    data = read_event_scalars(events)
    assert data.framing.oversized_count >= 4  # graph, image, histogram, text
    assert [what for _, _, what in data.oversized] == ["a summary value 'notes/text_summary'"]
    assert len(data) == 10
    problems = tensorboard._problems(events.name, events.stat().st_size, data)
    assert [p.kind for p in problems] == ["record_too_large"]
