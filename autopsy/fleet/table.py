"""Write a fleet's rows: ``.csv``, ``.jsonl``, ``.parquet`` (the ``parquet`` extra), ``.html``.

List columns (``ranks``, ``hosts``, ``problem_kinds``) stay lists in JSON Lines and
Parquet and are joined with ``;`` in CSV.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

from autopsy.errors import UsageError

TABLE_FORMATS = (".csv", ".jsonl", ".parquet", ".html")
LIST_COLUMNS = ("ranks", "hosts", "problem_kinds")


def write_rows(rows: list[dict[str, Any]], path: Path, summary: Any = None) -> None:
    """Write ``rows`` to ``path`` in the format its extension names."""
    suffix = path.suffix.lower()
    if suffix not in TABLE_FORMATS:
        raise UsageError(f"-o {path}: the table is written as "
                         f"{', '.join(TABLE_FORMATS)} (by the extension)")
    if suffix == ".jsonl":
        with open(path, "w", encoding="utf-8") as fh:
            for row in rows:
                fh.write(json.dumps(row, allow_nan=False, ensure_ascii=False) + "\n")
    elif suffix == ".csv":
        columns = list(rows[0]) if rows else []
        with open(path, "w", encoding="utf-8", newline="") as fh:
            writer = csv.DictWriter(fh, columns)
            writer.writeheader()
            for row in rows:
                writer.writerow({k: ";".join(map(str, v)) if k in LIST_COLUMNS else v
                                 for k, v in row.items()})
    elif suffix == ".parquet":
        try:
            import pyarrow as pa
            import pyarrow.parquet as pq
        except ImportError as exc:
            raise UsageError("-o .parquet needs pyarrow: pip install "
                             "'train-autopsy[parquet]'") from exc
        pq.write_table(pa.Table.from_pylist(rows), path)
    else:
        from autopsy.fleet.html import render_fleet_html

        with open(path, "w", encoding="utf-8") as fh:
            render_fleet_html(rows, summary, fh)
