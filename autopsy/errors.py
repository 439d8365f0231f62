"""Typed exceptions of the library.

The CLI maps every :class:`AutopsyError` to a one-line message and exit code 2;
no traceback reaches a user for bad input.
"""

from __future__ import annotations


class AutopsyError(Exception):
    """Base class of the errors autopsy raises on purpose."""


class RunNotFound(AutopsyError):
    """The path given does not exist or cannot be opened."""


class NothingReadable(AutopsyError):
    """The path exists but no file in it could be read as part of a run."""


class UsageError(AutopsyError):
    """An argument or option has a value the library cannot work with."""
