"""Synthetic runs for rule tests: series and config in, a real :class:`Run` out.

Rule tests state the situation in numbers (a loss that goes NaN three steps after
a grad-norm spike; a flat loss at ln(4)) and check what the rule concludes.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from autopsy.model import (
    ConfigValue,
    Run,
    RunConfig,
    concat_scalars,
    empty_events,
    make_scalars,
)

Series = Sequence[float] | Mapping[int, float]


def synthetic_run(
    series: Mapping[str, Series],
    *,
    steps: Sequence[int] | None = None,
    config: Mapping[str, Any] | None = None,
    segments: Mapping[str, Sequence[int]] | None = None,
) -> Run:
    """Build a Run from ``{raw_tag: values}``.

    A list of values is logged at ``steps`` (default 1, 2, ...); a mapping gives
    ``{step: value}``. ``config`` values get the source ``"config.json"``;
    ``segments`` optionally gives a per-point segment list per tag.
    """
    frames = []
    for tag, values in series.items():
        if isinstance(values, Mapping):
            st = list(values.keys())
            vals = [float(v) for v in values.values()]
        else:
            vals = [float(v) for v in values]
            st = list(steps) if steps is not None else list(range(1, len(vals) + 1))
            st = st[: len(vals)]
        seg: Any = 0 if segments is None or tag not in segments else list(segments[tag])
        frames.append(make_scalars(st, tag, vals, segment=seg, source="synthetic"))
    cfg = RunConfig(ConfigValue(k, v, "config.json") for k, v in (config or {}).items())
    return Run(root=Path("synthetic"), scalars=concat_scalars(frames), events=empty_events(),
               config=cfg)
