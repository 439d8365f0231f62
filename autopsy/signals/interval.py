"""Where a log starts in its run, in logging intervals.

A log written from its run's start shows its first points; one whose first logged step is
many logging intervals after step 0 is an excerpt (a window pasted from the middle of a
run) or the log of a run already under way. Several rules read a curve differently there
(a level loss is a plateau, not a stall; a lowest first point is no level the run left).
"""

from __future__ import annotations

from typing import Any

import numpy as np


def logging_interval(steps: Any) -> float:
    """The median gap between the distinct logged steps; 0.0 with fewer than two."""
    distinct = np.unique(np.asarray(steps, dtype=float))
    distinct = distinct[np.isfinite(distinct)]
    return float(np.median(np.diff(distinct))) if distinct.size > 1 else 0.0


def start_in_intervals(steps: Any) -> float | None:
    """How many logging intervals after step 0 the first logged step lies (the first step
    over :func:`logging_interval`); None when the interval is unknown (fewer than two
    distinct steps)."""
    interval = logging_interval(steps)
    if interval <= 0:
        return None
    return float(np.nanmin(np.asarray(steps, dtype=float))) / interval
