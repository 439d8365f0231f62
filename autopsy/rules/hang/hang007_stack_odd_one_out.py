"""HANG007: the ranks' stack dumps show one rank somewhere the others are not."""

from __future__ import annotations

from autopsy.model.finding import Evidence, Family, Finding, Severity
from autopsy.model.run import Run
from autopsy.rules.context import RuleContext
from autopsy.rules.hang._stuck import classify
from autopsy.rules.hang.thresholds import HANG007
from autopsy.rules.registry import rule
from autopsy.signals.stacks import group_ranks, phase, rank_stacks

#: What to do about a rank stuck in each phase.
PHASE_ADVICE: dict[str, str] = {
    "data loading": "look at what the dataset's __getitem__ waits on (a network or dead mount, "
                    "a lock, a worker that died); set a DataLoader timeout so a stuck read "
                    "raises instead of hanging the job",
    "checkpoint save": "check the storage the checkpoint is written to (a full or hung "
                       "filesystem); save from one rank with a barrier after it, or use "
                       "torch.distributed.checkpoint's async save",
    "checkpoint load": "check the storage the checkpoint is read from, and that every rank "
                       "loads the same files",
    "evaluation": "run the evaluation on every rank (or put every rank in the same barrier "
                  "after rank 0's evaluation): the others wait in a collective meanwhile",
    "init/rendezvous": "check MASTER_ADDR/MASTER_PORT, that every rank was started, and the "
                       "network between the hosts",
}


@rule(code="HANG007", name="stack-odd-one-out", family=Family.HANG, causes=("dead_rank",),
      thresholds=HANG007)
def stack_odd_one_out(run: Run, ctx: RuleContext) -> Finding | None:
    """The stack dumps show the ranks stopped in different places; the odd one out is stuck.

    What happened:
        Every rank's main-thread stack was dumped (``py-spy dump``, ``faulthandler``) while
        the job hung, and most ranks are in the same place (usually a collective) while
        one or more are elsewhere: loading data, saving a checkpoint, evaluating, still in
        rendezvous. The others cannot go on without it: it is the culprit, and its stack
        says in which phase it stopped. Stacks of at least ``min_ranks`` ranks are needed,
        and the majority's place must hold more ranks than any other. When collective
        timeouts are in the logs too, HANG001 reports the hang and the stacks are one of its
        clues.

    Why it happens:
        The odd rank waits on something the others do not: a read from a dead mount, a
        checkpoint write to a hung filesystem, a rank-0-only evaluation, a lock.

    How to fix:
        Follow the odd rank's stack to what it waits on (the advice names the usual suspects
        of its phase); bound the wait (a DataLoader ``timeout``, a storage timeout) so it
        raises instead of hanging every rank.

    Evidence shown:
        Each group of ranks with the place (innermost frame of the training code) and the
        phase of its stack, and which tool dumped it. Confidence is ``confidence``.
    """
    stacks = rank_stacks(run.events)
    if len(stacks) < int(ctx["min_ranks"]):
        return None
    if classify(run, ctx).kind != "none":
        return None  # timeouts in the logs: HANG001-HANG003 report it, with the stacks
    groups = group_ranks(stacks)
    if len(groups) < 2 or len(groups[0]) <= len(groups[1]):
        return None
    odd = sorted(r for g in groups[1:] for r in g)
    culprit = stacks[odd[0]]
    where, others = phase(culprit), phase(stacks[groups[0][0]])
    evidence = [Evidence(summary=f"rank(s) {g}: {phase(stacks[g[0]])}, "
                                 f"{stacks[g[0]].where()} ({stacks[g[0]].tool})",
                         source=stacks[g[0]].source)
                for g in groups]
    advice = [PHASE_ADVICE.get(where.split(",")[0], "follow its stack to what it waits on"),
              "dump the stacks again a minute later: a rank whose stack has not moved is stuck",
              "set TORCH_NCCL_ASYNC_ERROR_HANDLING=1 and a collective timeout so a stuck rank "
              "ends the job with an error instead of hanging it"]
    return ctx.finding(
        message=f"rank(s) {odd} stopped in {where} ({culprit.where()}) while rank(s) "
                f"{groups[0]} wait in {others}: the job hangs on rank {odd[0]}",
        severity=Severity.ERROR, confidence=ctx["confidence"], cause="dead_rank",
        ranks=tuple(odd), evidence=evidence, advice=advice,
        title=f"rank {odd[0]} stuck in {where}",
    )
