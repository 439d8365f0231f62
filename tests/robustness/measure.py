"""Run an ``autopsy`` command as a child process and measure its wall time and peak memory.

Peak memory is the largest sum of the resident set sizes of the child and all its
descendants (the ripgrep fast path runs ``rg`` children), sampled every 10 ms with
psutil; each process's own high-water mark (``VmHWM``) is read at every sample too, so
a short spike between samples still counts for that process.
"""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import psutil

MB = 1024 * 1024


@dataclass
class Measured:
    """What one run cost and printed."""

    rc: int
    wall_s: float
    peak_bytes: int
    stdout: str
    stderr: str

    @property
    def peak_mb(self) -> float:
        """Peak memory of the process tree in MiB."""
        return self.peak_bytes / MB


def _high_water(pid: int) -> int:
    """The process's peak resident set (``VmHWM`` of ``/proc/PID/status``), 0 if unknown."""
    try:
        with open(f"/proc/{pid}/status", "rb") as fh:
            for line in fh:
                if line.startswith(b"VmHWM:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return 0


def run_autopsy(*args: str | Path, timeout: float = 120.0) -> Measured:
    """``python -m autopsy ARGS`` in a child, with its time and process-tree peak memory."""
    cmd = [sys.executable, "-m", "autopsy", *map(str, args)]
    start = time.monotonic()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    chunks: dict[str, bytes] = {}

    def drain(name: str) -> None:
        stream = proc.stdout if name == "out" else proc.stderr
        assert stream is not None
        chunks[name] = stream.read()

    readers = [threading.Thread(target=drain, args=(n,)) for n in ("out", "err")]
    for t in readers:
        t.start()
    root = psutil.Process(proc.pid)
    peak = 0
    hwm: dict[int, int] = {}
    while proc.poll() is None:
        if time.monotonic() - start > timeout:
            proc.kill()
            proc.wait()
            raise AssertionError(f"autopsy {' '.join(map(str, args))} ran past {timeout} s")
        try:
            tree = [root, *root.children(recursive=True)]
            total = 0
            for p in tree:
                try:
                    total += p.memory_info().rss
                    hwm[p.pid] = max(hwm.get(p.pid, 0), _high_water(p.pid))
                except psutil.Error:
                    pass
            peak = max(peak, total)
        except psutil.Error:
            pass
        time.sleep(0.01)
    wall = time.monotonic() - start
    for t in readers:
        t.join()
    return Measured(proc.returncode, wall, max(peak, max(hwm.values(), default=0)),
                    chunks.get("out", b"").decode(errors="replace"),
                    chunks.get("err", b"").decode(errors="replace"))
