"""Where a tensor's bytes are and what they are, never the bytes: :class:`TensorInfo`.

Also the element sizes of the dtypes the checkpoint readers know, by their torch
names (``"float32"``, ``"bfloat16"``, ``"float8_e4m3fn"`` ...).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

#: Bytes per element, by torch dtype name (without ``"torch."``).
ITEMSIZE: dict[str, int] = {
    "float64": 8, "float32": 4, "float16": 2, "bfloat16": 2,
    "float8_e4m3fn": 1, "float8_e5m2": 1, "float8_e4m3fnuz": 1, "float8_e5m2fnuz": 1,
    "float8_e8m0fnu": 1,
    "complex128": 16, "complex64": 8, "complex32": 4,
    "int64": 8, "int32": 4, "int16": 2, "int8": 1,
    "uint64": 8, "uint32": 4, "uint16": 2, "uint8": 1, "bool": 1,
    "qint8": 1, "quint8": 1, "qint32": 4, "quint4x2": 1, "quint2x4": 1,
}

#: Dtypes whose values can be NaN or infinite (the value scan checks these).
FLOATING: frozenset[str] = frozenset({
    "float64", "float32", "float16", "bfloat16", "float8_e4m3fn", "float8_e5m2",
    "float8_e4m3fnuz", "float8_e5m2fnuz", "complex128", "complex64", "complex32",
})


#: More elements than any tensor can have (torch counts them in an int64): a shape
#: over this is a damaged or hostile header, not a tensor.
MAX_NUMEL = 2**63 - 1


def checked_numel(shape: tuple[int, ...] | list[int]) -> int | None:
    """Elements of ``shape`` (sizes >= 0), or None when they are over :data:`MAX_NUMEL`.

    Stops as soon as the product passes the limit, so a hostile shape of a
    million huge sizes costs linear time, not a product of millions of digits.
    """
    if 0 in shape:
        return 0
    n = 1
    for size in shape:
        n *= size
        if n > MAX_NUMEL:
            return None
    return n


def itemsize_of(dtype: str) -> int | None:
    """Bytes per element of a dtype name, or None when the dtype is unknown."""
    return ITEMSIZE.get(dtype)


@dataclass(frozen=True)
class TensorInfo:
    """Where a tensor's bytes are and what they are; never the bytes themselves.

    Attributes:
        dtype: torch dtype name without ``"torch."`` (``"float32"``, ``"bfloat16"`` ...).
        shape: the tensor's size.
        file: path of the file holding the bytes.
        data_offset: absolute byte offset in ``file`` of the first element; None when
            the bytes cannot be located (storage missing, compressed zip member,
            torn or truncated file).
        nbytes: ``numel * itemsize``.
        storage: storage key inside a torch file (``"3"``); None for safetensors.
        stride: strides in elements (torch files); None for safetensors (contiguous).
        storage_offset: offset of the first element in its storage, in elements.
    """

    dtype: str
    shape: tuple[int, ...]
    file: str
    data_offset: int | None
    nbytes: int
    storage: str | None = None
    stride: tuple[int, ...] | None = None
    storage_offset: int = 0

    @property
    def numel(self) -> int:
        """Number of elements (1 for a scalar, 0 if any dimension is 0)."""
        return math.prod(self.shape)

    @property
    def is_floating(self) -> bool:
        """Whether the dtype can hold NaN or Inf (float and complex dtypes)."""
        return self.dtype in FLOATING

    @property
    def itemsize(self) -> int | None:
        """Bytes per element, or None for an unknown dtype."""
        return ITEMSIZE.get(self.dtype)

    @property
    def is_contiguous(self) -> bool:
        """Whether the elements lie back to back in row-major order (no stride, or C strides)."""
        if self.stride is None:
            return True
        expected = 1
        for size, step in zip(reversed(self.shape), reversed(self.stride), strict=False):
            if size != 1 and step != expected:
                return False
            expected *= size
        return True

    @property
    def extent(self) -> int:
        """Elements of the storage the tensor spans from its first element (0 if empty)."""
        if self.numel == 0:
            return 0
        if self.stride is None:
            return self.numel
        return 1 + sum((size - 1) * abs(step) for size, step in zip(self.shape, self.stride,
                                                                     strict=False))
