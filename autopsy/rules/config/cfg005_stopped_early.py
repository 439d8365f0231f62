"""CFG005: the run stopped before its step budget was reached."""

from __future__ import annotations

from autopsy.model.finding import Evidence, Family, Finding, Severity
from autopsy.model.run import Run
from autopsy.rules.config._cfg import as_number, last_step, step_budget
from autopsy.rules.context import RuleContext
from autopsy.rules.registry import rule


@rule(
    code="CFG005",
    name="stopped-early",
    family=Family.CRASH,
    requires=("config:max_steps|config:num_train_epochs",),
)
def stopped_early(run: Run, ctx: RuleContext) -> Finding | None:
    """The run stopped before reaching its planned number of steps.

    What happened:
        The last step reached (``global_step``, or the largest logged step) is below
        the number of optimizer steps the run was set to take. The run ended early and
        the logs do not say why: a warning in the ``crash`` family, never the verdict on
        its own (a crash rule that sees the exception or the OOM explains it).

    Why it happens:
        A crash (exception, out-of-memory, a killed job, a pre-empted node), a time
        limit, a manual stop, or early stopping. A run still in progress looks the same.

    How to fix:
        Look at the end of the training log (or the scheduler's job log) for the
        reason. Resume from the last checkpoint (``resume_from_checkpoint=True``) if
        the run should go on.

    Evidence shown:
        The last step reached and where it was read, the planned steps (``max_steps``,
        or ``num_train_epochs`` × the steps per epoch read off the logged ``epoch``),
        and the shortfall. Without ``global_step`` the largest logged step is used and a
        gap smaller than ``logging_steps`` is not counted (the last steps may simply
        not have been logged).
    """
    budget = step_budget(run)
    reached = last_step(run)
    if budget.steps is None or reached is None:
        return None
    slack = 0
    if as_number(run.config.get("global_step")) is None:
        slack = int(as_number(run.config.get("logging_steps")) or 0)
    if reached + slack >= budget.steps:
        return None
    g = run.config.get_entry("global_step")
    where = (f"global_step in {g.source}" if g is not None and as_number(g.value) == reached
             else "the largest logged step")
    done = reached / budget.steps
    return ctx.finding(
        message=f"The run stopped at step {reached} of {budget.steps} planned ({done:.0%}); "
                f"the logs do not say why.",
        severity=Severity.WARNING,
        confidence=0.7 if where.startswith("global_step") else 0.5,
        step=reached,
        evidence=[Evidence(summary=f"last step {reached} ({where}); planned {budget.steps} "
                                   f"({budget.how})",
                           numbers={"reached": reached, "planned": budget.steps})],
        advice=("Read the end of the training log (or the job scheduler's log) for the reason "
                "the run stopped.",
                "Resume from the last checkpoint (resume_from_checkpoint=True) if it should "
                "go on."),
    )
