"""The LR an HF Trainer schedule gives at a step, from ``training_args.bin`` and the
trainer state: the check that the saved scheduler is the one the run was configured with.

Only the schedules whose formula is fixed are recomputed (``linear``, ``cosine``,
``constant``, ``constant_with_warmup``, without ``lr_scheduler_kwargs``); anything else
is not checked. The formulas are the Trainer's: warm-up ``step / max(1, warmup)``, then
linear decay to 0 at ``max_steps``, or half a cosine.
"""

from __future__ import annotations

import math
from typing import Any

from autopsy.ckpt.statedicts import int_value

SCHEDULES = ("linear", "cosine", "constant", "constant_with_warmup")


def _value(value: Any) -> Any:
    inner = getattr(value, "value", None)  # an enum placeholder: SchedulerType("linear")
    return inner if inner is not None else value


def warmup_steps(args: dict[str, Any], total: int) -> int | None:
    """The warm-up length the Trainer derives from the arguments (steps, or a ratio)."""
    steps = args.get("warmup_steps", 0)
    ratio = args.get("warmup_ratio", 0.0)
    if isinstance(steps, bool) or not isinstance(steps, (int, float)) or steps < 0:
        return None
    if steps >= 1:
        return int(steps)
    if steps > 0:  # transformers 5: a float below 1 is a ratio
        return math.ceil(total * steps)
    if isinstance(ratio, (int, float)) and not isinstance(ratio, bool) and ratio > 0:
        return math.ceil(total * ratio)
    return 0


def factor(kind: str, step: int, warmup: int, total: int) -> float:
    """The multiplier of the base LR at ``step`` for schedule ``kind``."""
    if kind == "constant":
        return 1.0
    if step < warmup:
        return float(step) / float(max(1, warmup))
    if kind == "constant_with_warmup":
        return 1.0
    progress = float(step - warmup) / float(max(1, total - warmup))
    if kind == "linear":
        return max(0.0, float(total - step) / float(max(1, total - warmup)))
    return max(0.0, 0.5 * (1.0 + math.cos(math.pi * 0.5 * 2.0 * progress)))


def expected_lr(args: dict[str, Any], trainer_state: dict[str, Any],
                step: int) -> tuple[float, str] | None:
    """The LR the configured schedule gives at ``step``, and how it was derived; or None."""
    kind = _value(args.get("lr_scheduler_type"))
    base = args.get("learning_rate")
    total = int_value(trainer_state.get("max_steps"))
    kwargs = args.get("lr_scheduler_kwargs")
    if kind not in SCHEDULES or kwargs not in (None, {}) or total is None or total <= 0:
        return None
    if isinstance(base, bool) or not isinstance(base, (int, float)):
        return None
    warmup = warmup_steps(args, total)
    if warmup is None:
        return None
    lr = float(base) * factor(str(kind), step, warmup, total)
    how = (f"{kind} schedule, learning_rate {base:g}, warmup {warmup}, max_steps {total}, "
           f"step {step}")
    return lr, how
