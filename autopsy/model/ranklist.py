"""Rank lists as people write them: ``0-4241,4243-99999``, bounded however many ranks."""

from __future__ import annotations

from collections.abc import Iterable

#: Runs of consecutive ranks written out before the rest is counted: a list of a
#: thousand scattered ranks is not something a reader can use, and one of 100,000 was a
#: megabyte of report.
MAX_RANGES = 12


def compact_ranks(ranks: Iterable[int], max_ranges: int = MAX_RANGES) -> str:
    """``[0, 1, 2, 5, 7, 8]`` as ``"0-2,5,7,8"`` (three or more in a row are a range).

    Past ``max_ranges`` runs of consecutive ranks, ``"... and N more"``. Ranks are sorted
    and de-duplicated first."""
    ordered = sorted(set(ranks))
    runs: list[tuple[int, int]] = []
    for r in ordered:
        if runs and r == runs[-1][1] + 1:
            runs[-1] = (runs[-1][0], r)
        else:
            runs.append((r, r))
    shown = ",".join(str(a) if a == b else f"{a},{b}" if b == a + 1 else f"{a}-{b}"
                     for a, b in runs[:max_ranges])
    rest = sum(b - a + 1 for a, b in runs[max_ranges:])
    return shown + (f" and {rest:,} more" if rest else "")
