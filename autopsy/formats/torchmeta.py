"""Tensor metadata of a ``torch.save`` file without its bytes and without torch.

:func:`read_torch_meta` reads the pickle with the restricted unpickler, decodes
every tensor rebuild into a :class:`~autopsy.formats.tensorinfo.TensorInfo`
(dtype, shape, stride, the absolute offset of its first byte), and checks that
each storage the pickle names is in the file with the size it implies:

* zip files (``torch.save`` since 1.6): storages are the members
  ``<archive>/data/<key>``; their offsets come from the zip directory and local
  headers (:mod:`autopsy.formats.torchzip`), or from the local headers alone when
  the directory is lost (a torn save);
* legacy files (``_use_new_zipfile_serialization=False``): after the object come
  a pickled list of storage keys, then per storage an 8-byte little-endian element
  count and the bytes, which are skipped by seeking;
* plain pickles: objects are read, tensors have no locatable bytes.

Tensor bytes are never read.
"""

from __future__ import annotations

import collections
import os
import struct
from dataclasses import dataclass, field, replace
from typing import IO, Any

from autopsy.formats.ckpt_open import open_checkpoint
from autopsy.formats.ckpterrors import CheckpointFormatError
from autopsy.formats.tensor_storage import (
    StorageRef,
    TensorSpec,
    implausible,
    storage_ref,
    tensor_spec,
    unwrap_tensor_call,
)
from autopsy.formats.tensorinfo import ITEMSIZE, MAX_NUMEL, TensorInfo
from autopsy.formats.torchzip import ZipIndex, read_zip_directory, salvage_zip
from autopsy.formats.unpickle import Call, UnpickleError, load_torch, scan
from autopsy.formats.unpickle.loader import Unpickled, scan_stream
from autopsy.formats.unpickle.torchfile import TORCH_LEGACY_MAGIC, archive_of, pick_data_pkl

_LIMITS = {"max_bytes": 256 << 20, "max_ops": 10_000_000, "max_depth": 256}


@dataclass
class TorchMeta:
    """What a torch file holds, tensors described but not read.

    Attributes:
        path: the file read.
        container: ``"torch_zip"``, ``"torch_legacy"`` or ``"pickle"``.
        obj: the object as unpickled safely, every tensor / ``nn.Parameter`` replaced
            by its :class:`TensorInfo` (unknown classes stay placeholders).
        tensors: ``(key path, info)`` for every tensor, key paths joined by ``"."``
            (``"state.0.exp_avg"``); a tensor referenced twice is listed under both paths.
        globals: every dotted global the pickle referenced.
        unsafe: ``(dotted global, reason)`` for the dangerous ones.
        problems: integrity problems, one readable line each.
        unverified: ``(dotted global, reason)`` for those on neither the denylist nor the
            allowlist (:func:`autopsy.formats.unpickle.danger.classify_global`).
    """

    path: str
    container: str
    obj: Any
    tensors: list[tuple[str, TensorInfo]] = field(default_factory=list)
    globals: tuple[str, ...] = ()
    unsafe: list[tuple[str, str]] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    unverified: list[tuple[str, str]] = field(default_factory=list)


def _format_error(message: str, exc: UnpickleError) -> CheckpointFormatError:
    """The one-line error of an unreadable pickle, with the globals it named before failing."""
    from autopsy.formats.unpickle.loader import judge_globals

    err = CheckpointFormatError(message)
    err.unsafe, err.unverified = judge_globals(exc.globals_seen, exc.attribute_paths_seen)
    return err


@dataclass(frozen=True)
class _Located:
    """Where a storage's bytes start in the file and how many are there."""

    offset: int | None
    present: int


# -- reading the pickle and locating storages


def _storages(unpickled: Unpickled) -> dict[str, StorageRef]:
    out: dict[str, StorageRef] = {}
    for pid in unpickled.persistent_ids:
        ref = storage_ref(pid)
        if ref is not None and ref.numel <= MAX_NUMEL:  # larger: the tensor's problem
            out.setdefault(ref.key, ref)
    return out


def _pickle_from_index(fh: IO[bytes], index: ZipIndex) -> Unpickled | None:
    """The pickle read straight from its stored member (faster than through zipfile)."""
    name = pick_data_pkl(index.members)
    member = index.members.get(name) if name is not None else None
    if member is None or member.method != 0 or member.present < member.size:
        return None
    if member.size > _LIMITS["max_bytes"]:
        return None
    fh.seek(member.data_offset)
    raw = fh.read(member.size)
    try:
        unpickled = scan(raw, **_LIMITS)
    except UnpickleError:
        return None
    return replace(unpickled, container="torch_zip", member=name,
                   meta={"archive": archive_of(name)})


def _read_zip(fh: IO[bytes], path: str, size: int) -> tuple[Unpickled, dict[str, _Located],
                                                          list[str]]:
    index = read_zip_directory(fh, size)
    unpickled = _pickle_from_index(fh, index) if index is not None else None
    if unpickled is None:
        try:
            unpickled = load_torch(path)
        except UnpickleError as exc:
            raise _format_error(f"{path}: not a readable torch zip file: {exc}", exc) \
                from exc
    storages = _storages(unpickled)
    archive = unpickled.meta.get("archive", "")
    prefix = f"{archive}/data/" if archive else "data/"
    if index is None:
        index = salvage_zip(fh, size, {prefix + key: ref.nbytes for key, ref in storages.items()})
    problems = list(index.problems)
    located: dict[str, _Located] = {}
    missing: list[str] = []
    for key, ref in storages.items():
        member = index.members.get(prefix + key)
        if member is None:
            missing.append(key)
            continue
        if member.method != 0:
            problems.append(f"storage {key} is compressed (zip method {member.method}); "
                            "its bytes cannot be located")
            continue
        if member.size < ref.nbytes:
            problems.append(f"storage {key} holds {member.size:,} bytes; the pickle declares "
                            f"{ref.nbytes:,}")
        if member.present < member.compressed_size:
            problems.append(f"storage {key} is cut short by the end of the file: "
                            f"{member.present:,} of {member.compressed_size:,} bytes present")
        located[key] = _Located(member.data_offset, min(member.size, member.present))
    if missing:
        problems.append(_missing_line(missing, storages, f"missing from the zip ({prefix}<key>)"))
    byteorder = index.members.get(f"{archive}/byteorder" if archive else "byteorder")
    if byteorder is not None and byteorder.method == 0 and 0 < byteorder.present <= 16:
        fh.seek(byteorder.data_offset)
        if fh.read(byteorder.present).strip() == b"big":
            problems.append("storages are big-endian (byteorder 'big'); offsets are given, "
                            "values are not in the native order")
    return unpickled, located, problems


def _read_legacy_or_pickle(fh: IO[bytes], path: str, size: int) -> tuple[
        Unpickled, dict[str, _Located], list[str]]:
    try:
        first = scan_stream(fh, _LIMITS)
        if first.obj != TORCH_LEGACY_MAGIC or isinstance(first.obj, bool):
            return first, {}, []
        version = scan_stream(fh, _LIMITS)
        sys_info = scan_stream(fh, _LIMITS)
        main = scan_stream(fh, _LIMITS)
    except UnpickleError as exc:
        raise _format_error(f"{path}: not a readable pickle or torch file: {exc}", exc) \
            from exc
    parts = [first, version, sys_info, main]
    unpickled = _legacy(parts, main, version.obj, sys_info.obj)
    storages = _storages(unpickled)
    problems: list[str] = []
    located: dict[str, _Located] = {}
    try:
        keys_pickle = scan_stream(fh, _LIMITS)
    except UnpickleError as exc:
        if storages:
            problems.append(f"the list of storage keys after the pickle is unreadable ({exc}); "
                            "no storage can be located")
        # what it named before failing counts: torch.load would have run it
        seen = Unpickled(None, exc.globals_seen, attribute_paths=exc.attribute_paths_seen)
        return _legacy([*parts, seen], main, version.obj, sys_info.obj), located, problems
    # torch.load unpickles all five pickles: a payload in any of them counts.
    unpickled = _legacy([*parts, keys_pickle], main, version.obj, sys_info.obj)
    keys = keys_pickle.obj
    if not isinstance(keys, list):
        problems.append("the list of storage keys after the pickle is not a list")
        return unpickled, located, problems
    pos = fh.tell()
    for raw_key in keys:
        key = str(raw_key)
        ref = storages.get(key)
        itemsize = 1 if ref is None or ref.untyped else ITEMSIZE.get(ref.dtype, 1)
        fh.seek(pos)
        head = fh.read(8)
        if len(head) < 8:
            problems.append(f"storage {key}: the file ends before its record (at offset "
                            f"{pos:,})")
            break
        (count,) = struct.unpack("<q", head)
        start = pos + 8
        nbytes = count * itemsize
        if count < 0 or nbytes > size:
            problems.append(f"storage {key}: record at offset {pos:,} declares {count:,} "
                            "elements, more than the file holds")
            break
        present = max(0, min(nbytes, size - start))
        if ref is not None and nbytes < ref.nbytes:
            problems.append(f"storage {key} holds {nbytes:,} bytes; the pickle declares "
                            f"{ref.nbytes:,}")
        if present < nbytes:
            problems.append(f"storage {key} is cut short by the end of the file: "
                            f"{present:,} of {nbytes:,} bytes present")
        located[key] = _Located(start, present)
        pos = start + nbytes
    missing = [key for key in storages if key not in located]
    if missing:
        problems.append(_missing_line(missing, storages, "without a record in the file"))
    return unpickled, located, problems


def _legacy(parts: list[Unpickled], main: Unpickled, version: Any, sys_info: Any) -> Unpickled:
    """The legacy file's object, with the names referenced by every one of its pickles."""
    names = tuple(dict.fromkeys(n for p in parts for n in p.globals))
    mutated = tuple(dict.fromkeys(n for p in parts for n in p.mutated_globals))
    paths = tuple(dict.fromkeys(a for p in parts for a in p.attribute_paths))
    return Unpickled(main.obj, names, mutated, main.persistent_ids, container="torch_legacy",
                     meta={"protocol_version": version, "sys_info": sys_info},
                     attribute_paths=paths)


def _missing_line(missing: list[str], storages: dict[str, StorageRef], what: str) -> str:
    """One problem line for storages that are not in the file."""
    total = sum(storages[k].nbytes for k in missing)
    shown = ", ".join(missing[:8]) + (f" and {len(missing) - 8} more" if len(missing) > 8
                                      else "")
    noun = "storage" if len(missing) == 1 else f"{len(missing)} storages"
    return f"{noun} {shown} ({total:,} bytes) {what}"


# -- replacing tensor rebuilds by TensorInfo


class _Converter:
    """Walks the unpickled object, replacing tensor rebuild calls by :class:`TensorInfo`."""

    def __init__(self, path: str, container: str, located: dict[str, _Located]) -> None:
        self.file = path
        self.container = container
        self.located = located
        self.tensors: list[tuple[str, TensorInfo]] = []
        self.problems: list[str] = []
        self._done: dict[int, Any] = {}
        self._keep: list[Any] = []  # keeps converted originals alive so ids stay unique

    def info(self, spec: TensorSpec, where: str) -> TensorInfo:
        itemsize = ITEMSIZE.get(spec.dtype, 1)
        numel = 1
        for n in spec.shape:
            numel *= n
        probe = TensorInfo(spec.dtype, spec.shape, self.file, None, numel * itemsize,
                           None, spec.stride, spec.storage_offset)
        storage = spec.storage
        if storage is None:
            return probe
        offset: int | None = None
        place = self.located.get(storage.key)
        start = spec.storage_offset * itemsize
        need = start + probe.extent * itemsize
        if need > storage.nbytes and probe.numel:
            self.problems.append(
                f"tensor {where or '<root>'} needs {need:,} bytes of storage {storage.key}, "
                f"which declares {storage.nbytes:,}"
            )
        elif place is not None and place.offset is not None and (
            need <= place.present or not probe.numel
        ):
            offset = place.offset + start
        return TensorInfo(spec.dtype, spec.shape, self.file, offset, numel * itemsize,
                          storage.key, spec.stride, spec.storage_offset)

    def convert(self, obj: Any, where: str) -> Any:
        if isinstance(obj, (str, bytes, int, float, type(None))):
            return obj
        done = self._done.get(id(obj))
        if done is not None:
            if isinstance(done, TensorInfo):
                self.tensors.append((where, done))
            return done
        if isinstance(obj, Call):
            return self._call(obj, where)
        if isinstance(obj, dict):
            new: dict[Any, Any] = collections.OrderedDict() if isinstance(
                obj, collections.OrderedDict) else {}
            if isinstance(obj, collections.OrderedDict):
                new.__dict__.update(obj.__dict__)
            self._remember(obj, new)
            for key, value in obj.items():
                new[key] = self.convert(value, _join(where, key))
            return new
        if isinstance(obj, list):
            items: list[Any] = []
            self._remember(obj, items)
            items.extend(self.convert(v, _join(where, i)) for i, v in enumerate(obj))
            return items
        if isinstance(obj, tuple):
            result = tuple(self.convert(v, _join(where, i)) for i, v in enumerate(obj))
            self._remember(obj, result)
            return result
        return obj

    def _remember(self, original: Any, converted: Any) -> None:
        self._done[id(original)] = converted
        self._keep.append(original)

    def _call(self, call: Call, where: str) -> Any:
        tensor = unwrap_tensor_call(call)
        if tensor is not None:
            name, args, inner = tensor
            if inner is not None:
                result = self.convert(inner, where)
                if isinstance(result, TensorInfo):
                    self._remember(call, result)
                    return result
            else:
                spec = tensor_spec(name, args)
                why = implausible(spec) if spec is not None else None
                if why is not None:
                    self.problems.append(f"tensor {where or '<root>'}: {why}; not a tensor "
                                         "torch can load (damaged or hostile file)")
                elif spec is not None:
                    result = self.info(spec, where)
                    self._remember(call, result)
                    self.tensors.append((where, result))
                    return result
        self._remember(call, call)
        call.args = tuple(self.convert(v, _join(where, f"args.{i}"))
                          for i, v in enumerate(call.args))
        call.builds = [self.convert(b, where) for b in call.builds]
        call.listitems = [self.convert(v, _join(where, i)) for i, v in enumerate(call.listitems)]
        call.dictitems = [(k, self.convert(v, _join(where, k))) for k, v in call.dictitems]
        return call


def _join(prefix: str, key: Any) -> str:
    part = key if isinstance(key, str) else str(key)
    return f"{prefix}.{part}" if prefix else part


# -- the entry point


def read_torch_meta(path: str | os.PathLike[str]) -> TorchMeta:
    """Describe every tensor of a ``torch.save`` file (zip or legacy) or pickle, unread.

    Never imports torch and never reads tensor bytes: only the zip directory and
    local headers (or the legacy storage records) and the pickle.

    Raises:
        CheckpointFormatError: the file cannot be read at all (missing, empty, not a
            pickle or torch zip, its pickle unreadable); the message is one line.
    """
    name = os.fspath(path)
    fh, size = open_checkpoint(name)
    with fh:
        if size == 0:
            raise CheckpointFormatError(f"{name}: empty file (0 bytes)")
        try:
            magic = fh.read(4)
            fh.seek(0)
            if magic[:2] == b"PK" and magic[2:4] in (b"\x03\x04", b"\x05\x06", b"\x07\x08"):
                unpickled, located, problems = _read_zip(fh, name, size)
                container = "torch_zip"
            else:
                unpickled, located, problems = _read_legacy_or_pickle(fh, name, size)
                container = unpickled.container
        except CheckpointFormatError:
            raise
        except (OSError, struct.error, UnicodeDecodeError, OverflowError) as exc:
            raise CheckpointFormatError(f"{name}: cannot read: {exc}") from exc
    converter = _Converter(name, container, located)
    try:
        obj = converter.convert(unpickled.obj, "")
    except RecursionError:
        obj = unpickled.obj
        problems.append("object nested too deeply to list its tensors")
    unsafe, unverified = unpickled.judged()
    return TorchMeta(name, container, obj, converter.tensors, unpickled.globals, unsafe,
                     [*problems, *converter.problems], unverified)
