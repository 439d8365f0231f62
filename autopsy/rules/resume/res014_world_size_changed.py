"""RES014: the world size changed between launches of the run."""

from __future__ import annotations

from autopsy.model.finding import Evidence, Family, Finding, Severity
from autopsy.model.run import Run
from autopsy.rules.context import RuleContext
from autopsy.rules.registry import rule
from autopsy.rules.resume._boundary import (
    part_check,
    run_boundaries,
    segment_of_sources,
    source_checkpoint,
)
from autopsy.rules.resume.thresholds import RES014


def _int(value: object) -> int | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 1:
        return None
    return int(value) if float(value).is_integer() else None


def world_sizes(run: Run) -> dict[int, tuple[int, str]]:
    """``{segment: (world size, where it came from)}``: the config a launch logged (its
    source's segment), else the ranks its scalars carry (when at least two)."""
    out: dict[int, tuple[int, str]] = {}
    df = run.scalars
    if df.empty:
        return out
    seg_of = segment_of_sources(run)
    for entry in run.config.all_entries():
        size = _int(entry.value) if entry.key == "world_size" else None
        seg = seg_of.get(entry.source)
        if size is not None and seg is not None and seg not in out:
            out[seg] = (size, f"config world_size in {entry.source}")
    ranked = df.dropna(subset=["rank"])
    for seg, ranks in ranked.groupby("segment", observed=True)["rank"]:
        n = int(ranks.nunique())
        if n >= 2 and int(seg) not in out:
            out[int(seg)] = (int(ranks.max()) + 1, f"ranks 0-{int(ranks.max())} in the scalars")
    return out


def _logged_by(run: Run, source: str | None) -> tuple[int, str] | None:
    """The world size the config of one file (a launch's event file) says."""
    for entry in run.config.all_entries():
        size = _int(entry.value) if entry.key == "world_size" else None
        if size is not None and entry.source == source:
            return size, f"config world_size in {source}"
    return None


@rule(
    code="RES014",
    name="world-size-changed",
    family=Family.RESUME,
    causes=("world_size_changed",),
    thresholds=RES014,
)
def world_size_changed(run: Run, ctx: RuleContext) -> Finding | None:
    """The world size changed between launches of the run.

    What happened:
        Two consecutive segments (launches) of the run ran with different world
        sizes: the ``world_size`` a launch's own config logged (a TensorBoard
        args summary, a per-launch file), else the ranks its scalars carry (when
        at least two), or the world size the checkpoint it resumed from was
        saved with. Cause ``world_size_changed``.

    Why it happens:
        The job was restarted on another number of GPUs or nodes (elastic
        training, a smaller reservation after a failure). With the same
        per-device batch the global batch size changes, so the LR no longer fits
        it; each rank's data shard and sampler position differ from the saved
        ones; per-rank RNG states (and sharded optimizer states) saved for the
        old ranks do not match the new ones.

    How to fix:
        Resume on the same world size, or adjust on purpose: keep the global
        batch size (gradient accumulation), rescale the LR, reshard the
        optimizer state (DCP or DeepSpeed universal checkpoints) and accept that
        data order and RNG streams change.

    Evidence shown:
        The world size of each launch and where it came from; the checkpoint's
        saved world size and RNG component, when audited. A warning: it may be
        intended, but the resume was not exact.
    """
    sizes = world_sizes(run)
    for b in run_boundaries(run, ctx):
        ckpt = source_checkpoint(run, b)
        before = sizes.get(b.previous)
        after = sizes.get(b.segment)
        if b.source is not None:  # a relaunch inside one segment: its own event file
            before, after = _logged_by(run, b.previous_source), _logged_by(run, b.source)
        if ckpt is not None and ckpt.world_size is not None:
            before = (ckpt.world_size, f"checkpoint step {ckpt.step} was saved by "
                      f"{ckpt.world_size} rank(s)")
        if before is None or after is None or before[0] == after[0]:
            continue
        evidence = [Evidence(f"before step {b.resume_step}: world size {before[0]} "
                             f"({before[1]})", numbers={"world_size": before[0]}),
                    Evidence(f"from step {b.resume_step}: world size {after[0]} ({after[1]})",
                             numbers={"world_size": after[0]})]
        rng = part_check(run, b, "rng")
        if rng is not None and rng.lacking:
            evidence.append(rng.evidence)
        return ctx.finding(
            message=f"the run resumed at step {b.resume_step} on {after[0]} rank(s) after "
                    f"running on {before[0]}: the global batch, the data sharding and the "
                    "per-rank RNG states changed",
            severity=Severity.WARNING,
            confidence=float(ctx["confidence"]),
            cause="world_size_changed",
            step=b.resume_step,
            evidence=evidence,
            advice=["resume on the same number of ranks, or keep the global batch size "
                    "(gradient accumulation) and rescale the LR on purpose"],
        )
    return None
