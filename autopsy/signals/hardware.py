"""Peak dense FLOP/s of common accelerators, per device, for model-FLOPs utilisation.

The figures are the vendors' datasheet numbers for *dense* math (without the 2x of
structured sparsity that datasheets often print first), per GPU. MFU divides the FLOPs
a model needs by these peaks, so a higher peak gives a lower (more cautious) MFU.
No network: the table is the whole source.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import Enum


class Precision(str, Enum):
    """The math a run trains in, for picking a peak."""

    BF16 = "bf16"
    FP16 = "fp16"
    TF32 = "tf32"
    FP32 = "fp32"


@dataclass(frozen=True)
class Accelerator:
    """One accelerator's dense peaks in FLOP/s (None: not supported in hardware)."""

    key: str
    name: str
    bf16: float | None
    fp16: float
    tf32: float | None
    fp32: float

    def peak(self, precision: Precision) -> float:
        """The dense peak for ``precision``; bf16 without hardware support falls to fp32."""
        value = getattr(self, precision.value)
        return float(value) if value is not None else float(self.fp32)


T = 1e12

#: key -> accelerator. Figures from each vendor datasheet, dense (no sparsity).
ACCELERATORS: dict[str, Accelerator] = {a.key: a for a in (
    # NVIDIA H100 Tensor Core GPU datasheet, SXM5 column: BF16/FP16 1,979 TFLOPS with
    # sparsity (989.4 dense), TF32 989 sparse (494.7 dense), FP32 67 TFLOPS.
    Accelerator("h100_sxm", "NVIDIA H100 SXM", 989.4 * T, 989.4 * T, 494.7 * T, 67 * T),
    # Same datasheet, PCIe column: BF16/FP16 1,513 sparse (756 dense), TF32 378 dense, FP32 51.
    Accelerator("h100_pcie", "NVIDIA H100 PCIe", 756 * T, 756 * T, 378 * T, 51 * T),
    # NVIDIA H200 datasheet, SXM column: BF16/FP16 1,979 sparse (989 dense), TF32 494.7 dense,
    # FP32 67 TFLOPS (the H100 SXM's compute with more, faster memory).
    Accelerator("h200", "NVIDIA H200 SXM", 989.4 * T, 989.4 * T, 494.7 * T, 67 * T),
    # NVIDIA A100 Tensor Core GPU datasheet (40 GB and 80 GB alike): BF16/FP16 312 TFLOPS
    # dense, TF32 156, FP32 19.5.
    Accelerator("a100_40gb", "NVIDIA A100 40GB", 312 * T, 312 * T, 156 * T, 19.5 * T),
    Accelerator("a100_80gb", "NVIDIA A100 80GB", 312 * T, 312 * T, 156 * T, 19.5 * T),
    # NVIDIA L4 datasheet: BF16/FP16 242 TFLOPS with sparsity (121 dense), TF32 60 dense,
    # FP32 30.3.
    Accelerator("l4", "NVIDIA L4", 121 * T, 121 * T, 60 * T, 30.3 * T),
    # The A10G is AWS's variant of the A10; NVIDIA A10 datasheet: BF16/FP16 250 TFLOPS
    # with sparsity (125 dense), TF32 62.5 dense, FP32 31.2.
    Accelerator("a10g", "NVIDIA A10G", 125 * T, 125 * T, 62.5 * T, 31.2 * T),
    # NVIDIA V100 datasheet, SXM2 column: tensor (FP16) 125 TFLOPS, FP32 15.7; no bf16/tf32.
    Accelerator("v100", "NVIDIA V100 SXM2", None, 125 * T, None, 15.7 * T),
    # NVIDIA T4 datasheet: mixed precision (FP16) 65 TFLOPS, FP32 8.1; no bf16/tf32.
    Accelerator("t4", "NVIDIA T4", None, 65 * T, None, 8.1 * T),
    # AMD Instinct MI300X datasheet: FP16/BF16 1,307.4 TFLOPS dense (2,614.9 with sparsity),
    # TF32 653.7, FP32 (matrix) 163.4.
    Accelerator("mi300x", "AMD Instinct MI300X", 1307.4 * T, 1307.4 * T, 653.7 * T, 163.4 * T),
)}

#: (pattern, table key), tried in order on the name in lower case with every run of other
#: characters turned into ``_`` (``nvidia_a100_sxm4_40gb``).
_PATTERNS: tuple[tuple[str, str], ...] = (
    (r"h100.*pcie", "h100_pcie"),
    (r"h200", "h200"),
    (r"h100(?![0-9])", "h100_sxm"),
    (r"a100(?![0-9]).*(?<![0-9])40_?gb?", "a100_40gb"),
    (r"a100(?![0-9])", "a100_80gb"),
    (r"a10(?![0-9])", "a10g"),
    (r"(?<![0-9a-z])l4(?![0-9a-z])", "l4"),
    (r"v100(?![0-9])", "v100"),
    (r"(?<![0-9a-z])t4(?![0-9a-z])", "t4"),
    (r"mi300x?(?![0-9a-z])", "mi300x"),
)


def find_accelerator(name: str) -> Accelerator | None:
    """The accelerator a user or device name means (``h100``, ``NVIDIA A100-SXM4-80GB``...).

    Returns None for an unknown name.
    """
    norm = re.sub(r"[^a-z0-9]+", "_", name.strip().lower()).strip("_")
    if norm in ACCELERATORS:
        return ACCELERATORS[norm]
    for pattern, key in _PATTERNS:
        if re.search(pattern, norm):
            return ACCELERATORS[key]
    return None


def peak_flops(name: str, precision: Precision | str = Precision.BF16) -> float | None:
    """The dense peak FLOP/s per device of ``name`` in ``precision``, or None if unknown."""
    acc = find_accelerator(name)
    return None if acc is None else acc.peak(Precision(precision))
