"""Plain data out of an unpickled value, with a bound on what it expands to.

A pickle's memo lets one list be referenced from many places: four levels of a
list holding the previous one 70 times is under 2 kB on disk and 24 million
elements once written out as a tree (as a config value, JSON, or text is). So the
plain copy counts every node it emits and gives up at ``max_nodes``
(:data:`MAX_PLAIN_NODES` by default): the caller reports the value as too large
instead of materialising it. Each container is also checked for a cycle.
"""

from __future__ import annotations

from enum import Enum
from typing import Any

from autopsy.formats.unpickle.placeholders import Call

#: Most nodes (containers and scalars, counted each time they are reached) one plain
#: value may expand to. A real config value (a DeepSpeed config, scheduler kwargs, a
#: list of report targets) has tens to a few hundred; ten thousand leaves room for a
#: long list of layer names while keeping a hostile value under a megabyte of JSON.
MAX_PLAIN_NODES = 10_000


class PlainStatus(str, Enum):
    """How a value converted: ``ok``, ``not_plain`` (holds objects) or ``too_large``."""

    OK = "ok"
    NOT_PLAIN = "not_plain"
    TOO_LARGE = "too_large"


class _TooLarge(Exception):
    pass


class _NotPlain(Exception):
    pass


_SCALARS = (bool, int, float, str)


def to_plain(value: Any, *, max_nodes: int = MAX_PLAIN_NODES,
             max_depth: int = 16) -> tuple[PlainStatus, Any]:
    """``(status, value)``: ``value`` as plain lists, dicts and scalars when it is plain data.

    Enum placeholders (a :class:`Call` with a scalar ``value``) become that value.
    Tuples become lists; dict keys become strings. A value holding any other object,
    nested deeper than ``max_depth`` or cyclic is ``not_plain``; one that would
    expand past ``max_nodes`` nodes is ``too_large``. The value is ``None`` unless
    the status is ``ok``. Cost is at most ``max_nodes`` steps.
    """
    budget = [max_nodes]
    open_ids: set[int] = set()

    def conv(item: Any, depth: int) -> Any:
        budget[0] -= 1
        if budget[0] < 0:
            raise _TooLarge
        if item is None or isinstance(item, _SCALARS):
            return item
        if isinstance(item, Call):
            inner = item.value
            if inner is not None and isinstance(inner, _SCALARS):
                return inner
            raise _NotPlain
        if depth >= max_depth or id(item) in open_ids:
            raise _NotPlain
        if isinstance(item, (list, tuple)):
            open_ids.add(id(item))
            out = [conv(v, depth + 1) for v in item]
            open_ids.discard(id(item))
            return out
        if isinstance(item, dict):
            open_ids.add(id(item))
            mapped = {str(k): conv(v, depth + 1) for k, v in item.items()}
            open_ids.discard(id(item))
            return mapped
        raise _NotPlain

    try:
        return PlainStatus.OK, conv(value, 0)
    except _TooLarge:
        return PlainStatus.TOO_LARGE, None
    except _NotPlain:
        return PlainStatus.NOT_PLAIN, None
