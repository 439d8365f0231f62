"""Failure signatures: the deciding error line as a template, and which look like hardware.

A template masks what differs between two occurrences of one failure: numbers, hex
addresses, paths, rank and host names, quoted values. Runs are clustered by family and
template (:func:`signature`).
"""

from __future__ import annotations

import re

_MASKS: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"0x[0-9a-fA-F]+"), "<ADDR>"),
    (re.compile(r"(?:[A-Za-z]:)?(?:/[\w.\-]+){2,}/?"), "<PATH>"),
    (re.compile(r"\b(?:rank|local_rank)\s*[=:]?\s*\d+", re.I), "<RANK>"),
    (re.compile(r"\b(?:node|host)\s*[=:]?\s*[\w.\-]*\d[\w.\-]*", re.I), "<HOST>"),
    (re.compile(r"\b[\w\-]+(?:\.[\w\-]+){2,}\b"), "<HOST>"),
    (re.compile(r"'[^']*'|\"[^\"]*\""), "<STR>"),
    (re.compile(r"[-+]?\d+(?:[.,]\d+)*(?:[eE][-+]?\d+)?"), "<N>"),
)
#: Longest template kept (a signature is a name for a cluster, not the whole message).
MAX_TEMPLATE = 160

#: Signatures that point at the machine rather than the code: Xid and ECC errors, NCCL and
#: InfiniBand network failures, illegal memory accesses, a GPU fallen off the bus.
HARDWARE = re.compile(
    r"\bXid\b|\bECC\b|uncorrectable|illegal memory access|fallen off the bus|"
    r"NET/IB|ibv_|remote process exited|network error|Connection reset by peer|"
    r"ncclRemoteError|ncclSystemError|NVLink|hardware", re.I)


def template(line: str) -> str:
    """``line`` with its varying parts masked (see the module docstring)."""
    text = " ".join(line.split())
    for pattern, mask in _MASKS:
        text = pattern.sub(mask, text)
    text = re.sub(r"(?:<N>\s*,?\s*){2,}", "<N>... ", text).strip()
    return text[:MAX_TEMPLATE]


def signature(family: str, line: str) -> str:
    """The cluster key of a failure: ``family: template``."""
    return f"{family}: {template(line)}" if line else family


def is_hardware(line: str) -> bool:
    """Whether the deciding line looks like a hardware or network fault."""
    return bool(HARDWARE.search(line))
