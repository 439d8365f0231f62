"""Values (``--scan-values``): NaN/Inf in the weights or the optimizer moments (CKPT031).

Streams each tensor's bytes from its file at its offset with
:func:`autopsy.formats.valuescan.scan_values` (numpy, bounded memory); imported only
when asked, so the plain audit never loads numpy.
"""

from __future__ import annotations

from collections.abc import Callable
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


def check(judge: Judge, progress: Callable[[int], None] | None = None) -> dict[str, int]:
    """Scan weights and optimizer moments; return counts (tensors, checked, bad).

    ``progress`` is called with each tensor's byte count once it is scanned.
    """
    from autopsy.formats.valuescan import scan_values

    parts = judge.parts
    groups: dict[Part, list[tuple[str, object]]] = {
        Part.WEIGHTS: [(k, v) for k, v in parts.weight_tensors if is_tensor(v)],
        Part.OPTIMIZER: list(parts.moment_tensors),
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
                judge.note(part, f"--scan-values: {len(tensors)} tensor(s) finite")
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
