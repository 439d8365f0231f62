"""The exceptions of the restricted unpickler: every failure is an :class:`UnpickleError`."""

from __future__ import annotations


class UnpickleError(ValueError):
    """The input is not a pickle this module can read safely (any reason)."""


class PickleTruncated(UnpickleError):
    """The input ended before the pickle's ``STOP`` opcode."""


class PickleLimitExceeded(UnpickleError):
    """The input would exceed a size, opcode-count or nesting limit."""
