"""OOM002: the host ran out of RAM: a rank or a DataLoader worker was killed."""

from __future__ import annotations

import pandas as pd

from autopsy.model.finding import Evidence, Family, Finding, Severity
from autopsy.model.run import Run
from autopsy.rules.context import RuleContext
from autopsy.rules.crash._failures import attributed, claim_evidence, first_bad_step
from autopsy.rules.oom.thresholds import OOM002
from autopsy.rules.registry import rule


def _host_rows(ev: pd.DataFrame) -> pd.DataFrame:
    kinds = ev["kind"].astype(str)
    cpu = [isinstance(d, dict) and d.get("device") == "cpu" for d in ev["details"]]
    return ev[(kinds == "host_kill") | ((kinds == "oom") & pd.Series(cpu, index=ev.index))]


def _describe(row: pd.Series) -> str:
    d = row["details"] if isinstance(row["details"], dict) else {}
    who = f"rank {int(row['rank'])}" if pd.notna(row["rank"]) else "a process"
    if str(row["kind"]) == "oom":
        return f"{who}: CPU allocation of {d.get('tried', '?')} bytes failed"
    if d.get("who") == "dataloader_worker":
        return f"{who}: DataLoader worker (pid {d.get('pid')}) killed by signal {d.get('signal')}"
    if d.get("exitcode") is not None:
        return f"{who}: killed, exit code {d['exitcode']} (SIGKILL)"
    return f"{who}: {d.get('why') or 'Killed'}"


@rule(code="OOM002", name="host-oom", family=Family.OOM, causes=("host_oom",),
      thresholds=OOM002)
def host_oom(run: Run, ctx: RuleContext) -> Finding | None:
    """The host ran out of RAM: the kernel killed a rank or a DataLoader worker.

    What happened:
        A process was killed outright (exit code -9 or 137, SIGKILL, a bare
        "Killed" from the shell, "DataLoader worker ... is killed by signal:
        Killed") or a CPU allocation failed ("DefaultCPUAllocator: can't
        allocate memory"): the host's RAM, not the GPU's, ran out.

    Why it happens:
        Too many DataLoader workers each holding a copy of the dataset, a large
        prefetch, pinned memory, a dataset loaded whole into RAM, several ranks
        per node each loading the model on CPU, or a container memory limit
        lower than the host's RAM.

    How to fix:
        Lower ``num_workers`` and ``prefetch_factor``, turn ``pin_memory`` off,
        stream or memory-map the dataset, load the model straight to the GPU
        (``low_cpu_mem_usage=True``), check free host RAM (``free -g``,
        ``dmesg | grep -i oom``) and the container's ``--memory`` limit.

    Evidence shown:
        Each kill or failed allocation with its rank (or worker pid), and whether
        torchelastic's root cause names the killed rank. Confidence is
        ``confidence``.
    """
    if run.events.empty:
        return None
    ev = attributed(run.events)
    rows = _host_rows(ev)
    if rows.empty:
        return None
    ranked = rows[rows["rank"].notna()]
    culprit_row = (ranked if not ranked.empty else rows).iloc[0]
    claimed_evidence, _ = (None, None)
    killed = [r for r in ranked["rank"].astype(int).unique()]
    d = culprit_row["details"] if isinstance(culprit_row["details"], dict) else {}
    culprit = int(culprit_row["rank"]) if pd.notna(culprit_row["rank"]) else None
    exit_kill = ranked[[isinstance(x, dict) and x.get("exitcode") in (-9, 137)
                        for x in ranked["details"]]]
    if not exit_kill.empty:
        culprit = int(exit_kill.iloc[0]["rank"])
    claimed_evidence, _ = claim_evidence(ev, culprit)
    evidence = [Evidence(summary=_describe(r), source=str(r["source"]),
                         line=None if pd.isna(r["line"]) else int(r["line"]))
                for _, r in rows.iterrows()]
    if claimed_evidence:
        evidence.append(Evidence(summary=claimed_evidence))
    steps = (ranked if not ranked.empty else rows)["step"].dropna()  # (a single process)
    step = first_bad_step(int(steps.min())) if not steps.empty else None
    del d
    return ctx.finding(
        message="The host ran out of RAM: " + "; ".join(_describe(r) for _, r in
                                                      rows.head(3).iterrows()) + ".",
        severity=Severity.CRITICAL, confidence=ctx["confidence"], cause="host_oom",
        step=step, ranks=() if culprit is None else (culprit, *[k for k in killed
                                                                if k != culprit]),
        evidence=evidence,
        advice=["lower DataLoader num_workers and prefetch_factor; set pin_memory=False",
                "check host RAM (free -g; dmesg | grep -i 'killed process') and the "
                "container's --memory limit",
                "memory-map or stream the dataset instead of loading it whole; load the "
                "model with low_cpu_mem_usage=True"],
    )
