"""Exit codes of the ``autopsy`` command: a contract scripts rely on."""

from __future__ import annotations

#: The run is healthy / the checkpoint is resumable / an export succeeded.
OK = 0
#: A failure was found / the checkpoint is not resumable.
FAILURE = 1
#: Usage error, or nothing readable at the path given.
USAGE = 2
#: The run was read but no decision could be made (verdict ``unknown``).
UNDECIDED = 3
#: Ctrl-C (SIGINT) before a command had started (the shell's convention, 128 + 2).
INTERRUPTED = 130



def for_family(family: str) -> int:
    """The exit code of ``autopsy analyze`` for a verdict family."""
    if family == "healthy":
        return OK
    if family == "unknown":
        return UNDECIDED
    return FAILURE


HELP_TEXT = (
    "Exit codes: 0 healthy (or resumable, or export written); 1 a failure was found "
    "(or not resumable); 2 usage error or nothing readable; 3 read, but could not decide "
    "(verdict unknown); 130 interrupted (Ctrl-C)."
)
