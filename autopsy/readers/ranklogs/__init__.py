"""Rank logs: every rank's text log of a distributed job, read into events and scalars.

The reader module interface (``NAME``, ``sniff``, ``read``, ``read_group``) lives in
:mod:`autopsy.readers.ranklogs.reader` and is re-exported here, so discovery can
name this package. See ``lines`` (robust streaming), ``layout`` (rank and attempt
attribution), ``markers`` (literal search), ``events`` and ``metrics`` (parsers).
"""

from autopsy.readers.ranklogs.reader import NAME, read, read_group, sniff

__all__ = ["NAME", "read", "read_group", "sniff"]
