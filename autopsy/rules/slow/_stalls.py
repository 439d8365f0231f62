"""The stalls of a run, found once and shared by SLOW003 (periodic) and SLOW006 (irregular).

The thresholds of the search are :data:`autopsy.rules.slow.thresholds.STALLS`.
"""

from __future__ import annotations

from dataclasses import dataclass

from autopsy.model.run import Run
from autopsy.rules.context import RuleContext
from autopsy.rules.slow._slow import reference_times
from autopsy.signals.steptime import Stalls, StepTimes, config_periods, find_stalls


@dataclass(frozen=True)
class RunStalls:
    """The stalls of the run's reference rank, with the times they were found in."""

    times: StepTimes
    stalls: Stalls
    periods: dict[str, int]

    @property
    def periodic(self) -> bool:
        """Whether the stalls recur on a period or on a config interval."""
        return self.stalls.matched is not None or (
            self.stalls.period is not None and self.stalls.regular >= 0.6
            and len(self.stalls.steps) >= 3)


def run_stalls(run: Run, ctx: RuleContext, min_count: int | None = None) -> RunStalls | None:
    """The stalls of the lowest rank (or the single process); None when there are fewer
    than ``min_count`` (default: the ``min_count`` threshold)."""
    count = int(ctx["min_count"]) if min_count is None else min_count
    key = ("slow.stalls", int(ctx["skip_first"]), float(ctx["ratio"]), float(ctx["min_extra_s"]),
           float(ctx["min_score"]), count)
    if key in ctx.shared:
        return ctx.shared[key]  # type: ignore[no-any-return]
    out = None
    times = reference_times(run, ctx)
    if times is not None:
        periods = config_periods(run)
        found = find_stalls(times, ratio=float(ctx["ratio"]), min_extra=float(ctx["min_extra_s"]),
                            min_score=float(ctx["min_score"]), min_count=count,
                            periods=periods)
        if found is not None:
            out = RunStalls(times, found, periods)
    ctx.shared[key] = out
    return out
