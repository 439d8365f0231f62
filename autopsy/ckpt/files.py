"""Reading a checkpoint's files for the audit: metadata only, every failure kept as data.

Torch files and pickles go through :func:`autopsy.formats.torchmeta.read_torch_meta`
(the restricted unpickler: nothing is imported or called), safetensors through
:func:`autopsy.formats.safetensors.read_safetensors_meta`, JSON through :mod:`json`.
The only tensor bytes ever read here are those of tiny scalar tensors (an Adam
``step`` count, a grad-scaler scale), a few bytes at a known offset.
"""

from __future__ import annotations

import json
import os
import stat
import struct
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

#: JSON files larger than this are not parsed (a trainer_state.json is kB to a few MB).
MAX_JSON_BYTES = 256 * 1024 * 1024

_SCALAR_FORMATS: dict[str, str] = {
    "float32": "<f", "float64": "<d", "float16": "<e", "int64": "<q", "int32": "<i",
    "int16": "<h", "int8": "<b", "uint8": "<B", "bool": "<?",
}


@dataclass
class Loaded:
    """One file as read for the audit.

    Attributes:
        path: the file.
        rel: its path relative to the checkpoint, for reports.
        kind: ``torch``, ``safetensors`` or ``json``.
        obj: the unpickled object (tensors as ``TensorInfo``), the JSON value, or None.
        tensors: ``(key, TensorInfo)`` of every tensor in the file.
        unsafe: ``(dotted global, reason)`` of dangerous globals the pickle names.
        unverified: ``(dotted global, reason)`` of globals on neither the denylist nor the
            allowlist of what checkpoints hold (CKPT031).
        problems: integrity problems, one line each.
        error: why the file could not be read at all, or None.
        globals: every global the pickle named.
        metadata: the safetensors ``__metadata__``.
    """

    path: Path
    rel: str
    kind: str
    obj: Any = None
    tensors: list[tuple[str, Any]] = field(default_factory=list)
    unsafe: list[tuple[str, str]] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    error: str | None = None
    globals: tuple[str, ...] = ()
    metadata: dict[str, str] = field(default_factory=dict)
    unverified: list[tuple[str, str]] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """Read fully, with no integrity problem and nothing unsafe."""
        return self.error is None and not self.problems and not self.unsafe

    @property
    def readable(self) -> bool:
        """Whether the object could be read (possibly with problems)."""
        return self.error is None


class FileReader:
    """Reads each file once per audit; paths are reported relative to ``base``."""

    def __init__(self, base: Path) -> None:
        self.base = base
        self._cache: dict[Path, Loaded] = {}

    def rel(self, path: Path) -> str:
        """``path`` relative to the checkpoint, ``/``-separated."""
        try:
            rel = path.relative_to(self.base).as_posix()
        except ValueError:
            return path.as_posix()
        return rel if rel != "." else path.name

    def read(self, path: Path) -> Loaded:
        """Read ``path`` by its kind (suffix); cached."""
        if path in self._cache:
            return self._cache[path]
        name = path.name.lower()
        if name.endswith(".safetensors"):
            loaded = self._safetensors(path)
        elif name.endswith(".json"):
            loaded = self._json(path)
        else:
            loaded = self._torch(path)
        self._cache[path] = loaded
        return loaded

    def _empty_file_error(self, path: Path, kind: str) -> Loaded | None:
        try:
            st = path.stat()
        except OSError as exc:
            return Loaded(path, self.rel(path), kind, error=f"cannot read: {exc.strerror}")
        if not stat.S_ISREG(st.st_mode):
            return Loaded(path, self.rel(path), kind,
                          error="not a regular file (a FIFO, device or socket): not read")
        size = st.st_size
        if size == 0:
            return Loaded(path, self.rel(path), kind, error="zero-length file (partly written?)")
        return None

    def _torch(self, path: Path) -> Loaded:
        empty = self._empty_file_error(path, "torch")
        if empty is not None:
            return empty
        from autopsy.formats.torchmeta import read_torch_meta

        try:
            meta = read_torch_meta(path)
        except (ValueError, OSError) as exc:  # names seen before a pickle failed still count
            return Loaded(path, self.rel(path), "torch", error=_one_line(exc),
                          unsafe=list(getattr(exc, "unsafe", [])),
                          unverified=list(getattr(exc, "unverified", [])))
        unsafe = list(meta.unsafe)
        if meta.container == "torch_legacy":
            known = {g for g, _ in unsafe}
            unsafe += [(g, why) for g, why in legacy_dangers(path) if g not in known]
        return Loaded(path, self.rel(path), "torch", obj=meta.obj, tensors=list(meta.tensors),
                      unsafe=unsafe, problems=list(meta.problems), globals=tuple(meta.globals),
                      unverified=list(meta.unverified))

    def _safetensors(self, path: Path) -> Loaded:
        empty = self._empty_file_error(path, "safetensors")
        if empty is not None:
            return empty
        from autopsy.formats.safetensors import read_safetensors_meta

        try:
            meta = read_safetensors_meta(path)
        except (ValueError, OSError) as exc:
            return Loaded(path, self.rel(path), "safetensors", error=_one_line(exc))
        return Loaded(path, self.rel(path), "safetensors", obj=None,
                      tensors=list(meta.tensors.items()), problems=list(meta.problems),
                      metadata=dict(meta.metadata))

    def _json(self, path: Path) -> Loaded:
        empty = self._empty_file_error(path, "json")
        if empty is not None:
            return empty
        try:
            if path.stat().st_size > MAX_JSON_BYTES:
                return Loaded(path, self.rel(path), "json", error="JSON file too large to read")
            with open(path, "rb") as fh:
                obj = json.loads(fh.read().decode("utf-8", "replace"))
        except OSError as exc:
            return Loaded(path, self.rel(path), "json", error=f"cannot read: {exc.strerror}")
        except (ValueError, RecursionError) as exc:
            return Loaded(path, self.rel(path), "json",
                          error=f"invalid JSON (partly written?): {_one_line(exc)}")
        return Loaded(path, self.rel(path), "json", obj=obj)


#: Pickles at the start of a legacy torch file: magic number, protocol, sys info, the
#: object, the storage keys. ``torch.load`` unpickles every one of them.
LEGACY_PICKLES = 5


def legacy_dangers(path: Path) -> list[tuple[str, str]]:
    """Dangerous globals in *any* pickle of a legacy (non-zip) torch file.

    ``torch.load`` unpickles the magic-number, protocol and sys-info pickles and the
    storage-key list as well as the object, so a payload in any of them runs; each is
    read here with the restricted unpickler (nothing is imported or called).
    """
    from autopsy.formats.unpickle import UnpickleError, scan
    from autopsy.formats.unpickle.loader import judge_globals

    found: list[tuple[str, str]] = []

    def add(unsafe: list[tuple[str, str]]) -> None:
        found.extend(p for p in unsafe if all(p[0] != g for g, _ in found))

    try:
        with open(path, "rb") as fh:
            for _ in range(LEGACY_PICKLES):
                try:
                    unpickled = scan(fh)
                except UnpickleError as exc:  # what it named before failing counts
                    add(judge_globals(exc.globals_seen, exc.attribute_paths_seen)[0])
                    break
                add(unpickled.judged()[0])
    except OSError:
        pass
    return found


def _one_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__


def is_tensor(value: Any) -> bool:
    """Whether ``value`` is a tensor description (a ``TensorInfo``)."""
    return hasattr(value, "dtype") and hasattr(value, "shape") and hasattr(value, "data_offset")


def numel(info: Any) -> int:
    """The element count of a ``TensorInfo`` (or a DCP ``ShapeOnly``): its own ``numel``."""
    return int(info.numel)


def scalar_value(value: Any) -> float | None:
    """A number from a plain number or a one-element tensor (reads its few bytes), or None."""
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return float(value)
    if not is_tensor(value) or numel(value) != 1:
        return None
    fmt = _SCALAR_FORMATS.get(str(value.dtype))
    offset = value.data_offset
    if fmt is None or offset is None:
        if str(value.dtype) == "bfloat16" and offset is not None:
            raw = _read_at(value.file, offset, 2)
            return None if raw is None else struct.unpack("<f", b"\x00\x00" + raw)[0]
        return None
    raw = _read_at(value.file, offset, struct.calcsize(fmt))
    return None if raw is None else float(struct.unpack(fmt, raw)[0])


def _read_at(file: str | os.PathLike[str], offset: int, size: int) -> bytes | None:
    try:
        with open(file, "rb") as fh:
            fh.seek(offset)
            raw = fh.read(size)
    except OSError:
        return None
    return raw if len(raw) == size else None
