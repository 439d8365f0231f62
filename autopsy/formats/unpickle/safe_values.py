"""Well-known constructors whose behaviour is fixed and harmless, materialised to plain values.

Each materialiser checks its arguments' types before building anything, and
raises :class:`Keep` when they do not fit: the caller then keeps the placeholder.
"""

from __future__ import annotations

import collections
import datetime
import decimal
from collections.abc import Callable, Iterable
from typing import Any


class Keep(Exception):
    """Raised by a materialiser: keep the placeholder instead."""


def _all(values: Iterable[Any], types: tuple[type, ...]) -> bool:
    return all(isinstance(v, types) for v in values)


def _m_ordered_dict(args: tuple[Any, ...]) -> Any:
    if not args:
        return collections.OrderedDict()
    if len(args) == 1 and isinstance(args[0], (dict, list, tuple)):
        return collections.OrderedDict(args[0])
    raise Keep


def _m_collection(kind: type) -> Callable[[tuple[Any, ...]], Any]:
    def make(args: tuple[Any, ...]) -> Any:
        if not args:
            return kind()
        if len(args) == 1 and isinstance(args[0], (list, tuple, set, frozenset)):
            return kind(args[0])
        raise Keep

    return make


def _m_bytes(kind: type) -> Callable[[tuple[Any, ...]], Any]:
    def make(args: tuple[Any, ...]) -> Any:
        if not args:
            return kind()
        if len(args) == 1 and isinstance(args[0], (bytes, bytearray)):
            return kind(args[0])
        if len(args) == 1 and isinstance(args[0], list) and _all(args[0], (int,)):
            return kind(args[0])
        if len(args) == 2 and isinstance(args[0], str) and args[1] in _SAFE_ENCODINGS:
            return kind(args[0], args[1])
        raise Keep

    return make


_SAFE_ENCODINGS = frozenset({"latin1", "latin-1", "iso-8859-1", "utf-8", "utf8", "ascii"})


def _m_codecs_encode(args: tuple[Any, ...]) -> Any:
    if len(args) == 2 and isinstance(args[0], str) and args[1] in _SAFE_ENCODINGS:
        return args[0].encode(args[1])
    raise Keep


def _m_numbers(kind: Callable[..., Any], n: int) -> Callable[[tuple[Any, ...]], Any]:
    def make(args: tuple[Any, ...]) -> Any:
        if len(args) <= n and _all(args, (int, float, type(None))):
            return kind(*args)
        if kind is complex and len(args) == 1 and isinstance(args[0], str) and len(args[0]) < 100:
            return complex(args[0])
        raise Keep

    return make


_DATETIME_ARGS = (int, float, str, bytes, type(None), datetime.timezone, datetime.timedelta)


def _m_datetime(kind: Callable[..., Any]) -> Callable[[tuple[Any, ...]], Any]:
    def make(args: tuple[Any, ...]) -> Any:
        if len(args) <= 8 and _all(args, _DATETIME_ARGS) and not any(
            isinstance(a, (str, bytes)) and len(a) > 64 for a in args
        ):
            return kind(*args)
        raise Keep

    return make


def _m_decimal(args: tuple[Any, ...]) -> Any:
    if len(args) == 1 and isinstance(args[0], (str, int)) and len(str(args[0])) < 1000:
        return decimal.Decimal(args[0])
    raise Keep


#: Dotted name -> materialiser; each checks its arguments and builds a plain value.
MATERIALISED: dict[str, Callable[[tuple[Any, ...]], Any]] = {
    "collections.OrderedDict": _m_ordered_dict,
    "builtins.set": _m_collection(set),
    "builtins.frozenset": _m_collection(frozenset),
    "builtins.bytearray": _m_bytes(bytearray),
    "builtins.bytes": _m_bytes(bytes),
    "_codecs.encode": _m_codecs_encode,
    "codecs.encode": _m_codecs_encode,
    "builtins.complex": _m_numbers(complex, 2),
    "builtins.slice": _m_numbers(slice, 3),
    "builtins.range": _m_numbers(range, 3),
    "datetime.datetime": _m_datetime(datetime.datetime),
    "datetime.date": _m_datetime(datetime.date),
    "datetime.time": _m_datetime(datetime.time),
    "datetime.timedelta": _m_datetime(datetime.timedelta),
    "datetime.timezone": _m_datetime(datetime.timezone),
    "decimal.Decimal": _m_decimal,
}
