"""Torch storages as a pickle names them, and torch tensor rebuild calls -> :class:`TensorInfo`.

In a torch file every storage is a persistent id ``('storage', <storage class>,
key, location, numel)``; a tensor is a call of one of the ``torch._utils``
rebuild functions on it. Here both are decoded from the restricted unpickler's
placeholders, without torch.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from autopsy.formats.tensorinfo import ITEMSIZE, MAX_NUMEL, checked_numel
from autopsy.formats.unpickle import Call, Global, PersistentRef

#: Storage class name (last component) -> dtype name of its elements.
STORAGE_DTYPES: dict[str, str] = {
    "FloatStorage": "float32", "DoubleStorage": "float64", "HalfStorage": "float16",
    "BFloat16Storage": "bfloat16", "LongStorage": "int64", "IntStorage": "int32",
    "ShortStorage": "int16", "CharStorage": "int8", "ByteStorage": "uint8",
    "BoolStorage": "bool", "ComplexFloatStorage": "complex64",
    "ComplexDoubleStorage": "complex128", "QInt8Storage": "qint8", "QUInt8Storage": "quint8",
    "QInt32Storage": "qint32", "QUInt4x2Storage": "quint4x2", "QUInt2x4Storage": "quint2x4",
    "UntypedStorage": "uint8",
}

#: Rebuild functions whose first argument is a storage (dtype from the storage class or arg 6).
TENSOR_REBUILDS = frozenset({
    "torch._utils._rebuild_tensor", "torch._utils._rebuild_tensor_v2",
    "torch._utils._rebuild_tensor_v3", "torch._utils._rebuild_qtensor",
})
#: Rebuild functions wrapping a tensor (first argument) as an ``nn.Parameter``.
PARAMETER_REBUILDS = frozenset({
    "torch._utils._rebuild_parameter", "torch._utils._rebuild_parameter_with_state",
})
#: ``_rebuild_from_type_v2(func, new_type, args, state)``: a tensor subclass.
FROM_TYPE = "torch._tensor._rebuild_from_type_v2"
#: A tensor on the meta device: shape and dtype, no storage.
META_REBUILD = "torch._utils._rebuild_meta_tensor_no_storage"


@dataclass(frozen=True)
class StorageRef:
    """A storage as its persistent id describes it.

    Attributes:
        key: the storage's key (zip member ``data/<key>``, legacy record key).
        dtype: dtype of its elements (``"uint8"`` for an untyped storage).
        numel: elements declared (bytes for an untyped storage).
        location: device it was saved from (``"cpu"``, ``"cuda:0"``).
        untyped: whether it is an ``UntypedStorage`` (the tensor gives the dtype).
    """

    key: str
    dtype: str
    numel: int
    location: str
    untyped: bool

    @property
    def nbytes(self) -> int:
        """Bytes the pickle declares for this storage."""
        return self.numel * ITEMSIZE.get(self.dtype, 1)


def storage_ref(pid: Any) -> StorageRef | None:
    """Decode a torch storage persistent id, or None when it is not one."""
    if not (isinstance(pid, tuple) and len(pid) >= 5 and pid[0] == "storage"):
        return None
    kind, key, location, numel = pid[1], pid[2], pid[3], pid[4]
    name = kind.dotted_name if isinstance(kind, Global) else str(kind)
    dtype = STORAGE_DTYPES.get(name.rsplit(".", 1)[-1])
    if dtype is None or not isinstance(numel, int) or isinstance(numel, bool) or numel < 0:
        return None
    return StorageRef(str(key), dtype, numel, str(location),
                      name.rsplit(".", 1)[-1] == "UntypedStorage")


def dtype_name(value: Any) -> str | None:
    """``Global('torch.bfloat16')`` -> ``"bfloat16"``; None if it is no known dtype."""
    if isinstance(value, Global) and value.module == "torch" and value.name in ITEMSIZE:
        return value.name
    return None


def _ints(value: Any) -> tuple[int, ...] | None:
    if isinstance(value, (tuple, list)) and all(
        isinstance(v, int) and not isinstance(v, bool) for v in value
    ):
        return tuple(value)
    return None


@dataclass(frozen=True)
class TensorSpec:
    """A tensor rebuild call decoded: its storage and its view of it."""

    storage: StorageRef | None
    dtype: str
    shape: tuple[int, ...]
    stride: tuple[int, ...] | None
    storage_offset: int


def tensor_spec(func_name: str, args: tuple[Any, ...]) -> TensorSpec | None:
    """Decode the arguments of a storage-based tensor rebuild or a meta tensor, else None."""
    if func_name == META_REBUILD:
        if len(args) >= 3:
            dtype, shape, stride = dtype_name(args[0]), _ints(args[1]), _ints(args[2])
            if dtype is not None and shape is not None:
                return TensorSpec(None, dtype, shape, stride, 0)
        return None
    if func_name not in TENSOR_REBUILDS or len(args) < 4:
        return None
    ref = args[0]
    storage = storage_ref(ref.pid) if isinstance(ref, PersistentRef) else None
    offset, shape, stride = args[1], _ints(args[2]), _ints(args[3])
    if shape is None or not isinstance(offset, int) or isinstance(offset, bool) or offset < 0:
        return None
    dtype = storage.dtype if storage is not None else None
    if func_name.endswith("_v3") and len(args) >= 7:
        dtype = dtype_name(args[6]) or dtype
    if dtype is None:
        return None
    return TensorSpec(storage, dtype, shape, stride, offset)


def implausible(spec: TensorSpec) -> str | None:
    """Why no torch file can hold this tensor (a negative size, more elements, a
    stride or offset than an int64 counts, a storage declaring so many), else None.

    Checked before any product or byte count of the spec is made, so a hostile
    shape of many huge sizes costs linear time.
    """
    if any(n < 0 for n in spec.shape):
        return "a negative size in its shape"
    if checked_numel(spec.shape) is None:
        return f"its shape of {len(spec.shape):,} sizes holds more than {MAX_NUMEL:,} elements"
    if spec.storage_offset > MAX_NUMEL or any(abs(s) > MAX_NUMEL for s in spec.stride or ()):
        return f"a stride or storage offset over {MAX_NUMEL:,}"
    if spec.storage is not None and spec.storage.numel > MAX_NUMEL:
        return f"storage {spec.storage.key} declares more than {MAX_NUMEL:,} elements"
    return None


def unwrap_tensor_call(call: Call) -> tuple[str, tuple[Any, ...], Any] | None:
    """``(rebuild name, its args, inner)`` for a tensor-like call.

    ``inner`` is the wrapped tensor of a parameter rebuild (to be converted
    first), else None. Returns None for calls that are not tensors.
    """
    name = call.func_name
    if name in PARAMETER_REBUILDS and call.args:
        return name, call.args, call.args[0]
    if name == FROM_TYPE and len(call.args) >= 3:
        func, inner_args = call.args[0], call.args[2]
        inner_name = getattr(func, "dotted_name", None)
        if isinstance(inner_name, str) and isinstance(inner_args, tuple):
            return inner_name, inner_args, None
        return None
    if name in TENSOR_REBUILDS or name == META_REBUILD:
        return name, call.args, None
    return None
