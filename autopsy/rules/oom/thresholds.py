"""The out-of-memory family's thresholds: one place, each with why it has its value."""

from __future__ import annotations

from autopsy.rules.registry import Threshold

#: OOM001 cuda-oom.
OOM001: dict[str, Threshold] = {
    "frag_min_fraction": Threshold(0.05, (
        "An OOM is fragmentation (cause fragmentation, fixed by expandable_segments) rather "
        "than exhaustion only when the memory PyTorch's caching allocator reserved but did "
        "not allocate is at least 5% of the GPU (4 GiB of an 80 GiB card) and, with the free "
        "memory, would have held the request. The allocator always keeps some cached "
        "blocks; a few hundred MiB of them is normal, not fragmentation.")),
}

#: OOM002 host-oom.
OOM002: dict[str, Threshold] = {
    "confidence": Threshold(0.85, (
        "The confidence of a host-RAM finding. A failed CPU allocation says so itself, but a "
        "SIGKILL (exit code -9 or 137, a bare 'Killed') is usually the kernel's OOM-killer "
        "and sometimes a scheduler or a person: below OOM001's 0.95 for an allocation that "
        "failed on the GPU with its numbers.")),
}
