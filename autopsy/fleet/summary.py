"""What a fleet's rows say together: families, signature clusters, time lost, hosts.

A cluster is every failed run with one signature (family + template of the deciding
line): its count, first and last seen (the runs' end times), the GPU-hours lost (between
each run's last checkpoint and its failure, times its world size: see
:func:`autopsy.fleet.task.row_of`) and an example run. Mean time to failure is the wall
time of failed runs per failure, by the runs' length.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from autopsy.fleet.hosts import HostStat, lemon_hosts

#: Run lengths (wall hours) that split the mean-time-to-failure table.
LENGTH_BUCKETS = (1.0, 8.0, 24.0, 168.0)


@dataclass
class Cluster:
    """Failed runs sharing one signature."""

    signature: str
    family: str
    hardware: bool
    count: int = 0
    first_seen: float | None = None
    last_seen: float | None = None
    gpu_hours_lost: float = 0.0
    example: str = ""
    runs: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        """As plain data (the first 20 run paths)."""
        out = dict(self.__dict__)
        out["runs"] = self.runs[:20]
        return out


@dataclass
class FleetSummary:
    """The fleet's tables (see the module docstring)."""

    runs: int
    families: dict[str, int]
    errors: int
    clusters: list[Cluster]
    hosts: list[HostStat]
    mttf: list[dict[str, Any]]

    def to_dict(self) -> dict[str, Any]:
        """As plain data."""
        return {"runs": self.runs, "families": self.families, "errors": self.errors,
                "clusters": [c.to_dict() for c in self.clusters],
                "hosts": [h.to_dict() for h in self.hosts], "mttf": self.mttf}


def _bucket(hours: float) -> str:
    low = 0.0
    for high in LENGTH_BUCKETS:
        if hours < high:
            return f"{low:g}-{high:g} h"
        low = high
    return f">= {low:g} h"


def summarize(rows: list[dict[str, Any]]) -> FleetSummary:
    """Summarise a fleet's rows."""
    families = Counter(r["family"] or "error" for r in rows)
    clusters: dict[str, Cluster] = {}
    for r in rows:
        if not r.get("signature") or r["family"] in ("healthy", "unknown", None):
            continue
        c = clusters.get(r["signature"])
        if c is None:
            c = clusters[r["signature"]] = Cluster(r["signature"], r["family"],
                                                   bool(r.get("hardware")),
                                                   example=r["path"])
        c.count += 1
        c.runs.append(r["path"])
        c.gpu_hours_lost += r.get("gpu_hours_lost") or 0.0
        end = r.get("wall_end")
        if end is not None:
            c.first_seen = end if c.first_seen is None else min(c.first_seen, end)
            c.last_seen = end if c.last_seen is None else max(c.last_seen, end)
    ordered = sorted(clusters.values(), key=lambda c: (-c.gpu_hours_lost, -c.count,
                                                       c.signature))
    buckets: dict[str, list[float]] = {}
    for r in rows:
        hours = r.get("wall_hours")
        if hours is None:
            continue
        b = buckets.setdefault(_bucket(hours), [0.0, 0, 0])
        b[0] += hours
        b[1] += 1
        b[2] += r["family"] not in ("healthy", "unknown", None)
    mttf = [{"length": k, "runs": int(v[1]), "failures": int(v[2]),
             "mean_hours_to_failure": (v[0] / v[2]) if v[2] else None}
            for k, v in sorted(buckets.items(), key=lambda kv: _order(kv[0]))]
    return FleetSummary(len(rows), dict(families.most_common()),
                        sum(1 for r in rows if r.get("error")), ordered, lemon_hosts(rows),
                        mttf)


def _order(label: str) -> float:
    return float(label.split("-")[0].lstrip(">= ").split()[0])


def render_text(s: FleetSummary, out: Any, *, top: int = 10) -> None:
    """The summary as text."""
    w = out.write
    w(f"{s.runs:,} runs: " + ", ".join(f"{k} {v:,}" for k, v in s.families.items()) + "\n")
    if s.errors:
        w(f"{s.errors:,} runs autopsy could not diagnose (their rows say why)\n")
    if s.clusters:
        w("\nFailure signatures (most GPU time lost first)\n")
        for c in s.clusters[:top]:
            kind = "hardware" if c.hardware else "software"
            w(f"  {c.count:>5,} runs  {c.gpu_hours_lost:>9.1f} GPU-h  [{kind}] {c.signature}\n"
              f"               e.g. {c.example}\n")
        if len(s.clusters) > top:
            w(f"  ... and {len(s.clusters) - top:,} more signatures (-o writes every row)\n")
    lemons = [h for h in s.hosts if h.lemon]
    if lemons:
        w("\nHosts that fail more than chance (one-sided binomial test, Bonferroni)\n")
        for h in lemons[:top]:
            w(f"  {h.host}: {h.failures}/{h.runs} runs failed ({h.kind}); "
              f"{h.share_of_failures:.0%} of those failures on {h.share_of_runs:.0%} of the "
              f"runs, p = {h.p_value:.2g}\n")
    elif s.hosts:
        w("\nNo host fails more than chance explains.\n")
    if s.mttf:
        w("\nMean time to failure by run length\n")
        for m in s.mttf:
            mean = m["mean_hours_to_failure"]
            w(f"  {m['length']:>10}: {m['failures']:,} failures in {m['runs']:,} runs"
              + (f", {mean:.2f} h per failure" if mean is not None else "") + "\n")
