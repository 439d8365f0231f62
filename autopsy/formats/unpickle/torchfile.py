"""Torch files: the ``data.pkl`` of a torch zip (torn ones too) and the legacy non-zip format.

Storages are recorded as placeholders; their bytes are never read.
"""

from __future__ import annotations

import struct
import zipfile
from collections.abc import Iterable
from typing import IO

from autopsy.formats.unpickle.errors import PickleTruncated, UnpickleError
from autopsy.formats.unpickle.limits import DEFAULT_MAX_BYTES, DEFAULT_MAX_DEPTH, DEFAULT_MAX_OPS
from autopsy.formats.unpickle.loader import Source, Unpickled, as_stream, scan_stream

#: The magic number that opens a legacy (non-zip) torch file.
TORCH_LEGACY_MAGIC = 0x1950A86A20F9469CFC6C

_ZIP_MAGIC = b"PK\x03\x04"
_LOCAL_HEADER = struct.Struct("<4sHHHHHIIIHH")


def _is_data_pkl(name: str) -> bool:
    return name == "data.pkl" or name.endswith("/data.pkl")


def archive_of(member: str) -> str:
    """The archive folder a member lies in (``"archive/data.pkl"`` -> ``"archive"``)."""
    return member.rsplit("/", 1)[0] if "/" in member else ""


def pick_data_pkl(names: Iterable[str]) -> str | None:
    """The ``data.pkl`` member torch reads: the least nested one, then the first by name."""
    candidates = [n for n in names if _is_data_pkl(n)]
    return min(candidates, key=lambda n: (n.count("/"), n)) if candidates else None


def _torch_zip(fh: IO[bytes], limits: dict[str, int], start: int) -> Unpickled:
    try:
        archive = zipfile.ZipFile(fh)
    except Exception:  # BadZipFile, OSError, struct errors of a torn directory...
        try:
            return _torn_zip(fh, limits, start)
        except (OSError, ValueError, struct.error) as exc:
            if isinstance(exc, UnpickleError):
                raise
            raise UnpickleError(f"cannot read the torn zip file: {exc}") from exc
    with archive:
        member = pick_data_pkl(archive.namelist())
        if member is None:
            raise UnpickleError("zip file without a data.pkl: not a torch file")
        try:
            with archive.open(member) as inner:
                return scan_stream(inner, limits, container="torch_zip", member=member,
                                   meta={"archive": archive_of(member)})
        except UnpickleError:
            raise
        except Exception as exc:  # encrypted (RuntimeError), bad deflate (zlib.error)...
            raise UnpickleError(f"cannot read {member} from the zip: {exc}") from exc


def _torn_zip(fh: IO[bytes], limits: dict[str, int], start: int) -> Unpickled:
    """Read data.pkl through the first local header of a zip whose directory is lost."""
    fh.seek(start)
    header = fh.read(_LOCAL_HEADER.size)
    if len(header) < _LOCAL_HEADER.size:
        raise PickleTruncated("zip file shorter than one local header")
    sig, _ver, _flags, method, _t, _d, _crc, _csize, _usize, nlen, xlen = _LOCAL_HEADER.unpack(
        header
    )
    name = fh.read(nlen).decode("utf-8", "replace")
    if sig != _ZIP_MAGIC or not _is_data_pkl(name):
        raise UnpickleError("zip file with no central directory and no leading data.pkl")
    if method != 0:
        raise UnpickleError("torn zip file whose data.pkl is compressed")
    fh.read(xlen)
    return scan_stream(fh, limits, container="torch_zip", member=name,
                       meta={"archive": archive_of(name), "salvaged": True})


def _torch_legacy_or_pickle(fh: IO[bytes], limits: dict[str, int]) -> Unpickled:
    first = scan_stream(fh, limits)
    if first.obj != TORCH_LEGACY_MAGIC or isinstance(first.obj, bool):
        return first
    version = scan_stream(fh, limits)
    sys_info = scan_stream(fh, limits)
    main = scan_stream(fh, limits)
    parts: tuple[Unpickled, ...] = (first, version, sys_info, main)
    seen: tuple[str, ...] = ()
    seen_paths: tuple[tuple[str, str], ...] = ()
    try:  # the list of storage keys: torch.load unpickles it too
        parts += (scan_stream(fh, limits),)
    except UnpickleError as exc:  # torn or absent: the object above is still what the
        seen, seen_paths = exc.globals_seen, exc.attribute_paths_seen  # file holds
    # Every one of these pickles can hide a payload (one that still leaves the magic
    # number on the stack, say): report what any of them references.
    names = tuple(dict.fromkeys([*(n for part in parts for n in part.globals), *seen]))
    mutated = tuple(dict.fromkeys(n for part in parts for n in part.mutated_globals))
    paths = tuple(dict.fromkeys([*(p for part in parts for p in part.attribute_paths),
                                 *seen_paths]))
    return Unpickled(main.obj, names, mutated, main.persistent_ids,
                     container="torch_legacy",
                     meta={"protocol_version": version.obj, "sys_info": sys_info.obj},
                     attribute_paths=paths)


def load_torch(
    source: Source,
    *,
    max_bytes: int = DEFAULT_MAX_BYTES,
    max_ops: int = DEFAULT_MAX_OPS,
    max_depth: int = DEFAULT_MAX_DEPTH,
) -> Unpickled:
    """Read the object of a ``torch.save`` file (zip or legacy) or a plain pickle, safely.

    Storages are recorded as :class:`PersistentRef` placeholders; their bytes are
    never read. ``Unpickled.container`` says which format was found.

    Raises:
        UnpickleError: not a pickle, a torch file with no ``data.pkl``, or any
            malformed, truncated or oversized pickle.
    """
    limits = {"max_bytes": max_bytes, "max_ops": max_ops, "max_depth": max_depth}
    fh, close = as_stream(source)
    try:
        try:
            start = fh.tell()
            magic = fh.read(4)
            fh.seek(start)
        except (OSError, ValueError) as exc:
            raise UnpickleError(f"cannot read the input: {exc}") from exc
        if not magic:
            raise PickleTruncated("empty input")
        if magic[:2] == b"PK" and magic[2:4] in (b"\x03\x04", b"\x05\x06", b"\x07\x08"):
            return _torch_zip(fh, limits, start)
        return _torch_legacy_or_pickle(fh, limits)
    finally:
        if close:
            fh.close()
