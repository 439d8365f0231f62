"""One interleaved log of 100,000 ranks plus a traceback on one of them (issue 19).

3.2 MB of ``[rankN]: step 1 loss ...`` lines and one rank's CUDA error once took
``autopsy ranks`` 180 s and 1.2 GB, and its report listed all 99,999 other ranks one by
one (1.2 MB of text). It must take seconds, and rank lists are written as ranges.
"""

from __future__ import annotations

import json
from pathlib import Path

from inputs import many_ranks_log
from measure import run_autopsy

from autopsy.model.ranklist import compact_ranks

RANKS = 100_000
CULPRIT = 4242
#: Generous ceilings (it takes about 5 s and 280 MB here; the JSON keeps a row per rank).
MAX_SECONDS = 60.0
MAX_MB = 800.0


def test_compact_ranks() -> None:
    assert compact_ranks([5, 0, 1, 2, 7, 8, 2]) == "0-2,5,7,8"
    assert compact_ranks([]) == ""
    assert compact_ranks(range(0, 40, 2), max_ranges=3) == "0,2,4 and 17 more"


def test_a_hundred_thousand_ranks_take_seconds(tmp_path: Path) -> None:
    log = many_ranks_log(tmp_path / "job.log", RANKS, CULPRIT)
    text = run_autopsy("ranks", log, timeout=300)
    assert text.rc == 1, text.stderr
    assert text.wall_s < MAX_SECONDS and text.peak_mb < MAX_MB, (text.wall_s, text.peak_mb)
    assert len(text.stdout) < 64 * 1024
    assert f"ranks 0-{CULPRIT - 1},{CULPRIT + 1}-{RANKS - 1} then stopped" in " ".join(
        text.stdout.split())
    got = run_autopsy("ranks", log, "--format", "json", timeout=300)
    assert got.wall_s < MAX_SECONDS and got.peak_mb < MAX_MB, (got.wall_s, got.peak_mb)
    report = json.loads(got.stdout)
    verdict = report["verdict"]
    assert (verdict["family"], verdict["code"], verdict["ranks"]) == ("crash", "CRASH001",
                                                                       [CULPRIT])
    assert len(report["ranks"]) == RANKS
