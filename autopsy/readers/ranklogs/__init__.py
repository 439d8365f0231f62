"""Rank logs: every rank's text log of a distributed job, read into events and scalars.

The reader module interface (``NAME``, ``sniff``, ``read``, ``read_group``) lives in
:mod:`autopsy.readers.ranklogs.reader` and is re-exported here, so discovery can
name this package. Modules: ``lines`` (robust streaming), ``layout`` (rank and
attempt attribution), ``markers`` (literal search), ``fastpath`` (the same search
by grep/rg), ``events`` and ``metrics`` (the parsers), ``timestamps``, ``scan``
(one file, end to end).

Choices worth knowing:

* Only lines holding a marker literal are decoded and parsed; the rest is skipped.
  Files of 512 KiB and more are searched by GNU ``grep -F`` (else ``rg``) in one
  pass for the marker offsets and line numbers (``fastpath``); otherwise, and for
  any block those hits do not fit, by ``bytes.find`` per literal over 4 MiB blocks.
  Both give identical frames (tested); ``AUTOPSY_RANKLOGS_SEARCH=python`` forces
  the latter. A line longer than 64 KiB keeps its tail.
* One event per matching line: a rank's watchdog timeout usually yields two or
  three ``nccl_timeout`` rows (the "Watchdog caught" line, then "detected by
  watchdog at work ..." / "Timeout at NCCL work ..."); consumers group them by
  ``(rank, details["SeqNum"])``. A CUDA OOM raised in a traceback gives both a
  ``traceback`` and an ``oom`` row.
* ``rank`` comes from the path, then the launcher prefix (nested ones allowed),
  then the line (``[Rank N]``, ``[PG ... Rank N]``, ``OVERFLOW! Rank N``); for
  torchelastic ``local_rank`` and ``srun`` task ids it is that number (exact on
  one node). Indented continuation lines take the rank of the line they continue.
* ``step`` of an event is the last step logged on that rank before it, else a
  ``step``/``iteration`` number in the message, else NA.
* ``wall_time`` is read from ISO stamps as UTC; glog stamps (no year) leave it NaN
  and put ``time_of_day`` (seconds) in ``details``.
* HF Trainer dict lines take their step from the tqdm bar redrawn right after
  them (exact), else ``logging_steps`` found in the same log × their ordinal, else
  the ordinal; the guess is recorded as a ``step_guessed`` problem.
* ``segment`` is the torchrun attempt from the path plus the restarts seen inside
  one file (a training step going backwards on a rank).
"""

from autopsy.readers.ranklogs.reader import FORMATS, NAME, read, read_group, sniff

__all__ = ["FORMATS", "NAME", "read", "read_group", "sniff"]
