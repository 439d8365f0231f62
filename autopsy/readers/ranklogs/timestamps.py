"""Timestamps found at the start of log lines.

* ISO (``2024-05-01 12:00:00,123``, ``[2024-05-01 12:00:00]``, ``2024-05-01T12:00:00.5``):
  a wall time in seconds since the epoch, read as UTC (logs rarely carry a zone);
* a two-digit year at the line's start (``24-09-18 13:27:08.905 - INFO:``, the
  ``%y-%m-%d`` of BasicSR/MMSR/EDVR's logger): read as 20yy-mm-dd;
* glog (``[E1218 20:27:21.43 ...]``, ``W0801 13:23:17.366000 ...``): no year, so the
  wall time stays unknown (NaN) and the time of day (seconds) is returned apart.
"""

from __future__ import annotations

import math
import re
from datetime import datetime, timezone
from functools import lru_cache

_ISO = re.compile(r"(\d{4})-(\d\d)-(\d\d)[ T_](\d\d):(\d\d):(\d\d)(?:[.,](\d{1,6}))?")
_YY = re.compile(r"^\s*\[?(\d\d)-(\d\d)-(\d\d)[ T](\d\d):(\d\d):(\d\d)(?:[.,](\d{1,6}))?(?!\d)")
_GLOG = re.compile(r"(?:^|[\[\]: ])[IWEF](\d{1,2})(\d\d) (\d\d):(\d\d):(\d\d)(?:\.(\d{1,9}))?")

#: Only this many leading characters of a line are searched for a timestamp.
HEAD_CHARS = 80


@lru_cache(maxsize=256)
def _day_start(year: str, month: str, day: str) -> int | None:
    """Seconds since the epoch at 00:00 UTC of a date, or None if it is no date."""
    try:
        return int(datetime(int(year), int(month), int(day), tzinfo=timezone.utc).timestamp())
    except ValueError:
        return None


def parse_time(text: str) -> tuple[float, float | None]:
    """Return ``(wall_time, time_of_day)`` from the head of ``text``.

    ``wall_time`` is NaN when the line has no dated timestamp; ``time_of_day``
    (seconds since midnight) is set for glog stamps, else None.
    """
    head = text[:HEAD_CHARS]
    m = _ISO.search(head) or _YY.match(head)
    if m:
        ys, mos, ds, hs, mis, ss, fs = m.groups()
        if len(ys) == 2:
            ys = "20" + ys
        h, mi, s = int(hs), int(mis), int(ss)
        day = _day_start(ys, mos, ds)
        if day is None or h > 23 or mi > 59 or s > 59:  # what datetime() refuses
            return math.nan, None
        frac = float("0." + fs) if fs else 0.0
        return float(day + h * 3600 + mi * 60 + s) + frac, None
    m = _GLOG.search(head)
    if m:
        h, mi, s = int(m.group(3)), int(m.group(4)), int(m.group(5))
        frac = float("0." + m.group(6)[:6]) if m.group(6) else 0.0
        if h < 24 and mi < 60 and s < 61:
            return math.nan, h * 3600 + mi * 60 + s + frac
    return math.nan, None
