"""Lemon hosts: hosts whose runs fail more often than the fleet's rate would explain.

For each host, the runs that ran on it and how many of them failed are compared with the
fleet's failure rate ``p`` by a one-sided binomial test: the chance of at least that many
failures in that many runs if the host were like the others. A host is named when the
chance is below :data:`ALPHA` divided by the number of hosts tested (Bonferroni: with a
thousand hosts, one looks unlucky by chance alone). Hardware-looking failures (Xid, ECC,
NCCL network errors, illegal memory accesses) and software ones are tested separately:
a bad GPU or NIC shows in the first, a bad image in the second.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

#: Family-wise error rate of naming a host that is in fact like the others.
ALPHA = 0.01
#: Fewest runs on a host before it is tested (two failures in two runs proves nothing).
MIN_RUNS = 5


def binomial_sf(k: int, n: int, p: float) -> float:
    """P(X >= k) for X ~ Binomial(n, p), summed in log space (exact, any n)."""
    if k <= 0:
        return 1.0
    if p <= 0.0:
        return 0.0
    if p >= 1.0:
        return 1.0
    log_p, log_q = math.log(p), math.log1p(-p)
    terms = [math.lgamma(n + 1) - math.lgamma(i + 1) - math.lgamma(n - i + 1)
             + i * log_p + (n - i) * log_q for i in range(k, n + 1)]
    top = max(terms)
    return min(1.0, math.exp(top) * sum(math.exp(t - top) for t in terms))


@dataclass
class HostStat:
    """One host's runs and failures, against the fleet."""

    host: str
    kind: str
    runs: int
    failures: int
    share_of_runs: float
    share_of_failures: float
    p_value: float
    lemon: bool

    def to_dict(self) -> dict[str, Any]:
        """As plain data."""
        return dict(self.__dict__)


def lemon_hosts(rows: Iterable[dict[str, Any]], *, alpha: float = ALPHA,
                min_runs: int = MIN_RUNS) -> list[HostStat]:
    """Per host and kind (``hardware``, ``software``): runs, failures, the test's p-value
    and whether the host is named; most suspicious first."""
    rows = [r for r in rows if r.get("hosts") and r.get("family") is not None]
    total = len(rows)
    out: list[HostStat] = []
    if not total:
        return out
    for kind in ("hardware", "software"):
        def failed(r: dict[str, Any], kind: str = kind) -> bool:
            if r["family"] in ("healthy", "unknown"):
                return False
            return bool(r.get("hardware")) == (kind == "hardware")

        fails = sum(1 for r in rows if failed(r))
        if not fails:
            continue
        rate = fails / total
        per: dict[str, list[int]] = {}
        for r in rows:
            for host in set(r["hosts"]):
                stat = per.setdefault(host, [0, 0])
                stat[0] += 1
                stat[1] += failed(r)
        tested = [h for h, (n, _) in per.items() if n >= min_runs]
        cut = alpha / max(len(tested), 1)
        for host, (n, k) in per.items():
            p_value = binomial_sf(k, n, rate) if n >= min_runs else 1.0
            out.append(HostStat(host, kind, n, k, n / total, k / fails, p_value,
                                n >= min_runs and k > n * rate and p_value < cut))
    out.sort(key=lambda h: (not h.lemon, h.p_value, -h.failures, h.host))
    return out
