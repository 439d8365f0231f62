"""Checkpoint layouts and the resumability audit (``autopsy ckpt``).

:func:`audit_path` audits a checkpoint file, a checkpoint folder, or every
checkpoint under a run or output directory, reading metadata only (never torch,
never pandas, nothing from the pickles executed), and returns an
:class:`AuditReport`: per checkpoint its layout, step, components with a status
each, and findings; the verdict is about the checkpoint a resume would pick.
"""

from __future__ import annotations

from autopsy.ckpt.audit import audit_one, audit_path
from autopsy.ckpt.components import AuditReport, CheckpointAudit, Component, Part, Status
from autopsy.ckpt.layouts import CheckpointRef, Layout, detect, find_checkpoints, pick_newest

__all__ = [
    "AuditReport",
    "CheckpointAudit",
    "CheckpointRef",
    "Component",
    "Layout",
    "Part",
    "Status",
    "audit_one",
    "audit_path",
    "detect",
    "find_checkpoints",
    "pick_newest",
]
