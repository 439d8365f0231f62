"""Opening a checkpoint file for reading: regular files only, errors as one line."""

from __future__ import annotations

import os
import stat
from typing import IO

from autopsy.formats.ckpterrors import CheckpointFormatError


def open_checkpoint(name: str) -> tuple[IO[bytes], int]:
    """Open a regular file for binary reading; return it and its size.

    A FIFO, device or directory is refused before it is opened (opening a FIFO
    would block).

    Raises:
        CheckpointFormatError: missing, unreadable, not a regular file.
    """
    try:
        info = os.stat(name)
        if not stat.S_ISREG(info.st_mode):
            raise CheckpointFormatError(f"{name}: not a regular file")
        fh = open(name, "rb")
    except OSError as exc:
        raise CheckpointFormatError(f"{name}: cannot open: {exc.strerror or exc}") from exc
    return fh, os.fstat(fh.fileno()).st_size
