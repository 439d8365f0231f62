"""Export of the long scalars frame (``autopsy timeline``): CSV, JSON or Parquet."""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from typing import IO, TYPE_CHECKING

from autopsy.report.jsonable import NON_FINITE

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd

#: The exported columns, exactly, in this order.
TIMELINE_COLUMNS: tuple[str, ...] = (
    "step", "tag", "raw_tag", "value", "wall_time", "rank", "segment", "source",
)

FORMATS: tuple[str, ...] = ("csv", "json", "parquet")


def select_tags(scalars: pd.DataFrame, tags: Sequence[str]) -> pd.DataFrame:
    """Keep the rows whose canonical or raw tag is one of ``tags`` (all if empty)."""
    if not tags:
        return scalars
    wanted = set(tags)
    mask = scalars["tag"].isin(wanted) | scalars["raw_tag"].isin(wanted)
    return scalars.loc[mask]


def select_sources(scalars: pd.DataFrame, globs: Sequence[str]) -> pd.DataFrame:
    """Keep the rows whose ``source`` matches one of the glob patterns (all if none)."""
    if not globs:
        return scalars
    from fnmatch import fnmatchcase

    names = scalars["source"].astype(str)
    wanted = {n for n in names.unique() if any(fnmatchcase(n, g) for g in globs)}
    return scalars.loc[names.isin(wanted)]


#: Rows written per chunk by :func:`write_csv` (memory: one chunk's text at a time).
CSV_CHUNK_ROWS = 200_000


def _csv_cell(text: str) -> str:
    """``text`` quoted as the csv module's QUOTE_MINIMAL does, where it needs to be."""
    if any(c in text for c in ',"\n\r'):
        return '"' + text.replace('"', '""') + '"'
    return text


def _labels(column: pd.Series) -> tuple[list[str], object]:
    """A string column as (each category's CSV cell, the rows' codes): a tag or source
    is quoted once per distinct value, not once per row."""
    import pandas as pd

    cat = column if isinstance(column.dtype, pd.CategoricalDtype) else \
        column.astype(str).astype("category")
    cells = [_csv_cell(str(c)) for c in cat.cat.categories]
    return cells, cat.cat.codes.to_numpy()


def write_csv(frame: pd.DataFrame, out: IO[str]) -> None:
    """CSV with a header; ``value`` keeps NaN/Inf as ``nan``/``inf``/``-inf``.

    Empty cells mean "unknown" (``wall_time``, ``rank``). Written column by column in
    chunks of :data:`CSV_CHUNK_ROWS` rows (plain Python strings joined once per chunk, the
    string columns quoted once per distinct value), so the export takes about as long as
    reading the run, and memory one chunk's text.
    """
    out.write(",".join(TIMELINE_COLUMNS) + "\n")
    n = len(frame)
    if not n:
        return
    steps = frame["step"].to_numpy()
    values = frame["value"].to_numpy(dtype=float)
    walls = frame["wall_time"].to_numpy(dtype=float)
    ranks = frame["rank"].astype("float64").to_numpy()
    segments = frame["segment"].to_numpy()
    tag_cells, tag_codes = _labels(frame["tag"])
    raw_cells, raw_codes = _labels(frame["raw_tag"])
    src_cells, src_codes = _labels(frame["source"])
    for lo in range(0, n, CSV_CHUNK_ROWS):
        hi = min(n, lo + CSV_CHUNK_ROWS)
        wall = walls[lo:hi]
        rank = ranks[lo:hi]
        cols = (
            map(str, steps[lo:hi].tolist()),
            (tag_cells[c] for c in tag_codes[lo:hi].tolist()),
            (raw_cells[c] for c in raw_codes[lo:hi].tolist()),
            map(repr, values[lo:hi].tolist()),
            ("" if w != w else repr(w) for w in wall.tolist()),
            ("" if r != r else str(int(r)) for r in rank.tolist()),
            map(str, segments[lo:hi].tolist()),
            (src_cells[c] for c in src_codes[lo:hi].tolist()),
        )
        out.write("\n".join(map(",".join, zip(*cols, strict=True))) + "\n")


def write_json(frame: pd.DataFrame, out: IO[str]) -> None:
    """A JSON array of row objects; non-finite values as ``"NaN"``/``"Infinity"``."""
    out.write("[")
    cols = list(TIMELINE_COLUMNS)
    arrays = {c: frame[c].to_numpy() for c in cols}
    arrays["rank"] = frame["rank"].astype("float64").to_numpy()
    for i in range(len(frame)):
        row = {}
        for c in cols:
            v = arrays[c][i]
            if c in ("value", "wall_time"):
                fv = float(v)
                row[c] = fv if math.isfinite(fv) else (None if c == "wall_time" and
                                                         math.isnan(fv) else
                                                         NON_FINITE[repr(fv)])
            elif c in ("step", "segment"):
                row[c] = int(v)
            elif c == "rank":
                row[c] = None if math.isnan(v) else int(v)
            else:
                row[c] = str(v)
        out.write(("\n  " if i == 0 else ",\n  ") + json.dumps(row, allow_nan=False))
    out.write("\n]\n" if len(frame) else "]\n")


def write_parquet(frame: pd.DataFrame, path: str) -> None:
    """Parquet (needs pyarrow: ``pip install 'train-autopsy[parquet]'``)."""
    frame.loc[:, list(TIMELINE_COLUMNS)].reset_index(drop=True).to_parquet(path, index=False)
