"""The JSON report of ``autopsy ckpt``: a stable, documented contract (see docs/ckpt.md).

Light on purpose: only the stdlib and the ckpt records, so ``autopsy ckpt`` never
imports pandas.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from autopsy._version import __version__
from autopsy.ckpt.components import AuditReport, CheckpointAudit
from autopsy.report.jsonable import jsonable

#: Bumped on any incompatible change of the report's shape.
SCHEMA_VERSION = 1


def _checkpoint(audit: CheckpointAudit) -> dict[str, Any]:
    return {
        "path": audit.path,
        "name": Path(audit.path).name,
        "layout": audit.layout,
        "step": audit.step,
        "resumable": audit.resumable,
        "resume_level": audit.resume_level,
        "world_size": audit.world_size,
        "weights_only": audit.weights_only,
        "losses": audit.losses(),
        "loss_effects": audit.loss_effects(),
        "components": [c.to_dict() for c in audit.components],
        "findings": [f.to_dict() for f in audit.findings],
        "problems": list(audit.problems),
    }


def ckpt_report(report: AuditReport) -> dict[str, Any]:
    """Build the ``autopsy ckpt`` JSON report as a dict (strict-JSON-able)."""
    picked = report.picked
    newest = report.newest_resumable
    return jsonable({
        "schema_version": SCHEMA_VERSION,
        "autopsy_version": __version__,
        "path": report.path,
        "resumable": report.resumable,
        "resume_level": report.resume_level,
        "checkpoint": picked.path,
        "layout": picked.layout,
        "step": picked.step,
        "world_size": picked.world_size,
        "requested_world_size": report.world_size,
        "scanned_values": report.scanned_values,
        "losses": picked.losses(),
        "loss_effects": picked.loss_effects(),
        "newest_resumable": newest.path if newest is not None else None,
        "components": [c.to_dict() for c in picked.components],
        "findings": [f.to_dict() for f in picked.findings],
        "checkpoints": [_checkpoint(a) for a in report.checkpoints],
        "problems": [*report.problems, *picked.problems],
    })


def dumps(report: dict[str, Any]) -> str:
    """Serialise a report as strict JSON (no NaN literals), indented."""
    return json.dumps(report, indent=2, allow_nan=False, ensure_ascii=False) + "\n"
