"""Stack dumps in rank logs: Python's ``faulthandler`` and ``py-spy dump``.

A hung job's most useful evidence is where each rank is. Two writers print it:

* ``faulthandler`` (``dump_traceback_later``, ``register(SIGUSR1)``, a fatal signal)::

      Thread 0x00007f1c93404b80 (most recent call first):
        File "/job/train.py", line 20 in __getitem__
        File ".../torch/utils/data/dataloader.py", line 725 in __next__

  (``Current thread 0x...`` marks the thread that held the GIL);
* ``py-spy dump --pid N``::

      Thread 11792 (idle): "MainThread"
          Shards.__getitem__ (train.py:20)
          _BaseDataLoaderIter.__next__ (torch/utils/data/dataloader.py:725)

Each thread becomes one ``stack_dump`` event: its frames innermost first (function, file,
line), its id and name, and whether it is the main thread (py-spy's ``MainThread``; for
faulthandler, the thread whose outermost frame is ``<module>``). Frames past
:data:`MAX_FRAMES` are dropped (the innermost are kept).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

#: Frames kept per thread (innermost first): the wait and its callers up to the loop.
MAX_FRAMES = 48
#: Lines read after a thread header before giving up on its end.
MAX_STACK_LINES = 400

FAULT_HEADER = re.compile(r"^(Current thread|Thread) (0x[0-9A-Fa-f]+)(?: \[([^\]]*)\])? "
                          r"\(most recent call first\):\s*$")
_FAULT_FRAME = re.compile(r'^\s+File "([^"]+)", line (\d{1,9}) in (.+?)\s*$')
PYSPY_HEADER = re.compile(r'^Thread (\d+|0x[0-9A-Fa-f]+) \(([^)]*)\)(?:: "(.*)")?\s*$')
_PYSPY_FRAME = re.compile(r"^\s{2,}(\S.*?) \((.+):(\d{1,9})\)\s*$")


def parse_faulthandler(header: str, lines: Iterable[str]) -> dict[str, Any] | None:
    """One faulthandler thread: the header line and the lines after it."""
    m = FAULT_HEADER.match(header.strip() if header[:1] != " " else header)
    if m is None:
        return None
    frames = []
    for n, text in enumerate(lines):
        if n >= MAX_STACK_LINES:
            break
        f = _FAULT_FRAME.match(text)
        if f is None:
            break
        frames.append({"function": f.group(3), "file": f.group(1), "line": int(f.group(2))})
    if not frames:
        return None
    return {"tool": "faulthandler", "thread": m.group(2), "name": m.group(3) or "",
            "current": m.group(1) == "Current thread",
            "main": frames[-1]["function"] == "<module>", "frames": frames[:MAX_FRAMES],
            "depth": len(frames)}


def parse_pyspy(header: str, lines: Iterable[str]) -> dict[str, Any] | None:
    """One py-spy thread: the header line and the (indented) frames after it."""
    m = PYSPY_HEADER.match(header.strip())
    if m is None:
        return None
    frames = []
    for n, text in enumerate(lines):
        if n >= MAX_STACK_LINES:
            break
        f = _PYSPY_FRAME.match(text)
        if f is None:
            if text.startswith("        ") and frames:  # --locals: a frame's arguments
                continue
            break
        frames.append({"function": f.group(1), "file": f.group(2), "line": int(f.group(3))})
    if not frames:
        return None
    name = m.group(3) or ""
    return {"tool": "py-spy", "thread": m.group(1), "name": name, "state": m.group(2),
            "main": name == "MainThread", "frames": frames[:MAX_FRAMES], "depth": len(frames)}


def describe(details: dict[str, Any]) -> str:
    """One line: the thread and its innermost frame."""
    frames = details.get("frames") or []
    top = frames[0] if frames else {}
    who = details.get("name") or details.get("thread") or "?"
    return (f"{details.get('tool')} stack of thread {who}: {top.get('function', '?')} at "
            f"{top.get('file', '?')}:{top.get('line', '?')}")
