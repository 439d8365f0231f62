"""The component model of a checkpoint audit: what a resume needs, and its status.

A checkpoint is judged by its components (weights, optimizer, scheduler, grad
scaler, RNG per rank, data position, trainer state, training args). Each gets a
:class:`Status`, the files it came from, the evidence that decided the status and,
when it is not ``ok``, what a resume does without it (``effect``).

A checkpoint is *resumable* when no required component is ``missing``,
``inconsistent``, ``corrupt`` or ``unsafe``, no file at all is ``unsafe``, and no check
failed with severity error. Its *resume level* says how well: ``exact`` (nothing is
lost), ``with_losses`` (a component the layout may lack is missing, inconsistent or
corrupt: the RNG streams or the data position restart) or ``not_resumable``.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from typing import Any

from autopsy.model.finding import Finding, Severity


class Status(str, Enum):
    """The status of one component."""

    OK = "ok"
    MISSING = "missing"
    INCONSISTENT = "inconsistent"
    CORRUPT = "corrupt"
    UNSAFE = "unsafe"
    #: The run does not need it (no grad scaler without fp16) or the layout keeps it elsewhere.
    NOT_APPLICABLE = "not_applicable"


#: The three levels of :attr:`CheckpointAudit.resume_level`.
EXACT, WITH_LOSSES, NOT_RESUMABLE = "exact", "with_losses", "not_resumable"

#: Statuses that stop an exact resume when the component is required.
BLOCKING: frozenset[Status] = frozenset(
    {Status.MISSING, Status.INCONSISTENT, Status.CORRUPT, Status.UNSAFE})


#: Statuses of a component that is not required whose loss makes a resume inexact.
LOSSY: frozenset[Status] = frozenset({Status.MISSING, Status.INCONSISTENT, Status.CORRUPT})


class Part(str, Enum):
    """The components a resume needs, in report order."""

    WEIGHTS = "weights"
    OPTIMIZER = "optimizer"
    SCHEDULER = "scheduler"
    GRAD_SCALER = "grad_scaler"
    RNG = "rng"
    DATA_POSITION = "data_position"
    TRAINER_STATE = "trainer_state"
    TRAINING_ARGS = "training_args"


@dataclass(frozen=True)
class Component:
    """One component of one checkpoint, as audited.

    Attributes:
        name: a :class:`Part` value.
        status: its :class:`Status`.
        files: the files it came from (relative to the checkpoint), or those expected.
        evidence: one readable line per fact that decided the status.
        effect: what a resume does without it (empty when ``ok``).
        required: whether a blocking status makes the checkpoint not resumable.
    """

    name: str
    status: Status
    files: tuple[str, ...] = ()
    evidence: tuple[str, ...] = ()
    effect: str = ""
    required: bool = True

    @property
    def blocking(self) -> bool:
        """Whether this component stops an exact resume (an unsafe file always does)."""
        return self.status is Status.UNSAFE or (self.required and self.status in BLOCKING)

    def to_dict(self) -> dict[str, Any]:
        """Return the JSON report's component object."""
        return {"name": self.name, "status": self.status.value, "required": self.required,
                "files": list(self.files), "evidence": list(self.evidence),
                "effect": self.effect}


@dataclass(frozen=True)
class CheckpointAudit:
    """The audit of one checkpoint.

    Attributes:
        path: the checkpoint (folder or file) as given or found.
        layout: the layout detected (:class:`autopsy.ckpt.layouts.Layout` value).
        step: the global step it was saved at (trainer state, a step key, the folder name,
            else the optimizer's own step count), if known.
        components: one per :class:`Part`, in report order.
        findings: the checks that failed, as findings (family ``resume``).
        problems: files that could not be read fully, one line each.
        world_size: the world size the checkpoint was saved with, if known.
        weights_only: a weights-only save (a safetensors file or folder, a bare state
            dict): a model export rather than a training checkpoint.
        unscanned: ``(component, tensors, bytes)`` whose values the scan did not read
            (past its byte budget): an exact resume cannot be vouched for.
    """

    path: str
    layout: str
    step: int | None
    components: tuple[Component, ...]
    findings: tuple[Finding, ...] = ()
    problems: tuple[str, ...] = ()
    world_size: int | None = None
    weights_only: bool = False
    #: (component, tensors, bytes) whose values were not scanned (past the scan budget)
    unscanned: tuple[tuple[str, int, int], ...] = ()

    @property
    def resumable(self) -> bool:
        """Whether a resume from this checkpoint is possible: no required component is
        missing, inconsistent, corrupt or unsafe, no file is unsafe and no check failed
        with severity error (exact or with losses: :attr:`resume_level`)."""
        if any(c.blocking for c in self.components):
            return False
        return not any(f.severity in (Severity.ERROR, Severity.CRITICAL) for f in self.findings)

    def component(self, name: str) -> Component | None:
        """The component called ``name`` (a :class:`Part` value), or None."""
        return next((c for c in self.components if c.name == name), None)

    def losses(self) -> list[str]:
        """What a resume from this checkpoint would lose: ``"optimizer (missing)"``...

        For a checkpoint that is not resumable, the components that stop it; for a
        resumable one, those it resumes without (an RNG or data position the layout did not
        save): empty only for an exact resume."""
        if not self.resumable:
            return [f"{c.name} ({c.status.value})" for c in self.components if c.blocking]
        return [*(f"{c.name} ({c.status.value})" for c in self._lost()),
                *(f"{name} values not scanned ({n} tensors)" for name, n, _ in self.unscanned)]

    def loss_effects(self) -> list[str]:
        """What each of :meth:`losses` does to the resumed run, one line each (``"rng: fresh
        RNG: dropout masks and shuffles differ from the original run"``)."""
        lost = [c for c in self.components if c.blocking] if not self.resumable \
            else self._lost()
        out = [f"{c.name}: {c.effect}" for c in lost if c.effect]
        if self.resumable:
            out += [f"{name}: {n} tensors ({nbytes:,} bytes) past the scan budget were not "
                    "checked for NaN/Inf (raise --scan-budget, or --scan-values for all)"
                    for name, n, nbytes in self.unscanned]
        return out

    def _lost(self) -> list[Component]:
        return [c for c in self.components if not c.blocking and c.status in LOSSY]

    @property
    def resume_level(self) -> str:
        """``exact`` (everything to continue as the run would have), ``with_losses``
        (resumable without some state: :meth:`losses`) or ``not_resumable``."""
        if not self.resumable:
            return NOT_RESUMABLE
        return WITH_LOSSES if self._lost() or self.unscanned else EXACT


@dataclass(frozen=True)
class AuditReport:
    """The audit of a path: every checkpoint found, and the one a resume would pick.

    Attributes:
        path: the path audited.
        checkpoints: every checkpoint audited, oldest first.
        picked: the one a resume would pick (the newest; DeepSpeed: the ``latest`` tag).
        newest_resumable: the newest checkpoint that is resumable, or None.
        problems: what could not be read at all while looking for checkpoints.
        world_size: the ``--world-size`` asked for, if any.
        scanned_values: whether tensor values were scanned for NaN/Inf.
    """

    path: str
    checkpoints: tuple[CheckpointAudit, ...]
    picked: CheckpointAudit
    newest_resumable: CheckpointAudit | None
    problems: tuple[str, ...] = ()
    world_size: int | None = None
    scanned_values: bool = False

    @property
    def resumable(self) -> bool:
        """Whether a resume from the picked checkpoint is possible (exactly or with losses)."""
        return self.picked.resumable

    @property
    def resume_level(self) -> str:
        """The picked checkpoint's :attr:`CheckpointAudit.resume_level`."""
        return self.picked.resume_level
