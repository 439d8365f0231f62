"""Collective fingerprints (op, shape, dtype per rank) and the odd rank out, shared by the
rules that read ``collective_mismatch`` events (HANG003 for a Flight Recorder match,
HANG005 for a mismatch torch detected and raised on)."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

#: Fingerprint fields compared across ranks.
FIELDS: tuple[str, ...] = ("OpType", "TensorShape", "TensorDtypes")


@dataclass
class Odd:
    """The ranks whose fingerprint differs from the majority's, and how."""

    culprits: list[int]
    what: str
    prints: dict[int, tuple[str, ...]] = field(default_factory=dict)
    seq: Any = None


def from_flight_recorder(details: Any) -> bool:
    """Whether an event was made from Flight Recorder dumps (the ranks hung), not raised."""
    return isinstance(details, dict) and details.get("from") == "flight_recorder"


def odd_ones(rows: pd.DataFrame, default_what: str) -> Odd:
    """The odd ranks of the fingerprints in ``rows``' details; without fingerprints, the
    ranks that reported the events (``default_what`` says what they reported)."""
    prints: dict[int, tuple[str, ...]] = {}
    seq = None
    for d in rows["details"]:
        for fp in (d or {}).get("fingerprints") or []:
            prints.setdefault(int(fp["rank"]), tuple(str(fp.get(k)) for k in FIELDS))
            seq = fp.get("SequenceNumber", seq)
    reporters = sorted({int(r) for r in rows["rank"].dropna()})
    odd = Odd(reporters, default_what, prints, seq)
    if prints:
        counts = Counter(prints.values())
        (top, n), *rest = counts.most_common()
        if rest and n > rest[0][1]:
            odd.culprits = sorted(r for r, p in prints.items() if p != top)
            first = prints[odd.culprits[0]]
            odd.what = "; ".join(f"{k} {first[i]} instead of {top[i]}"
                                 for i, k in enumerate(FIELDS) if first[i] != top[i])
        else:
            odd.culprits = sorted(prints)
            odd.what = "no majority: " + ", ".join(f"rank {r} {p}"
                                                   for r, p in sorted(prints.items()))
    return odd
