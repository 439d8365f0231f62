"""OOM001: a rank ran out of GPU memory (real exhaustion or fragmentation)."""

from __future__ import annotations

import pandas as pd

from autopsy.model.finding import Evidence, Family, Finding, Severity
from autopsy.model.run import Run
from autopsy.rules.context import RuleContext
from autopsy.rules.crash._failures import (
    attributed,
    cascade_summary,
    claim_evidence,
    earliest,
    first_bad_step,
)
from autopsy.rules.oom._oom import phase_of, traceback_for
from autopsy.rules.oom.thresholds import OOM001
from autopsy.rules.registry import rule

GIB = 1024 ** 3
NUMBERS: tuple[str, ...] = ("tried", "total", "free", "allocated", "reserved",
                            "reserved_unallocated", "process_in_use", "other_processes")


def _gib(v: object) -> str:
    return f"{float(v) / GIB:.2f} GiB" if isinstance(v, (int, float)) else "?"


@rule(
    code="OOM001",
    name="cuda-oom",
    family=Family.OOM,
    causes=("cuda_oom", "fragmentation"),
    thresholds=OOM001,
)
def cuda_oom(run: Run, ctx: RuleContext) -> Finding | None:
    """A rank ran out of GPU memory.

    What happened:
        A CUDA allocation failed ("CUDA out of memory. Tried to allocate ...")
        and the process died; in a distributed job the other ranks then hung in
        the next collective and hit the NCCL watchdog timeout (the cascade).
        The earliest OOM across ranks is the root.

    Why it happens:
        Real exhaustion: the activations, gradients, optimizer state and the
        requested tensor do not fit (a batch or a sequence too large, fp32 where
        bf16 would do, a long eval batch). Or fragmentation: PyTorch's caching
        allocator holds enough reserved-but-unallocated memory, but in pieces too
        small for the request. It is called fragmentation when that memory is at
        least ``frag_min_fraction`` of the GPU and, with the free memory, would
        have held the request.

    How to fix:
        Fragmentation: set ``PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True``
        (older PyTorch: ``max_split_size_mb:128``). Exhaustion: lower the
        micro-batch size and raise gradient accumulation to keep the effective
        batch, enable activation (gradient) checkpointing, train in bf16, shorten
        the sequences, shard optimizer state and parameters (ZeRO / FSDP), and
        check that no other process holds memory on the GPU.

    Evidence shown:
        The rank, the step it failed in, the phase (forward, backward, optimizer
        step, evaluation, from the traceback's frames), the numbers from the
        message (tried, total, free, allocated, reserved, reserved but
        unallocated), how the other ranks failed and whether torchelastic's root
        cause agrees.
    """
    if run.events.empty:
        return None
    ev = attributed(run.events)
    ooms = ev[ev["kind"].astype(str) == "oom"]
    ooms = ooms[[isinstance(d, dict) and (d.get("device") == "cuda"
                                          or "CUDA out of memory" in str(m))
                 for d, m in zip(ooms["details"], ooms["message"], strict=True)]]
    if ooms.empty:
        return None
    first = earliest(ooms, ev)[0]
    d = dict(first.row["details"])
    tb = traceback_for(ev, first.row)
    frames = (tb["details"].get("frames") or []) if tb is not None else []
    phase = phase_of(frames) if tb is not None else None
    step = first_bad_step(first.step)
    tried, total = d.get("tried"), d.get("total")
    free, ru = d.get("free") or 0, d.get("reserved_unallocated")
    frag = (isinstance(ru, (int, float)) and isinstance(tried, (int, float))
            and ru + free >= tried
            and (not total or ru >= ctx["frag_min_fraction"] * total))
    who = f"rank {first.rank}" if first.rank is not None else "the process"
    nums = {k: d[k] for k in NUMBERS if isinstance(d.get(k), (int, float))}
    evidence = [Evidence(
        summary=f"{who} ran out of GPU memory" + (f" in the {phase}" if phase else "")
        + (f" of step {step}" if step else "") + f": tried to allocate {_gib(tried)}, "
        f"{_gib(free)} free of {_gib(total)}, {_gib(d.get('allocated'))} allocated, "
        f"{_gib(ru)} reserved but unallocated",
        source=str(first.row["source"]),
        line=None if pd.isna(first.row["line"]) else int(first.row["line"]), numbers=nums,
    )]
    if d.get("other_processes"):
        evidence.append(Evidence(summary=f"another process holds {_gib(d['other_processes'])} "
                                 "on the same GPU"))
    cascade, _ = (None, []) if first.rank is None else cascade_summary(run, first.rank, ctx)
    if cascade:
        evidence.append(Evidence(summary=cascade))
    claim, _agrees = claim_evidence(ev, first.rank)
    if claim:
        evidence.append(Evidence(summary=claim))
    if frag:
        cause = "fragmentation"
        advice = ["set PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True (older PyTorch: "
                  "max_split_size_mb:128): "
                  f"{_gib(ru)} was reserved but unallocated, more than the "
                  f"{_gib(tried)} request with the free memory"]
    else:
        cause = "cuda_oom"
        advice = ["halve the per-device micro-batch size and double "
                  "gradient_accumulation_steps to keep the effective batch",
                  "enable activation checkpointing (gradient_checkpointing=True)",
                  "train in bf16 (bf16=True) rather than fp32; shorten max sequence length",
                  "shard optimizer state and parameters (DeepSpeed ZeRO-2/3 or FSDP)"]
        if phase == "evaluation":
            advice.insert(0, "lower the eval batch size (per_device_eval_batch_size)")
        if d.get("other_processes"):
            advice.insert(0, "free the GPU of the other process (nvidia-smi)")
    return ctx.finding(
        message=f"{who[0].upper() + who[1:]} ran out of GPU memory"
                + (f" in the {phase}" if phase else "") + (f" at step {step}" if step else "")
                + (" (fragmentation: enough memory was reserved but unallocated)"
                   if frag else "") + (f"; {cascade}" if cascade else "") + ".",
        severity=Severity.CRITICAL, confidence=0.95 if tried else 0.85, cause=cause,
        step=step, ranks=() if first.rank is None else (first.rank,),
        evidence=evidence, advice=advice,
        title="CUDA out of memory" + (" (fragmentation)" if frag else ""),
    )
