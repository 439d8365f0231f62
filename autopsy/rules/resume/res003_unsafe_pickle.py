"""RES003: a checkpoint pickle would run code when loaded."""

from __future__ import annotations

from autopsy.model.finding import Evidence, Family, Finding, Severity
from autopsy.model.run import Run
from autopsy.rules.context import RuleContext
from autopsy.rules.registry import rule
from autopsy.rules.resume._audits import audits, check_findings, name


@rule(
    code="RES003",
    name="unsafe-checkpoint-pickle",
    family=Family.RESUME,
    requires=("run:checkpoints",),
    causes=("unsafe_pickle",),
)
def unsafe_checkpoint_pickle(run: Run, ctx: RuleContext) -> Finding | None:
    """A checkpoint pickle would run code when loaded.

    What happened:
        A pickle file of a checkpoint (optimizer.pt, training_args.bin, an RNG
        file, a torch.save dict...) references a global that runs commands or
        code, or touches files or the network (os.system, subprocess.*,
        builtins.eval/exec, runpy, importlib...). autopsy read it with its
        restricted unpickler and executed nothing; torch.load(weights_only=False)
        would run it. Benign globals that weights_only=True refuses (numpy arrays
        in rng_state.pth, TrainingArguments) are not reported.

    Why it happens:
        The checkpoint was tampered with or comes from an untrusted source, or a
        training script pickled a callable by reference.

    How to fix:
        Do not resume from it and do not load it with weights_only=False. Find out
        who wrote the file; load checkpoints with torch.load(weights_only=True).

    Evidence shown:
        Each file and the dangerous globals it names, per checkpoint.
    """
    evidence = []
    first = None
    for audit in reversed(audits(run)):
        for f in check_findings(audit, frozenset({"CKPT030"})):
            first = first or audit
            evidence += [Evidence(f"{name(run, audit)}/{e.source}: {e.summary.split(': ', 1)[-1]}",
                                  source=f"{name(run, audit)}/{e.source}", key=e.key)
                         for e in f.evidence]
    if first is None:
        return None
    globals_named = sorted({e.key for e in evidence if e.key})
    return ctx.finding(
        message=f"checkpoint files reference {', '.join(globals_named)}: loading them with "
                "torch.load(weights_only=False) would run that code (autopsy did not)",
        severity=Severity.ERROR,
        confidence=1.0,
        cause="unsafe_pickle",
        step=first.step,
        evidence=evidence[:12],
        advice=["do not resume from these checkpoints; find out who wrote them",
                "load checkpoints only with torch.load(weights_only=True)"],
    )
