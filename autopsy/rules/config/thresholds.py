"""The config rules' thresholds: one place, each with why it has its value.

The config rules (CFG001-CFG005) judge a run's settings; only CFG003 has thresholds: the LR
regimes of :mod:`autopsy.rules.thresholds` and the warm-up its advice proposes.
"""

from __future__ import annotations

from autopsy.rules.registry import Threshold
from autopsy.rules.thresholds import LR_REGIME

#: CFG003 no-warmup-high-lr.
CFG003: dict[str, Threshold] = {
    **LR_REGIME,
    "warmup_frac": Threshold(0.03, (
        "The warm-up the advice proposes, as a share of the run's optimizer steps "
        "(warmup_ratio=0.03, a common recipe value): in the middle of the 1-5% warm-ups "
        "usually used, long enough for Adam's second-moment estimates to settle before the "
        "full LR. Only the advice uses it; whether the rule fires does not depend on it.")),
}
