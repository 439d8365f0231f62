"""How the torchrun workers of the sample runs end when they succeed: ``os._exit(0)``.

In torch 2.13 (CPU, gloo), destroying a ``ProcessGroupGloo`` can deadlock: its destructor joins
the group's run-loop thread while holding the GIL that thread waits for. It runs in
``dist.destroy_process_group()`` or, without that call, at interpreter exit. About one healthy
4-rank launch in three hung that way after ``training finished`` until the launcher's timeout,
so ``make.py --check`` could not rely on them. A worker that finishes therefore never destroys
its process group: it flushes its output and leaves with ``os._exit(0)``.

A worker that fails still raises as before, so that the ranks' failure cascade (the culprit's
traceback, the others' ``Connection closed by peer`` or timeout, torchelastic's report) is the
one an ordinary script shows: ending it with ``os._exit`` would reset the peers' connections
instead and change which rank torchelastic blames.
"""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Callable
from typing import NoReturn


def run_then_exit(main: Callable[[], object]) -> NoReturn:
    """Run a worker's ``main``; when it returns, flush the output and ``os._exit(0)`` without
    tearing down the process group. An exception propagates as usual."""
    main()
    logging.shutdown()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)
