"""The exceptions of the restricted unpickler: every failure is an :class:`UnpickleError`."""

from __future__ import annotations


class UnpickleError(ValueError):
    """The input is not a pickle this module can read safely (any reason).

    ``globals_seen`` holds the dotted names the pickle had referenced before it failed, and
    ``attribute_paths_seen`` the ``(module, dotted qualname)`` pairs among them (set by
    :func:`~autopsy.formats.unpickle.loader.scan_stream`): a payload followed by bytes that
    make the parse fail (an opcode that does not fit) is still reported.
    """

    globals_seen: tuple[str, ...] = ()
    attribute_paths_seen: tuple[tuple[str, str], ...] = ()


class PickleTruncated(UnpickleError):
    """The input ended before the pickle's ``STOP`` opcode."""


class PickleLimitExceeded(UnpickleError):
    """The input would exceed a size, opcode-count or nesting limit."""
