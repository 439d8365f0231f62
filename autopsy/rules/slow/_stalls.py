"""The stalls of a run, found once and shared by SLOW003 (periodic) and SLOW006 (irregular)."""

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


def run_stalls(run: Run, ctx: RuleContext) -> RunStalls | None:
    """The stalls of the lowest rank (or the single process); None when there are none."""
    key = ("slow.stalls", int(ctx["skip_first"]), float(ctx["ratio"]), float(ctx["min_extra_s"]),
           float(ctx["min_score"]), int(ctx["min_count"]))
    if key in ctx.shared:
        return ctx.shared[key]  # type: ignore[no-any-return]
    out = None
    times = reference_times(run, ctx)
    if times is not None:
        periods = config_periods(run)
        found = find_stalls(times, ratio=float(ctx["ratio"]), min_extra=float(ctx["min_extra_s"]),
                            min_score=float(ctx["min_score"]), min_count=int(ctx["min_count"]),
                            periods=periods)
        if found is not None:
            out = RunStalls(times, found, periods)
    ctx.shared[key] = out
    return out


#: The thresholds SLOW003 and SLOW006 both have (tune them together: ``--set SLOW.ratio=4``).
STALL_THRESHOLDS: dict[str, float | int] = {
    "ratio": 3.0, "min_extra_s": 0.05, "min_score": 10.0, "min_count": 3,
    "share": 0.1, "warn_share": 0.03,
}
