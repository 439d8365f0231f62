"""Resource limits of the restricted unpickler, and the bounded reader that enforces them."""

from __future__ import annotations

from typing import IO

from autopsy.formats.unpickle.errors import PickleLimitExceeded, PickleTruncated, UnpickleError

#: Default cap on the bytes one pickle may take (256 MiB).
DEFAULT_MAX_BYTES = 256 * 1024 * 1024
#: Default cap on the opcodes one pickle may execute (bounds objects made).
DEFAULT_MAX_OPS = 10_000_000
#: Default cap on nesting: open marks, and depth of the result.
DEFAULT_MAX_DEPTH = 256
#: Longest ``LONG1``/``LONG4`` integer accepted, in bytes.
MAX_LONG_BYTES = 64 * 1024
#: Reads above this size are done in chunks of this size.
_CHUNK = 1 << 20


class BoundedInput:
    """A bounded, chunked reader over a binary stream."""

    def __init__(self, fh: IO[bytes], max_bytes: int) -> None:
        self._read = fh.read
        self._readline = fh.readline
        self.pos = 0
        self.limit = max_bytes

    def read(self, n: int) -> bytes:
        if n < 0:
            raise UnpickleError(f"negative length {n} at offset {self.pos}")
        if self.pos + n > self.limit:
            raise PickleLimitExceeded(
                f"a length of {n:,} bytes at offset {self.pos:,} goes past the "
                f"{self.limit:,}-byte limit"
            )
        if n <= _CHUNK:
            data = self._read(n)
        else:
            parts: list[bytes] = []
            left = n
            while left:
                part = self._read(min(left, _CHUNK))
                if not part:
                    break
                parts.append(part)
                left -= len(part)
            data = b"".join(parts)
        if len(data) < n:
            raise PickleTruncated(
                f"input ends at offset {self.pos + len(data):,}: {n:,} bytes were declared"
            )
        self.pos += n
        return data

    def readline(self) -> bytes:
        left = self.limit - self.pos
        line = self._readline(left + 1)
        if not line.endswith(b"\n"):
            if len(line) > left:
                raise PickleLimitExceeded(f"a text line at offset {self.pos:,} is too long")
            raise PickleTruncated(f"input ends inside a text line at offset {self.pos:,}")
        self.pos += len(line)
        return line[:-1]
