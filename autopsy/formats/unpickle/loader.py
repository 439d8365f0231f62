"""Entry points over one pickle: :func:`scan`, :func:`load`, :func:`loads`; :class:`Unpickled`."""

from __future__ import annotations

import io
import os
from dataclasses import dataclass, field
from typing import IO, Any

from autopsy.formats.unpickle.danger import is_dangerous
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

    @property
    def dangerous(self) -> tuple[str, ...]:
        """Referenced names that are dangerous, plus globals a ``BUILD`` tried to mutate."""
        bad = [n for n in self.globals if is_dangerous(n)]
        return tuple(dict.fromkeys([*bad, *self.mutated_globals]))


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
    unpickler = SafeUnpickler(fh, **limits)
    obj = unpickler.load()
    return Unpickled(obj, tuple(unpickler.globals), tuple(unpickler.mutated_globals),
                     tuple(unpickler.persistent_ids), **extra)


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
