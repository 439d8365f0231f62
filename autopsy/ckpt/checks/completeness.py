"""Completeness: every component a resume needs is there (CKPT001..CKPT006), RNG for every
rank, and the world size agrees across files and with ``--world-size`` (CKPT016)."""

from __future__ import annotations

from collections import Counter

from autopsy.ckpt.checks.judge import Judge
from autopsy.ckpt.components import Part, Status
from autopsy.ckpt.layouts import Layout
from autopsy.model.finding import Evidence, Severity

#: The check code for a missing component.
MISSING_CODE: dict[Part, str] = {
    Part.WEIGHTS: "CKPT001", Part.OPTIMIZER: "CKPT002", Part.SCHEDULER: "CKPT003",
    Part.GRAD_SCALER: "CKPT004", Part.RNG: "CKPT005", Part.DATA_POSITION: "CKPT006",
}

ADVICE: dict[Part, str] = {
    Part.WEIGHTS: "resume from a checkpoint that holds the model weights",
    Part.OPTIMIZER: "save the optimizer with the model: trainer.save_state / "
                    "accelerator.save_state, or optimizer.state_dict() in the torch.save dict",
    Part.SCHEDULER: "save the scheduler too: trainer.save_state / accelerator.save_state, or "
                    "lr_scheduler.state_dict() in the torch.save dict",
    Part.GRAD_SCALER: "save the GradScaler with the optimizer (scaler.state_dict())",
    Part.RNG: "save the RNG state of every rank (the Trainer and accelerate do it by default; "
              "a plain loop: torch.get_rng_state(), torch.cuda.get_rng_state_all(), "
              "random.getstate(), numpy.random.get_state())",
    Part.DATA_POSITION: "save the data position: a StatefulDataLoader's state_dict(), or the "
                        "epoch and step with a seeded sampler and skip to it on resume",
}

#: Marker of a world-size source that is only a lower bound (per-rank file names).
FLOOR_MARK = "highest rank"


def world_size(judge: Judge, requested: int | None) -> int | None:
    """The world size the checkpoint was saved with; CKPT016 when its sources disagree."""
    parts = judge.parts
    exact = [(src, n) for src, n in parts.world_sizes if FLOOR_MARK not in src]
    floors = [(src, n) for src, n in parts.world_sizes if FLOOR_MARK in src]
    values = Counter(n for _, n in exact)
    saved: int | None = None
    if values:
        saved = values.most_common(1)[0][0]
    elif floors:
        saved = max(n for _, n in floors)
    conflicts = [(s, n) for s, n in exact if n != saved]
    conflicts += [(s, n) for s, n in floors if saved is not None and n > saved]
    if conflicts:
        lines = [f"{s}: {n}" for s, n in parts.world_sizes]
        part = Part.OPTIMIZER if parts.flat_optimizer else Part.RNG
        judge.mark(part, Status.INCONSISTENT, "world size disagrees: " + "; ".join(lines))
        judge.fail("CKPT016", "the files disagree on the world size: " + "; ".join(lines),
                   evidence=[Evidence(f"{s}: world size {n}", source=s.split(" ")[0],
                                      numbers={"world_size": n}) for s, n in parts.world_sizes],
                   advice=["check that every rank's files come from the same save"])
    if requested is not None and saved is not None and requested != saved:
        part = Part.OPTIMIZER if parts.flat_optimizer else Part.RNG
        what = (f"--world-size {requested}, but the checkpoint was saved by {saved} rank(s) "
                f"({', '.join(s for s, _ in parts.world_sizes)})")
        judge.mark(part, Status.INCONSISTENT, what)
        judge.fail("CKPT016", what,
                   evidence=[Evidence(what, numbers={"requested": requested, "saved": saved})],
                   advice=[f"resume with {saved} rank(s), or accept fresh RNG on the others"])
    return saved


def check(judge: Judge, requested_world_size: int | None = None) -> int | None:
    """Run the completeness checks; return the world size the checkpoint was saved with."""
    parts = judge.parts
    saved = world_size(judge, requested_world_size)
    _rng(judge, saved, requested_world_size)
    if parts.fp16 is True:
        scaler = parts.slot(Part.GRAD_SCALER)
        if not scaler.present:
            scaler.not_applicable = ""
            judge.note(Part.GRAD_SCALER, "the run used fp16 (training args)")
    _scheduler_used(judge)
    for part, code in MISSING_CODE.items():
        slot = parts.slot(part)
        if part is Part.RNG or slot.present or slot.not_applicable:
            continue
        judge.mark(part, Status.MISSING)
        severity = Severity.ERROR if slot.required else Severity.WARNING
        message = f"no {part.value.replace('_', ' ')} state"
        if slot.expected:
            message += f" (looked for {', '.join(slot.expected)})"
        if slot.effect:
            message += f": {slot.effect}"
        judge.fail(code, message, severity=severity,
                   evidence=[Evidence(f"{e} not found", source=e) for e in slot.expected[:3]],
                   advice=[ADVICE[part]])
    return saved


def _rng(judge: Judge, saved: int | None, requested: int | None) -> None:
    parts = judge.parts
    slot = parts.slot(Part.RNG)
    per_rank = sorted(r for r in parts.rng if r is not None)
    single = None in parts.rng
    if parts.layout in (Layout.HF_TRAINER, Layout.ACCELERATE):
        world = requested or saved or (per_rank[-1] + 1 if per_rank else 1)
        if parts.layout is Layout.HF_TRAINER and world == 1:
            present = single or 0 in per_rank
            missing_ranks: list[int] = [] if present else [0]
            names = ["rng_state.pth"]
        else:
            missing_ranks = [r for r in range(world) if r not in parts.rng]
            pattern = ("rng_state_{}.pth" if parts.layout is Layout.HF_TRAINER
                       else "random_states_{}.pkl")
            names = [pattern.format(r) for r in missing_ranks]
        slot.present = not missing_ranks
        if missing_ranks:
            judge.mark(Part.RNG, Status.MISSING,
                       f"{', '.join(names[:8])} missing (world size {world})")
            which = "rank" if len(missing_ranks) == 1 else "ranks"
            judge.fail(
                "CKPT005",
                f"no RNG state for {which} {', '.join(map(str, missing_ranks[:16]))} of "
                f"{world}: {slot.effect}",
                evidence=[Evidence(f"{n} not found", source=n) for n in names[:8]],
                ranks=missing_ranks, advice=[ADVICE[Part.RNG]])
        return
    if not slot.present:
        judge.mark(Part.RNG, Status.MISSING)
        judge.fail("CKPT005", f"no RNG state: {slot.effect}", severity=Severity.WARNING,
                   advice=[ADVICE[Part.RNG]])


def _scheduler_used(judge: Judge) -> None:
    """No scheduler saved and none attached: ``not_applicable``, not ``missing``.

    An LR scheduler writes ``initial_lr`` into every param group of its optimizer, so
    an optimizer state without it shows that the run had no scheduler to save.
    """
    parts = judge.parts
    sched, opt = parts.slot(Part.SCHEDULER), parts.slot(Part.OPTIMIZER)
    if sched.present or not opt.present or not isinstance(opt.value, dict):
        return
    groups = [g for g in (opt.value.get("param_groups") or []) if isinstance(g, dict)]
    if groups and not any("initial_lr" in g for g in groups):
        sched.not_applicable = ("no scheduler was attached: the optimizer's param groups have "
                                "no initial_lr (an LR scheduler sets it)")
