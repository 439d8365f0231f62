"""Values: NaN/Inf in the weights or the optimizer moments (CKPT031).

Streams each tensor's bytes from its file at its offset with
:func:`autopsy.formats.valuescan.scan_values` (numpy, bounded memory); imported only
when asked, so an audit without a scan never loads numpy. The optimizer's moments are
scanned first (a NaN ``exp_avg_sq`` is the classic unresumable checkpoint), then the
weights, within a :class:`ScanBudget` of bytes shared by every checkpoint of one audit:
the tensors past it are counted as not scanned, and a checkpoint with unscanned tensors
cannot be called an exact resume.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from autopsy.ckpt.checks.judge import Judge
from autopsy.ckpt.components import Part, Status
from autopsy.ckpt.files import is_tensor
from autopsy.ckpt.statedicts import walk_tensors
from autopsy.model.finding import Evidence

if TYPE_CHECKING:  # pragma: no cover
    from autopsy.formats.valuescan import ValueStats

_WHY = {
    Part.OPTIMIZER: "a NaN in exp_avg / exp_avg_sq makes every update NaN: every resume "
                    "from this checkpoint diverges at its first step",
    Part.WEIGHTS: "non-finite weights give a NaN loss from the first batch after the resume",
}


#: Bytes ``autopsy ckpt`` scans for NaN/Inf by default (4 GiB): the scan reads about 3 GB/s
#: from a warm page cache and a few hundred MB/s from disk, so this is one to ten seconds;
#: a GPT-2-small checkpoint (0.7 GB of weights, 1.4 GB of Adam moments) is scanned whole,
#: a 7B model's fp32 Adam state (56 GB) is not. ``--scan-budget`` changes it,
#: ``--scan-values`` scans everything, ``--no-scan`` nothing.
DEFAULT_SCAN_BUDGET = 4 << 30


@dataclass
class ScanBudget:
    """The bytes the value scan may still read (None: no limit), shared by the checkpoints
    of one audit, the newest first."""

    left: int | None = None

    def take(self, nbytes: int) -> bool:
        """Whether a tensor of ``nbytes`` fits; if so it is taken from the budget."""
        if self.left is None:
            return True
        if nbytes > self.left:
            self.left = 0  # past the budget: no smaller tensor after it either
            return False
        self.left -= nbytes
        return True

    def prefix(self, sizes: list[int]) -> int:
        """How many of the tensors of ``sizes``, taken in order, fit (taking them): the scan
        stops at the first that does not, so a later empty tensor is not counted as scanned."""
        n = 0
        while n < len(sizes) and self.take(sizes[n]):
            n += 1
        return n


def check(judge: Judge, progress: Callable[[int], None] | None = None,
          budget: ScanBudget | None = None) -> dict[str, int]:
    """Scan optimizer moments and weights; return counts (tensors, checked, bad, skipped).

    ``progress`` is called with each tensor's byte count once it is scanned; ``budget``
    bounds the bytes read (the tensors past it are recorded in ``judge.unscanned``).
    """
    from autopsy.formats.valuescan import scan_values

    parts = judge.parts
    groups: dict[Part, list[tuple[str, object]]] = {
        Part.OPTIMIZER: list(parts.moment_tensors),
        Part.WEIGHTS: [(k, v) for k, v in parts.weight_tensors if is_tensor(v)],
    }
    opt = parts.slot(Part.OPTIMIZER)
    if not groups[Part.OPTIMIZER] and isinstance(opt.value, dict):
        state = walk_tensors(opt.value.get("state"), f"{opt.prefix}state")
        groups[Part.OPTIMIZER] = [(k, v) for k, v in state
                                  if k.rsplit(".", 1)[-1] != "step"]
    counts = {"tensors": 0, "checked": 0, "nonfinite": 0}
    for part, tensors in groups.items():
        tensors = [(k, v) for k, v in tensors if getattr(v, "data_offset", None) is not None
                   or getattr(v, "nbytes", 0)]
        bad: list[tuple[str, ValueStats]] = []
        sizes = {k: int(getattr(v, "nbytes", 0) or 0) for k, v in tensors}
        if budget is not None:
            n_fit = budget.prefix([sizes[k] for k, _ in tensors])
            fits = tensors[:n_fit]
            skipped = [(k, sizes[k]) for k, _ in tensors[n_fit:]]
            if skipped:
                judge.unscanned.append((part.value, len(skipped),
                                        sum(n for _, n in skipped)))
                judge.note(part, f"values of {len(skipped)} tensor(s) "
                                 f"({_size(sum(n for _, n in skipped))}) not scanned: past "
                                 "the scan budget")
                counts["skipped"] = counts.get("skipped", 0) + len(skipped)
            tensors = fits
        for key, stats in scan_values(tensors):
            counts["tensors"] += 1
            if progress is not None:
                progress(sizes.get(key, 0))
            if not stats.checked:
                continue
            counts["checked"] += 1
            if not stats.finite:
                bad.append((key, stats))
        if not bad:
            if tensors:
                judge.note(part, f"values scanned: {len(tensors)} tensor(s) finite")
            continue
        counts["nonfinite"] += len(bad)
        key, stats = bad[0]
        what = (f"{len(bad)} tensor(s) hold NaN/Inf; first {key}: "
                f"{stats.nan:,} NaN, {stats.posinf + stats.neginf:,} Inf")
        judge.mark(part, Status.CORRUPT, what)
        judge.fail(
            "CKPT031", f"{what}: {_WHY[part]}",
            evidence=[_evidence(k, s) for k, s in bad[:8]],
            advice=["resume from an older checkpoint whose values are finite "
                    "(autopsy ckpt OUTPUT_DIR --scan-values names the newest)"])
    return counts


def _evidence(key: str, stats: ValueStats) -> Evidence:
    where = f", first at flat index {stats.first_bad}" if stats.first_bad is not None else ""
    return Evidence(f"{key}: {stats.nan:,} NaN, {stats.posinf:,} +Inf, {stats.neginf:,} -Inf"
                    f"{where}", key=key,
                    numbers={"nan": stats.nan, "posinf": stats.posinf, "neginf": stats.neginf})


def _size(nbytes: int) -> str:
    """``1.4 GB``, ``320 MB``."""
    return f"{nbytes / 1e9:.1f} GB" if nbytes >= 1e9 else f"{nbytes / 1e6:.0f} MB"
