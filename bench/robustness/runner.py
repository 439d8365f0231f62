"""Run many ``autopsy`` commands fast: each in a process forked from one that has already
imported autopsy, with a timeout, its exit code, output and peak memory.

A fresh interpreter costs about 0.6 s of imports per case; ten thousand cases on two cores
would spend most of an hour importing. Here the parent imports autopsy and the libraries it
uses once, then forks one child per case (a few milliseconds): the child runs the command
exactly as the console script does (``autopsy._entry.main`` with ``sys.argv`` set), in its
own process group, with stdout and stderr in files, and leaves its peak resident memory
(``ru_maxrss`` of itself plus that of the largest child it reaped: the process pool's
workers, ``rg``) beside them. A child past the timeout is killed with its whole group. The
parent runs no threads, so the fork is safe.

The peak counts the pages inherited from the parent that the child touches (about 150 MB
of imports), so it overstates what a fresh process needs: a conservative figure for a
bound.
"""

from __future__ import annotations

import os
import resource
import signal
import sys
import time
import traceback
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

#: Exit code of a child whose command raised out of autopsy's entry point.
ESCAPED = 70


@dataclass
class Outcome:
    """What one command did."""

    rc: int | None
    wall_s: float
    peak_mb: float
    stdout: str
    stderr: str
    timed_out: bool = False


def preload() -> None:
    """Import what the commands import, once, in the parent."""
    import autopsy._entry
    import autopsy.api
    import autopsy.ckpt
    import autopsy.cli
    import autopsy.report.json_report
    import autopsy.report.text_report  # noqa: F401
    from autopsy.readers.registry import reader_modules
    from autopsy.rules.registry import load_rules

    reader_modules()
    load_rules()


def _child(argv: list[str], cwd: Path, out: Path) -> None:
    """The forked child: run ``autopsy ARGV``, then leave its peak memory; never returns."""
    code = 0
    try:
        os.setpgid(0, 0)
        os.chdir(cwd)
        for fd, name in ((1, "stdout"), (2, "stderr")):
            target = os.open(out / name, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
            os.dup2(target, fd)
            os.close(target)
        sys.argv = ["autopsy", *argv]
        from autopsy._entry import main

        try:
            main()
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
        except BaseException:  # a traceback out of the entry point: the defect sought
            traceback.print_exc()
            code = ESCAPED
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        except Exception:
            pass
        own = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        kids = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
        (out / "rusage").write_text(f"{own} {kids}\n")
    finally:
        os._exit(code)


def _outcome(out: Path, status: int, wall: float, timed_out: bool) -> Outcome:
    def text(name: str) -> str:
        try:
            return (out / name).read_text(errors="replace")
        except OSError:
            return ""

    rc = os.waitstatus_to_exitcode(status) if not timed_out else None
    try:
        own, kids = (int(x) for x in text("rusage").split())
        peak = (own + kids) / 1024
    except ValueError:
        peak = float("nan")
    return Outcome(rc, wall, peak, text("stdout"), text("stderr"), timed_out)


def run_many(items: Iterable[tuple[object, list[str], Path, Path]], jobs: int,
             timeout: float) -> Iterator[tuple[object, Outcome]]:
    """Run ``(key, argv, cwd, out folder)`` items, ``jobs`` at a time; yield ``(key,
    Outcome)`` as each ends (in the order they end)."""
    pending = iter(items)
    running: dict[int, tuple[object, float, Path]] = {}
    exhausted = False
    sys.stdout.flush()
    sys.stderr.flush()
    while running or not exhausted:
        while not exhausted and len(running) < jobs:
            try:
                key, argv, cwd, out = next(pending)
            except StopIteration:
                exhausted = True
                break
            out.mkdir(parents=True, exist_ok=True)
            pid = os.fork()
            if pid == 0:
                _child(argv, cwd, out)
            running[pid] = (key, time.monotonic(), out)
        if not running:
            break
        pid, status = os.waitpid(-1, os.WNOHANG)
        if pid:
            key, start, out = running.pop(pid)
            yield key, _outcome(out, status, time.monotonic() - start, False)
            continue
        now = time.monotonic()
        for pid, (key, start, out) in list(running.items()):
            if now - start > timeout:
                try:
                    os.killpg(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                _, status = os.waitpid(pid, 0)
                running.pop(pid)
                yield key, _outcome(out, status, now - start, True)
        time.sleep(0.002)
