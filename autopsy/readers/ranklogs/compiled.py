"""The rank-log reader's optional compiled module, ``_shapematch`` (see ``shapes`` and
``markers``): None where it was not built, or where ``AUTOPSY_RANKLOGS_SHAPES=regex`` asks
for the pure-Python paths (which give the same results)."""

from __future__ import annotations

import os
from typing import Any

#: ``AUTOPSY_RANKLOGS_SHAPES=regex`` keeps every compiled path off (``=0`` turns the line
#: shapes off altogether: ``scan.SHAPES_ENV``).
ENV = "AUTOPSY_RANKLOGS_SHAPES"


def compiled() -> Any:
    """The ``_shapematch`` module, or None (not built, or turned off by :data:`ENV`)."""
    if os.environ.get(ENV, "").lower() == "regex":
        return None
    try:
        from autopsy.readers.ranklogs import _shapematch
    except ImportError:
        return None
    return _shapematch
