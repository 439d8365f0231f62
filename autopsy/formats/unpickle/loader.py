"""Entry points over one pickle: :func:`scan`, :func:`load`, :func:`loads`; :class:`Unpickled`."""

from __future__ import annotations

import io
import os
from dataclasses import dataclass, field
from typing import IO, Any

from autopsy.formats.unpickle.danger import (
    DANGEROUS,
    UNVERIFIED,
    attribute_path_reason,
    classify_global,
    is_dangerous,
)
from autopsy.formats.unpickle.errors import UnpickleError
from autopsy.formats.unpickle.interpreter import SafeUnpickler
from autopsy.formats.unpickle.limits import DEFAULT_MAX_BYTES, DEFAULT_MAX_DEPTH, DEFAULT_MAX_OPS


@dataclass(frozen=True)
class Unpickled:
    """One object read safely, with what its pickle referenced.

    Attributes:
        obj: the object (plain values and placeholders).
        globals: every dotted name the pickle referenced, in order of appearance.
        mutated_globals: names a ``BUILD`` tried to set attributes on (an attack
            pattern in itself).
        attribute_paths: ``(module, qualname)`` of the globals named by a dotted qualname
            (``STACK_GLOBAL('torch', 'os.system')``).
        persistent_ids: every persistent id, in order (torch: one per storage).
        container: ``"pickle"``, ``"torch_zip"`` or ``"torch_legacy"``.
        member: the zip member read (``"archive/data.pkl"``), else ``""``.
        meta: container details (legacy: ``protocol_version``, ``sys_info``;
            zip: ``archive``, ``salvaged`` when read from a torn zip).
    """

    obj: Any
    globals: tuple[str, ...] = ()
    mutated_globals: tuple[str, ...] = ()
    persistent_ids: tuple[Any, ...] = ()
    container: str = "pickle"
    member: str = ""
    meta: dict[str, Any] = field(default_factory=dict)
    attribute_paths: tuple[tuple[str, str], ...] = ()

    @property
    def dangerous(self) -> tuple[str, ...]:
        """Referenced names that are dangerous (an attribute path reaching a dangerous module
        included), plus globals a ``BUILD`` tried to mutate."""
        bad = [n for n in self.globals if is_dangerous(n)]
        bad += [f"{m}.{n}" for m, n in self.attribute_paths
                if attribute_path_reason(m, n) is not None]
        return tuple(dict.fromkeys([*bad, *self.mutated_globals]))

    def judged(self) -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
        """``(unsafe, unverified)``: ``(dotted name, why)`` of the referenced globals that are
        dangerous and of those on neither list (see :func:`judge_globals`)."""
        return judge_globals(self.globals, self.attribute_paths, self.mutated_globals)


def judge_globals(names: Any, attribute_paths: Any = (), mutated: Any = ()
                  ) -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
    """``(unsafe, unverified)`` of referenced globals: ``(dotted name, why)`` each.

    ``unsafe``: dangerous names (:func:`~.danger.classify_global`), attribute paths that reach
    a dangerous module, and globals a ``BUILD`` tried to mutate. ``unverified``: names on
    neither the denylist nor the allowlist, and other attribute paths."""
    paths = {f"{m}.{n}": (m, n) for m, n in attribute_paths}
    unsafe: list[tuple[str, str]] = []
    unverified: list[tuple[str, str]] = []
    for name in dict.fromkeys(names):
        where = paths.get(name)
        why = attribute_path_reason(*where) if where is not None else None
        if why is not None:
            unsafe.append((name, why))
            continue
        level, why = classify_global(name, attribute_path=where is not None)
        if level == DANGEROUS:
            unsafe.append((name, why))
        elif level == UNVERIFIED:
            unverified.append((name, why))
    for name in mutated:
        if all(name != g for g, _ in unsafe):
            unsafe.append((name, "a BUILD tries to set attributes on this global"))
    return unsafe, unverified


Source = bytes | bytearray | memoryview | IO[bytes] | str | os.PathLike


def as_stream(source: Any) -> tuple[IO[bytes], bool]:
    """A binary stream over ``source`` and whether the caller must close it."""
    if isinstance(source, (bytes, bytearray, memoryview)):
        return io.BytesIO(bytes(source)), True
    if isinstance(source, (str, os.PathLike)):
        try:
            return open(source, "rb"), True
        except OSError as exc:
            raise UnpickleError(f"cannot open {os.fspath(source)}: {exc.strerror}") from exc
    if hasattr(source, "read") and hasattr(source, "readline"):
        return source, False
    raise TypeError(f"expected bytes, a path or a binary file, not {type(source).__name__}")


def scan_stream(fh: IO[bytes], limits: dict[str, int], **extra: Any) -> Unpickled:
    """Read one pickle from ``fh``; on failure the error keeps the names seen before it."""
    unpickler = SafeUnpickler(fh, **limits)
    try:
        obj = unpickler.load()
    except UnpickleError as exc:
        exc.globals_seen = tuple(unpickler.globals)
        exc.attribute_paths_seen = tuple(unpickler.attribute_paths)
        raise
    return Unpickled(obj, tuple(unpickler.globals), tuple(unpickler.mutated_globals),
                     tuple(unpickler.persistent_ids), attribute_paths=tuple(
                         unpickler.attribute_paths), **extra)


def scan(
    source: Source,
    *,
    max_bytes: int = DEFAULT_MAX_BYTES,
    max_ops: int = DEFAULT_MAX_OPS,
    max_depth: int = DEFAULT_MAX_DEPTH,
) -> Unpickled:
    """Read one pickle safely; return the object with the globals it referenced.

    ``source`` is bytes, a binary file object (read from its current position up
    to the pickle's ``STOP``) or a path.

    Raises:
        UnpickleError: the input is malformed, truncated or over a limit.
    """
    fh, close = as_stream(source)
    try:
        return scan_stream(fh, {"max_bytes": max_bytes, "max_ops": max_ops,
                                 "max_depth": max_depth})
    finally:
        if close:
            fh.close()


def load(
    source: Source,
    *,
    max_bytes: int = DEFAULT_MAX_BYTES,
    max_ops: int = DEFAULT_MAX_OPS,
    max_depth: int = DEFAULT_MAX_DEPTH,
) -> Any:
    """Read one pickle safely and return the object (see :func:`scan`)."""
    return scan(source, max_bytes=max_bytes, max_ops=max_ops, max_depth=max_depth).obj


def loads(data: bytes | bytearray | memoryview, **limits: int) -> Any:
    """Read one pickle from bytes safely and return the object."""
    if not isinstance(data, (bytes, bytearray, memoryview)):
        raise TypeError(f"loads() needs bytes, not {type(data).__name__}")
    return load(data, **limits)
