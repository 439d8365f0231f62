"""The exception of the checkpoint format readers (torch files, safetensors)."""

from __future__ import annotations


class CheckpointFormatError(ValueError):
    """A checkpoint file cannot be read at all; the message is one readable line.

    ``unsafe`` and ``unverified`` hold ``(dotted global, why)`` of the globals its pickle had
    referenced before the read failed (a payload masked by the bytes after it)."""

    def __init__(self, *args: object) -> None:
        super().__init__(*args)
        self.unsafe: list[tuple[str, str]] = []
        self.unverified: list[tuple[str, str]] = []
