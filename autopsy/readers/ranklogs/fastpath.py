"""Fast path: marker offsets of a whole file found by ripgrep or GNU grep.

Searching the ~26 marker literals with ``bytes.find`` costs one pass over the data
per literal (about 120 MB/s in all); GNU ``grep -F`` or ``rg -F`` searches them all
in one pass at 1-2 GB/s. :func:`marker_offsets` runs one over one plain file (the
``rg`` of the ``ripgrep`` wheel of the ``[fast]`` extra, else GNU grep, else an
``rg`` on ``PATH``) with ``-o -n -b`` (line number and byte offset of every match),
and returns them, or None when no tool is there or it failed.

The result is only a hint. The scanner maps it onto each block and checks every
offset holds a marker; any block whose offsets do not check out (or that the tool
did not cover, or that lost bytes to an over-long line) is searched by
``bytes.find`` instead, so events and scalars are identical either way (tested in
``tests/test_ranklogs_fastpath.py``). Only the literals are passed (as ``-e``
arguments, ``-F``); nothing from the log is executed.

``AUTOPSY_RANKLOGS_SEARCH`` picks the engine: ``rg``, ``grep``, ``python`` (no
subprocess), or unset / ``auto``.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sysconfig
import threading
from array import array
from bisect import bisect_left
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from autopsy.readers.ranklogs.markers import ALL_MARKERS, ALL_RE, EVENT_MARKERS, EVENT_RE

ENV = "AUTOPSY_RANKLOGS_SEARCH"
#: Give up on the tool after this many seconds for one file (then bytes.find).
TIMEOUT_S = 120.0
#: Stop reading the tool's output past this many matches (then bytes.find).
MAX_MATCHES = 2_000_000
#: Smaller files are searched in-process: starting the tool costs more (~3 ms).
MIN_BYTES = 512 << 10


@lru_cache(maxsize=4)
def _tool(choice: str) -> tuple[str, str] | None:
    """``(kind, executable)`` of the search tool to use, or None.

    ``auto`` takes the ``rg`` installed beside this Python (the ``ripgrep`` wheel of
    the ``[fast]`` extra: 14.1 searched 40 MB in 0.02 s here), else GNU grep (0.045 s),
    else any ``rg`` on ``PATH`` (Debian's 13.0 took 0.08 s; a pyenv shim adds more).
    """
    if choice == "python":
        return None
    own = _own_rg()
    if choice in ("auto", "rg") and own:
        return "rg", own
    if choice in ("auto", "grep"):
        grep = _gnu_grep()
        if grep:
            return "grep", grep
        if choice == "grep":
            return None
    rg = shutil.which("rg")
    return ("rg", rg) if rg else None


def _own_rg() -> str | None:
    """The ``rg`` binary in this interpreter's scripts folder, if there is one."""
    folder = sysconfig.get_path("scripts")
    if not folder:
        return None
    path = Path(folder) / ("rg.exe" if os.name == "nt" else "rg")
    return str(path) if path.is_file() and os.access(path, os.X_OK) else None


def _gnu_grep() -> str | None:
    grep = shutil.which("grep")
    if not grep:
        return None
    try:
        version = subprocess.run([grep, "--version"], capture_output=True, timeout=10,
                                 env=_env()).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    return grep if b"GNU grep" in version else None


def engine() -> str:
    """The engine in use: ``rg``, ``grep`` or ``python``."""
    tool = _tool(os.environ.get(ENV, "auto").strip().lower() or "auto")
    return tool[0] if tool else "python"


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["LC_ALL"] = "C"  # bytes, no locale: identical to bytes.find
    env.pop("GREP_OPTIONS", None)
    env.pop("RIPGREP_CONFIG_PATH", None)
    return env


#: Address space the search tool may take (``ulimit -v``). The tools hold a whole line in
#: memory: an 800 MB line without a newline (a dumped tensor, a bar never ended) made rg take
#: 930 MB. Under this limit the tool fails on such a line and the file is searched in Python,
#: which keeps only a line's last 64 KiB; rg and GNU grep need about 20 MB otherwise.
TOOL_MEMORY = 128 << 20


def _command(kind: str, exe: str, path: Path,
             markers: tuple[bytes, ...] = ALL_MARKERS) -> list[str]:
    pats = [a for m in markers for a in ("-e", m.decode("latin-1"))]
    if kind == "rg":
        cmd = [exe, "--no-config", "--no-mmap", "--text", "--fixed-strings", "--only-matching",
               "--byte-offset", "--line-number", "--no-filename", "--no-heading",
               "--color", "never", "--encoding", "none", "--no-ignore", "--hidden",
               *pats, "--", str(path)]
    else:
        # -n -b -o: "line:offset:match" (rg's order too), so the scanner need not count lines.
        cmd = [exe, "-a", "-F", "-o", "-n", "-b", "-h", "--color=never", *pats, "--",
               str(path)]
    return _limited(cmd)


def _limited(cmd: list[str]) -> list[str]:
    """``cmd`` run under ``ulimit -v`` :data:`TOOL_MEMORY` by ``/bin/sh`` (the limit and the
    arguments are passed as positional parameters, never as shell text)."""
    if not os.path.exists("/bin/sh"):
        return cmd
    return ["/bin/sh", "-c", 'ulimit -v "$0" 2>/dev/null; exec "$@"', str(TOOL_MEMORY >> 10),
            *cmd]


@dataclass
class Found:
    """What the tool found in one file: match offsets (sorted), their line numbers
    (1-based; None when the tool gave none) and the file size it covered.

    ``events_only``: the offsets are of the event markers alone (a metric-dense file,
    where every line holds a metric marker: the scanner finds those itself, by line
    shape)."""

    offsets: array
    lines: array | None
    covered: int
    events_only: bool = False


#: Matches of all markers this close together (bytes per match, on average, over the first
#: :data:`DENSE_CHECK` matches) make a file metric-dense: the tool is run again for the event
#: markers alone, since reading one output line per log line would cost more than the
#: scanner's own search.
DENSE_BYTES = 512
DENSE_CHECK = 4096


def marker_offsets(path: Path) -> Found | None:
    """Byte offsets (and line numbers) of marker matches in ``path``.

    None when no tool is available, the file is compressed or smaller than
    :data:`MIN_BYTES`, or the tool failed. A metric-dense file gives the offsets of the
    event markers alone (``events_only``).
    """
    tool = _tool(os.environ.get(ENV, "auto").strip().lower() or "auto")
    if tool is None or path.name.endswith(".gz"):
        return None
    found = _run(tool, path, ALL_MARKERS, dense_check=True)
    if found == "dense":
        found = _run(tool, path, EVENT_MARKERS, dense_check=False)
        if isinstance(found, Found):
            found.events_only = True
    return found if isinstance(found, Found) else None


def _run(tool: tuple[str, str], path: Path, markers: tuple[bytes, ...],
         dense_check: bool) -> Found | str | None:
    """One run of the tool; ``"dense"`` when it was stopped for a metric-dense file."""
    try:
        size = path.stat().st_size
        if size < MIN_BYTES:
            return None
        proc = subprocess.Popen(_command(*tool, path, markers), stdout=subprocess.PIPE,
                                stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL,
                                env=_env())
    except (OSError, ValueError):
        return None
    offsets = array("q")
    lines = array("q")
    ok = True
    dense = False
    timer = threading.Timer(TIMEOUT_S, proc.kill)  # a stuck tool (a hung mount...) is killed
    timer.daemon = True
    timer.start()
    try:
        assert proc.stdout is not None
        for raw in proc.stdout:
            num, sep, raw = raw.partition(b":")
            if not sep or not num.isdigit():
                ok = False
                break
            lines.append(int(num))
            head, sep, _ = raw.partition(b":")
            if not sep or not head.isdigit() or len(offsets) >= MAX_MATCHES:
                ok = False
                break
            offsets.append(int(head))
            if dense_check and len(offsets) == DENSE_CHECK and \
                    offsets[-1] < DENSE_CHECK * DENSE_BYTES:
                dense = True
                ok = False
                break
    finally:
        timer.cancel()
        if not ok:
            proc.kill()
        try:
            rc = proc.wait(timeout=TIMEOUT_S)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
            rc = -1
        if proc.stdout is not None:
            proc.stdout.close()
    if dense:
        return "dense"
    if not ok or rc not in (0, 1):
        return None
    try:
        if path.stat().st_size != size:  # written meanwhile: trust nothing
            return None
    except OSError:
        return None
    if any(offsets[i] > offsets[i + 1] for i in range(len(offsets) - 1)):
        return None  # the tools print in file order; anything else is not understood
    return Found(offsets, lines, size)


def block_hits(data: bytes, offset: int, found: Found
               ) -> tuple[list[int], list[int] | None] | None:
    """Line starts of ``data`` (at file ``offset``) holding a marker, and their lines.

    The line numbers are None when the tool gave none. The whole result is None
    when the tool's offsets cannot be trusted for this block; the caller then
    searches it with ``bytes.find``.
    """
    offsets = found.offsets
    end = offset + len(data)
    if offset < 0 or end > found.covered:
        return None
    lo = bisect_left(offsets, offset)
    hi = bisect_left(offsets, end, lo)
    starts: list[int] = []
    nums: list[int] = []
    lines = found.lines
    last = -1
    rfind = data.rfind
    at_marker = EVENT_RE.match if found.events_only else ALL_RE.match
    for i in range(lo, hi):
        pos = offsets[i] - offset
        if at_marker(data, pos) is None:
            return None
        if pos < last:
            continue
        starts.append(rfind(b"\n", 0, pos) + 1)
        if lines is not None:
            nums.append(lines[i])
        nl = data.find(b"\n", pos)
        last = nl if nl >= 0 else len(data)
    return starts, (nums if lines is not None else None)
