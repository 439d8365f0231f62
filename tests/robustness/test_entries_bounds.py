"""50,000 safetensors entries on the same 4 bytes, and single values out of range (issue 19).

The 3 MB header once cost ``ckpt`` 18 s, and ``ckpt --scan-values --format json`` 26 s,
645 MB and a 97 MB report. One rank number of 20 digits in a good interleaved log, or one
step of 2**63 in ``trainer_state.json``, made the whole file unreadable.
"""

from __future__ import annotations

import json
from pathlib import Path

from inputs import overflowing_numbers, overlapping_safetensors
from measure import run_autopsy

#: Generous ceilings: about 3 s and 75 MB here.
MAX_SECONDS = 20.0
MAX_MB = 300.0


def test_fifty_thousand_overlapping_entries_are_bounded(tmp_path: Path) -> None:
    path = overlapping_safetensors(tmp_path / "ckpt" / "model.safetensors")
    for args in (["ckpt", path], ["ckpt", path, "--scan-values", "--format", "json"]):
        got = run_autopsy(*args, timeout=120)
        assert got.rc == 1, got.stderr
        assert got.wall_s < MAX_SECONDS and got.peak_mb < MAX_MB, (args, got.wall_s,
                                                                     got.peak_mb)
        assert len(got.stdout) < 100_000
        assert "49,999 pairs of tensors overlap" in got.stdout


def test_one_value_out_of_range_costs_that_value(tmp_path: Path) -> None:
    folder = overflowing_numbers(tmp_path / "in")
    ranks = run_autopsy("ranks", folder / "job.log", "--format", "json")
    assert ranks.rc == 0, ranks.stderr
    report = json.loads(ranks.stdout)
    assert report["run"]["steps"] == {"first": 1, "last": 29}
    assert sorted(r["rank"] for r in report["ranks"]) == [0, 1, 2, 3]
    hf = run_autopsy("analyze", folder / "hf", "--format", "json")
    assert hf.rc == 0, hf.stderr
    report = json.loads(hf.stdout)
    assert report["run"]["tags"][0]["points"] == 28
    assert any("without an integer step" in p["what"] for p in report["problems"])
