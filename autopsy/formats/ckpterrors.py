"""The exception of the checkpoint format readers (torch files, safetensors)."""

from __future__ import annotations


class CheckpointFormatError(ValueError):
    """A checkpoint file cannot be read at all; the message is one readable line."""
