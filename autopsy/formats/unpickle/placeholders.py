"""Inert placeholders for what a pickle names, and walking the values loaded.

Every global becomes a :class:`Global` (never imported), every call of one a
:class:`Call` (never called), persistent ids a :class:`PersistentRef` (never
resolved), extension codes an :class:`ExtensionRef` and out-of-band buffers an
:class:`OutOfBandBuffer`.
"""

from __future__ import annotations

import collections
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from autopsy.formats.unpickle.errors import PickleLimitExceeded


@dataclass(frozen=True)
class Global:
    """A global (class or function) named by the pickle; never imported."""

    module: str
    name: str

    @property
    def dotted_name(self) -> str:
        """``module.qualname``, e.g. ``"os.system"``."""
        return f"{self.module}.{self.name}"

    def __repr__(self) -> str:
        return f"Global({self.dotted_name!r})"


@dataclass(frozen=True)
class ExtensionRef:
    """A global named by an extension code (``EXT1/2/4``); never looked up."""

    code: int

    @property
    def dotted_name(self) -> str:
        """A readable stand-in name, ``"<extension N>"``."""
        return f"<extension {self.code}>"


@dataclass(frozen=True, eq=False)
class PersistentRef:
    """A persistent id (e.g. a torch storage tuple), recorded and never resolved.

    For torch files ``pid`` is ``('storage', Global(storage type), key,
    location, numel)`` (the legacy format adds a view-metadata element).
    """

    pid: Any

    @property
    def storage_type(self) -> str | None:
        """The storage class's dotted name for a torch storage id, else None."""
        if isinstance(self.pid, tuple) and len(self.pid) >= 2:
            kind = self.pid[1]
            return getattr(kind, "dotted_name", None)
        return None


@dataclass(eq=False)
class OutOfBandBuffer:
    """A protocol-5 out-of-band buffer (``NEXT_BUFFER``), numbered from 0."""

    index: int
    readonly: bool = False


class Call:
    """An inert record of calling a placeholder: ``func_name(*args, **kwargs)`` + state.

    Attributes:
        func_name: the callable's dotted name (``"torch._utils._rebuild_tensor_v2"``).
        args: positional arguments as loaded.
        kwargs: keyword arguments (``NEWOBJ_EX`` only), else ``{}``.
        kind: the opcode that made it (``reduce``, ``newobj``, ``newobj_ex``,
            ``inst``, ``obj``, ``reconstructor``).
        func: the placeholder that was "called".
        builds: every ``BUILD`` state applied, in order (usually one).
        listitems: items ``APPEND``/``APPENDS``/``ADDITEMS`` added to it.
        dictitems: ``(key, value)`` pairs ``SETITEM``/``SETITEMS`` added to it.
    """

    __slots__ = ("args", "builds", "dictitems", "func", "func_name", "kind", "kwargs",
                 "listitems")

    def __init__(
        self,
        func_name: str,
        args: tuple[Any, ...] = (),
        kwargs: dict[str, Any] | None = None,
        state: Any = None,
        *,
        kind: str = "reduce",
        func: Any = None,
    ) -> None:
        self.func_name = func_name
        self.args = args
        self.kwargs = {} if kwargs is None else kwargs
        self.kind = kind
        self.func = func
        self.builds: list[Any] = [] if state is None else [state]
        self.listitems: list[Any] = []
        self.dictitems: list[tuple[Any, Any]] = []

    @property
    def state(self) -> Any:
        """The first ``BUILD`` state (``obj.__dict__`` for most classes), or None."""
        return self.builds[0] if self.builds else None

    @property
    def state_dict(self) -> dict[Any, Any] | None:
        """The state as a dict (``(dict, slots)`` states give the dict), or None."""
        state = self.state
        if isinstance(state, tuple) and len(state) == 2 and isinstance(state[0], dict):
            state = state[0]
        return state if isinstance(state, dict) else None

    @property
    def value(self) -> Any:
        """The enum-like value: the single positional argument, else None.

        ``SchedulerType("linear")`` is pickled as a call of the class on its value,
        so ``Call.value`` gives ``"linear"``.
        """
        if len(self.args) == 1 and not self.kwargs and not self.builds:
            return self.args[0]
        return None

    def __repr__(self) -> str:
        extra = f", state=<{type(self.state).__name__}>" if self.builds else ""
        return f"Call({self.func_name!r}, args=<{len(self.args)}>{extra})"


def name_of(func: Any) -> str:
    """The dotted name of a "callable" placeholder, or a description of it."""
    name = getattr(func, "dotted_name", None)
    if isinstance(name, str):
        return name
    if isinstance(func, Call):
        return f"{func.func_name}(...)"
    return f"<{type(func).__name__}>"


def _children(obj: Any) -> Iterable[Any] | None:
    """The values directly inside ``obj``, or None for a leaf."""
    if isinstance(obj, (list, tuple, set, frozenset)):
        return obj
    if isinstance(obj, dict):
        extra = obj.__dict__.values() if isinstance(obj, collections.OrderedDict) else ()
        return [*obj.keys(), *obj.values(), *extra]
    if isinstance(obj, Call):
        return [obj.func, *obj.args, *obj.kwargs.values(), *obj.builds, *obj.listitems,
                *(x for pair in obj.dictitems for x in pair)]
    if isinstance(obj, PersistentRef):
        return (obj.pid,)
    return None


def walk(obj: Any, *, max_depth: int | None = None) -> Iterator[tuple[Any, int]]:
    """Yield ``(value, depth)`` for every value reachable from ``obj``, each container once.

    Iterative (no recursion), cycle-safe. Raises :class:`PickleLimitExceeded` when
    ``max_depth`` is given and a value lies deeper.
    """
    stack: list[tuple[Any, int]] = [(obj, 0)]
    seen: set[int] = set()
    while stack:
        value, depth = stack.pop()
        if max_depth is not None and depth > max_depth:
            raise PickleLimitExceeded(f"structure nested deeper than {max_depth} levels")
        children = _children(value)
        if children is not None:
            if id(value) in seen:
                continue
            seen.add(id(value))
            stack.extend((child, depth + 1) for child in children)
        yield value, depth


_LEAF_TYPES = frozenset({str, int, float, bool, bytes, bytearray, complex, type(None),
                         Global, ExtensionRef, OutOfBandBuffer})


def check_depth(obj: Any, max_depth: int) -> None:
    """Raise :class:`PickleLimitExceeded` if containers nest deeper than ``max_depth``."""
    stack: list[tuple[Any, int]] = [(obj, 0)]
    seen: set[int] = set()
    leaves = _LEAF_TYPES
    while stack:
        value, depth = stack.pop()
        if id(value) in seen:
            continue
        seen.add(id(value))
        if depth > max_depth:
            raise PickleLimitExceeded(f"structure nested deeper than {max_depth} levels")
        children = _children(value)
        if children:
            stack.extend((c, depth + 1) for c in children if type(c) not in leaves)


def referenced_globals(obj: Any) -> set[str]:
    """Dotted names of every global placeholder reachable from a loaded object."""
    names: set[str] = set()
    for value, _ in walk(obj):
        if isinstance(value, (Global, ExtensionRef)):
            names.add(value.dotted_name)
        elif isinstance(value, Call):
            names.add(value.func_name)
    return names
