"""The JSON report: a stable, documented contract (see docs/json-report.md)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from autopsy._version import __version__
from autopsy.model.finding import Finding
from autopsy.model.run import Run
from autopsy.model.verdict import Verdict
from autopsy.report.jsonable import jsonable
from autopsy.report.summary import run_summary

#: Bumped on any incompatible change of the report's shape.
SCHEMA_VERSION = 1


def analyze_report(
    run: Run,
    verdict: Verdict,
    findings: Sequence[Finding] = (),
    skipped: Sequence[dict[str, str]] = (),
) -> dict[str, Any]:
    """Build the ``autopsy analyze`` JSON report as a dict (strict-JSON-able)."""
    return jsonable(
        {
            "schema_version": SCHEMA_VERSION,
            "autopsy_version": __version__,
            "run": run_summary(run),
            "verdict": verdict.to_dict(),
            "findings": [f.to_dict() for f in findings],
            "skipped": list(skipped),
            "problems": [p.to_dict() for p in run.problems],
        }
    )


def dumps(report: dict[str, Any]) -> str:
    """Serialise a report as strict JSON (no NaN literals), indented."""
    return json.dumps(report, indent=2, allow_nan=False, ensure_ascii=False) + "\n"


def rank_rows(status: Any) -> list[dict[str, Any]]:
    """The ``ranks`` array of the ``autopsy ranks`` report: one object per rank."""
    import pandas as pd

    keys = [str(k) for k in status.columns]
    columns = [status[k].astype(object).where(status[k].notna(), None).tolist()
               for k in status.columns]  # column by column: no Series per row
    rows = []
    for i, rank in enumerate(status.index.tolist()):
        item: dict[str, Any] = {"rank": None if pd.isna(rank) else rank}
        for key, column in zip(keys, columns, strict=True):
            value = column[i]
            item[key] = None if value is None or str(value) in ("<NA>", "nan") else value
        rows.append(item)
    return jsonable(rows)
