"""One report of one run: what every renderer, the CLI, the fleet and library users share.

:class:`Report` carries the run, its diagnosis and, for a run of several ranks, the
per-rank status; :meth:`Report.to_dict` is the one JSON builder (``--format json`` of
``analyze`` and ``ranks``, a fleet's per-run report). Build one with
:func:`autopsy.api.report`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd

    from autopsy.model.run import Run
    from autopsy.rules.engine import Diagnosis


@dataclass(frozen=True)
class Report:
    """Everything a report of one run shows.

    Attributes:
        run: what was read.
        diagnosis: the verdict, the ranked findings, the skipped rules.
        rank_status: one row per rank (``autopsy.signals.ranks.rank_status``) for a run
            of several ranks (always for ``autopsy ranks``), else None.
    """

    run: Run
    diagnosis: Diagnosis
    rank_status: pd.DataFrame | None = None

    def to_dict(self) -> dict[str, Any]:
        """The JSON report as a dict (strict-JSON-able; see docs/json-report.md)."""
        from autopsy.report.json_report import analyze_report, rank_rows

        d = self.diagnosis
        out = analyze_report(self.run, d.verdict, d.findings, [s.to_dict() for s in d.skipped])
        if self.rank_status is not None:
            out["ranks"] = rank_rows(self.rank_status)
        return out

    def to_json(self) -> str:
        """The JSON report as text (strict JSON, indented)."""
        from autopsy.report.json_report import dumps

        return dumps(self.to_dict())

    @property
    def exit_code(self) -> int:
        """The CLI's exit code for this report (0 healthy, 1 failure, 3 undecided)."""
        from autopsy import exitcodes

        return exitcodes.for_family(self.diagnosis.verdict.family.value)


def rank_count(run: Run) -> int:
    """How many ranks the run's scalars and events name."""
    ranks = set(run.scalars["rank"].dropna().unique())
    if not run.events.empty:
        ranks |= set(run.events["rank"].dropna().unique())
    return len(ranks)
