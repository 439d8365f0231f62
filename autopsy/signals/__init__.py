"""Signals: pure numeric helpers over a run's series that several rules share.

Each takes a float ``pandas.Series`` indexed by step (as :meth:`autopsy.model.run.Run.series`
returns it, NaN/Inf kept) and is tested on its own.
"""

from __future__ import annotations

from autopsy.signals.nonfinite import first_non_finite, non_finite_steps
from autopsy.signals.plateau import Plateau, plateau_test
from autopsy.signals.schedule import Schedule, lr_at, phase_at, reconstruct_schedule
from autopsy.signals.spikes import Spike, find_spikes, spike_scores
from autopsy.signals.trend import Trend, theil_sen

__all__ = [
    "Plateau",
    "Schedule",
    "Spike",
    "Trend",
    "find_spikes",
    "first_non_finite",
    "lr_at",
    "non_finite_steps",
    "phase_at",
    "plateau_test",
    "reconstruct_schedule",
    "spike_scores",
    "theil_sen",
]

from autopsy.signals.ranks import CASCADE_KINDS, event_roles, rank_status, went_on_past

__all__ += ["CASCADE_KINDS", "event_roles", "rank_status", "went_on_past"]
