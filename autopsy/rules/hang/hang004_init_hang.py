"""HANG004: the job hung at init because some ranks never joined."""

from __future__ import annotations

import pandas as pd

from autopsy.model.finding import Evidence, Family, Finding, Severity
from autopsy.model.run import Run
from autopsy.rules.context import RuleContext
from autopsy.rules.hang.thresholds import HANG004
from autopsy.rules.registry import rule


@rule(
    code="HANG004",
    name="init-hang",
    family=Family.HANG,
    causes=("init_hang",),
    thresholds=HANG004,
)
def init_hang(run: Run, ctx: RuleContext) -> Finding | None:
    """The ranks timed out at init or at a barrier some ranks never joined.

    What happened:
        A rendezvous, store-based barrier, TCPStore client wait or
        ``monitored_barrier`` timed out: only some of the expected ranks
        joined (``N/M clients joined``), or the barrier names the ranks that
        failed to pass it.

    Why it happens:
        A node failed to launch or started late, a wrong ``MASTER_ADDR`` /
        ``MASTER_PORT`` / ``WORLD_SIZE``, a firewall between nodes, or a rank
        stuck (or crashed) before it reached ``init_process_group`` or the
        barrier.

    How to fix:
        Check that every node started and reaches the same master address and
        port, that ``WORLD_SIZE`` matches the ranks launched, and read the
        missing ranks' own logs (or the scheduler's) for why they never joined.

    Evidence shown:
        The expected and joined counts, the ranks named as missing, the ranks
        that reported the timeout.
    """
    ev = run.events
    if ev.empty:
        return None
    rows = ev[ev["kind"].astype(str) == "rendezvous_timeout"]
    if rows.empty:
        return None
    missing: set[int] = set()
    expected = joined = None
    for d in rows["details"]:
        missing |= {int(r) for r in (d or {}).get("missing_ranks") or []}
        expected = (d or {}).get("expected", expected)
        joined = (d or {}).get("joined", joined)
    reporters = sorted({int(r) for r in rows["rank"].dropna()})
    count = f"{joined}/{expected} ranks joined" if expected is not None else "not every rank joined"
    who = (f"rank(s) {sorted(missing)} never joined" if missing
           else "the logs do not say which ranks are missing")
    evidence = [Evidence(summary=str(r["message"])[:200], source=r["source"],
                         line=None if pd.isna(r["line"]) else int(r["line"]))
                for _, r in rows.drop_duplicates("rank").iterrows()]
    return ctx.finding(
        message=f"init/barrier hang: {count}; {who} (timeout reported by ranks {reporters})",
        severity=Severity.CRITICAL, confidence=ctx["confidence"], cause="init_hang",
        step=None, ranks=sorted(missing), evidence=evidence,
        advice=["check that every node launched and that MASTER_ADDR/MASTER_PORT/WORLD_SIZE "
                "agree across nodes", "read the missing ranks' own logs (or the scheduler's) "
                "for why they never reached init_process_group or the barrier"],
    )
