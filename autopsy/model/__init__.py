"""The run model: what every reader builds and every rule reads.

This package imports nothing else from autopsy.
"""

from __future__ import annotations

from autopsy.model.aliases import TAG_ALIASES, canonical_tag
from autopsy.model.config import ConfigValue, RunConfig
from autopsy.model.events import EVENT_COLUMNS, EventKind, empty_events
from autopsy.model.finding import Evidence, Family, Finding, Severity
from autopsy.model.problem import Problem
from autopsy.model.run import Run, SourceInfo
from autopsy.model.scalars import SCALAR_COLUMNS, concat_scalars, empty_scalars, make_scalars
from autopsy.model.verdict import Verdict

__all__ = [
    "EVENT_COLUMNS",
    "SCALAR_COLUMNS",
    "TAG_ALIASES",
    "ConfigValue",
    "EventKind",
    "Evidence",
    "Family",
    "Finding",
    "Problem",
    "Run",
    "RunConfig",
    "Severity",
    "SourceInfo",
    "Verdict",
    "canonical_tag",
    "concat_scalars",
    "empty_events",
    "empty_scalars",
    "make_scalars",
]
