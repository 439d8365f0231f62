"""Run an ``autopsy`` command as a child process and measure its wall time and peak memory.

Peak memory is the largest sum, over the child and all its descendants (the process
pool's workers, the ripgrep fast path's ``rg`` children), of each process's
proportional set size (PSS: a page shared by forked workers is counted once in all),
sampled every 10 ms with psutil. RSS would count the parent's pages again in every
forked worker.
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


def _pss(proc: psutil.Process) -> int:
    """The process's proportional set size (its RSS where PSS is not available)."""
    try:
        return int(proc.memory_full_info().pss)
    except (AttributeError, psutil.AccessDenied):
        return int(proc.memory_info().rss)


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
                    total += _pss(p)
                except psutil.Error:
                    pass
            peak = max(peak, total)
        except psutil.Error:
            pass
        time.sleep(0.01)
    wall = time.monotonic() - start
    for t in readers:
        t.join()
    return Measured(proc.returncode, wall, peak,
                    chunks.get("out", b"").decode(errors="replace"),
                    chunks.get("err", b"").decode(errors="replace"))
