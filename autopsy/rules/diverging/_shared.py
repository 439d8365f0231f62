"""Helpers the diverging rules share: where a step sits in the LR schedule, config facts."""

from __future__ import annotations

from dataclasses import dataclass

from autopsy.model.config import ConfigValue
from autopsy.model.finding import Evidence
from autopsy.model.run import Run
from autopsy.signals import Schedule, lr_at, phase_at, reconstruct_schedule

PHASE_WORDS: dict[str, str] = {
    "warmup": "during the warm-up",
    "peak": "at the peak LR",
    "decay": "while the LR decays",
    "restart": "right after a warm restart of the LR",
}


@dataclass(frozen=True)
class SchedulePoint:
    """Where one step sits in the run's reconstructed LR schedule."""

    schedule: Schedule
    phase: str
    lr: float | None

    @property
    def words(self) -> str:
        """The phase as a phrase, with the LR when known ("at the peak LR (3e-4)")."""
        text = PHASE_WORDS.get(self.phase, self.phase)
        if self.lr is None or not self.schedule.peak > 0:
            return text
        share = self.lr / self.schedule.peak
        if self.phase == "peak":
            return f"{text} ({self.lr:.3g})"
        return f"{text} (LR {self.lr:.3g}, {share:.0%} of the {self.schedule.peak:.3g} peak)"


def schedule_point(run: Run, step: int) -> SchedulePoint | None:
    """The schedule phase and LR at ``step``, or None when no learning rate was logged."""
    return schedule_points(run, [step])[0]


def schedule_points(run: Run, steps: list[int]) -> list[SchedulePoint | None]:
    """:func:`schedule_point` for each of ``steps``, the schedule reconstructed once."""
    if not run.has("learning_rate"):
        return [None] * len(steps)
    lr = run.series("learning_rate")
    schedule = reconstruct_schedule(lr)
    if schedule is None:
        return [None] * len(steps)
    return [SchedulePoint(schedule=schedule, phase=phase_at(schedule, step), lr=lr_at(lr, step))
            for step in steps]


def schedule_evidence(point: SchedulePoint, step: int) -> Evidence:
    """An evidence line for where ``step`` sits in the schedule."""
    s = point.schedule
    warm = f"{s.warmup_steps}-step warm-up" if s.warmup_steps else "no warm-up"
    return Evidence(
        summary=f"step {step} is {point.words}; schedule: {warm}, peak {s.peak:.3g} at step "
                f"{s.peak_step}, {s.shape} after it"
                + (f", restarts at {', '.join(map(str, s.restarts))}" if s.restarts else ""),
        tag="learning_rate", steps=(s.first_step, s.last_step),
        numbers={"phase": point.phase, "lr": point.lr, "peak": s.peak,
                 "peak_step": s.peak_step, "warmup_steps": s.warmup_steps},
    )


def clipping_off(run: Run) -> ConfigValue | None:
    """The ``max_grad_norm`` entry when the config says clipping is off (0 or None)."""
    entry = run.config.get_entry("max_grad_norm")
    if entry is None:
        return None
    try:
        off = entry.value is None or float(entry.value) <= 0
    except (TypeError, ValueError):
        return None
    return entry if off else None


def warmup_off(run: Run) -> ConfigValue | None:
    """The ``warmup_steps`` entry when the config asks for no warm-up at all."""
    steps = run.config.get_entry("warmup_steps")
    ratio = run.config.get("warmup_ratio")
    if steps is None:
        return None
    try:
        off = not float(steps.value or 0) > 0 and not float(ratio or 0) > 0
    except (TypeError, ValueError):
        return None
    return steps if off else None


def config_evidence(entry: ConfigValue, meaning: str) -> Evidence:
    """An evidence line for one config value, with the file it came from."""
    return Evidence(summary=f"{entry.key}={entry.value!r} ({meaning})", source=entry.source,
                    key=entry.key, numbers={entry.key: entry.value})


def total_steps(run: Run, last_step: int) -> int:
    """The run's planned length in steps (``max_steps`` when set, else the last logged step)."""
    try:
        planned = int(run.config.get("max_steps") or 0)
    except (TypeError, ValueError):
        planned = 0
    return planned if planned > 0 else last_step


def peak_lr(run: Run, point: SchedulePoint | None) -> float | None:
    """The peak LR: from the logged schedule, else the config's ``learning_rate``."""
    if point is not None and point.schedule.peak > 0:
        return point.schedule.peak
    try:
        value = float(run.config.get("learning_rate"))
    except (TypeError, ValueError):
        return None
    return value if value > 0 else None
