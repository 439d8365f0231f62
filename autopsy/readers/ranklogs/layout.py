"""Who wrote a line: rank and attempt from the path, the line prefix, or the line.

The rank comes from the path (torchrun ``--log-dir`` trees ``attempt_N/<rank>/``,
``rank3.log``, ``job-rank-3.out``, ``rank_3/``), else from a line prefix
(``[rank3]:``, ``[default3]:``, ``3:`` from ``srun --label``, ``[1,3]<stderr>:``
from mpirun), else from the line itself (``[Rank 3]`` in a NCCL message), in that
order. A pdsh ``host: `` prefix names a host, not a rank. A quote marker (``> ``) before a
log line pasted as a quote is removed first.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_ATTEMPT = re.compile(r"(?:^|/)attempt_(\d+)(?:/|$)")
_LOGDIR_RANK = re.compile(r"(?:^|/)attempt_\d+/(\d+)(?:/|$)")
_NAME_RANK = re.compile(r"(?:^|[^a-z])(?:rank|local_rank|proc|worker)[-_.]?(\d+)(?![\d])",
                        re.IGNORECASE)
_RANK_DIR = re.compile(r"(?:^|/)(?:rank|local_rank)[-_]?(\d+)/", re.IGNORECASE)

_PREFIX = re.compile(
    r"^(?:\[(?:rank|default)(?P<a>\d+)\]: ?"
    r"|(?P<b>\d{1,6}): "
    r"|\[(?P<job>\d+),(?P<c>\d+)\]<(?:stdout|stderr)>:"
    r"|(?P<host>[A-Za-z](?=[\w.-]*\d)[\w.-]*): )"
)
#: A Markdown/e-mail quote marker before a pasted log line (``> ``, ``>> ``).
_QUOTE = re.compile(r"(?:> ?)+(?=\S| +\S)")
_INLINE_RANK = re.compile(r"\[(?:PG [^\][]*?)?Rank (\d+)\]|\bOVERFLOW! Rank (\d+)\b|\[Rank (\d+)\]")


@dataclass(frozen=True)
class PathInfo:
    """What the path says about a log file."""

    rank: int | None
    attempt: int


def path_info(rel: str) -> PathInfo:
    """Rank and attempt from a log's path relative to the run root."""
    rel = rel.replace("\\", "/")
    attempt_m = _ATTEMPT.search(rel)
    attempt = (_small(attempt_m.group(1)) or 0) if attempt_m else 0
    m = _LOGDIR_RANK.search(rel)
    if m:
        return PathInfo(_small(m.group(1)), attempt)
    m = _RANK_DIR.search(rel)
    if m:
        return PathInfo(_small(m.group(1)), attempt)
    name = rel.rsplit("/", 1)[-1]
    m = _NAME_RANK.search(name)
    if m:
        return PathInfo(_small(m.group(1)), attempt)
    return PathInfo(None, attempt)


#: A rank or attempt number above this is no rank: it is read as none (a 20-digit "rank"
#: would not fit the 64-bit columns, and no job has that many ranks).
MAX_RANK = 2**31 - 1


def _small(digits: str) -> int | None:
    """``digits`` as a rank or attempt number, or None when above :data:`MAX_RANK`."""
    value = int(digits) if len(digits) <= 12 else MAX_RANK + 1
    return value if value <= MAX_RANK else None


@dataclass(frozen=True)
class Prefixed:
    """A line split into its launcher prefix and the rest."""

    rank: int | None
    host: str | None
    rest: str


def split_prefix(text: str) -> Prefixed:
    """Split launcher prefixes off ``text`` (see the module docstring).

    Nested prefixes (``[default1]:[rank1]: ``, torchrun ``--tee`` around a
    ``[rankN]:`` line) are all removed; the outermost rank wins.
    """
    rank: int | None = None
    host: str | None = None
    rest = text
    if rest.startswith(">"):  # a log pasted as a quote (``> 16/16 [====] - loss: ...``)
        q = _QUOTE.match(rest)
        if q is not None:
            rest = rest[q.end():]
    for _ in range(3):
        got = _split_one(rest)
        if got is None:
            break
        r, h, rest = got
        rank = r if rank is None else rank
        host = h if host is None else host
    return Prefixed(rank, host, rest)


def _split_one(text: str) -> tuple[int | None, str | None, str] | None:
    m = _PREFIX.match(text)
    if not m:
        return None
    rest = text[m.end():]
    for group in ("a", "b", "c"):
        if m.group(group) is not None:
            return _small(m.group(group)), None, rest
    host = m.group("host")
    if host and not _looks_like_word(host):
        return None, host, rest.lstrip(" ")
    return None


def _looks_like_word(token: str) -> bool:
    """Whether a ``token: `` start is text rather than a pdsh host name."""
    low = token.lower()
    return low.endswith(("error", "exception", "warning", "info")) or token.isupper()


def inline_rank(text: str) -> int | None:
    """A rank named inside the message (``[Rank 3]``, ``OVERFLOW! Rank 3``)."""
    m = _INLINE_RANK.search(text)
    if not m:
        return None
    for g in m.groups():
        if g is not None:
            return _small(g)
    return None
