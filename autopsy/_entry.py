"""The console script's entry point: Ctrl-C at any moment ends quietly.

``autopsy.cli`` imports click and the command modules; a Ctrl-C while they load (the
first tens of milliseconds) would otherwise print a traceback from an import. Here the
import itself is guarded, as click guards the commands once they run.
"""

from __future__ import annotations

import sys

from autopsy.exitcodes import INTERRUPTED


def main() -> None:
    """Run the ``autopsy`` command; Ctrl-C exits with :data:`~autopsy.exitcodes.INTERRUPTED`
    and one line, never a traceback."""
    try:
        from autopsy.cli import main as run

        run()
    except KeyboardInterrupt:
        sys.stderr.write("autopsy: interrupted\n")
        sys.exit(INTERRUPTED)
