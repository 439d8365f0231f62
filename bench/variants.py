#!/usr/bin/env python
"""Regenerate every sample-run situation with other seeds, LRs, sizes and schedules.

The rules must be judged on runs they were not tuned on. This script reuses the recipes of
``sample_runs/make.py`` (each takes a :class:`Params`: seed, learning rate, model width, steps,
schedule, the step of a planted event) and makes fresh runs into OUT_DIR (default
``bench/out/variants/``, git-ignored), each with the label its self-check computed from what
really happened, as ``<name>__vN.label.json`` beside ``<name>__vN/``. A variant whose
situation did not happen (the self-check failed: a seed that never NaNs, a spike too small) is
dropped, never mislabelled: its folder is removed and the reason goes to ``variants.json``.

Usage::

    python bench/variants.py                      # all situations, into bench/out/variants
    python bench/variants.py OUT_DIR --only nan_bad_batch diverging_finite
    python bench/variants.py --jobs 2             # runs in parallel (each on one thread)
    python bench/accuracy.py bench/out/variants   # then score autopsy on them
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import shutil
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "sample_runs"))

import make  # noqa: E402  (sample_runs/make.py: the recipes)
from make import Params  # noqa: E402

DEFAULT_OUT = REPO / "bench" / "out" / "variants"

#: Per situation, the variants made: other seeds first, then other LRs, sizes, schedules.
VARIANTS: dict[str, tuple[Params, ...]] = {
    "healthy_hf_trainer": (
        Params(seed=1),
        Params(seed=2, lr=5e-3, schedule="cosine"),
        Params(seed=3, width=48),
    ),
    "nan_after_grad_spike": (
        Params(seed=1),
        Params(seed=2, lr=3.2),
        Params(seed=3, width=48),
    ),
    "hidden_nan_hf_filter": (
        Params(seed=1),
        Params(seed=2, lr=3.2),
    ),
    "nan_bad_batch": (
        Params(seed=1, event_step=23),
        Params(seed=2, lr=1e-3, schedule="linear", event_step=45),
        Params(seed=3, width=64, event_step=30),
    ),
    "fp16_overflow_collapse": (
        Params(seed=1),
        Params(seed=2, lr=0.2, steps=150),
        Params(seed=3, width=64),
    ),
    "fp16_warmup_skips_healthy": (
        Params(seed=1),
        Params(seed=2, lr=3e-3),
        Params(seed=3, width=64),
    ),
    "diverging_finite": (
        Params(seed=1),
        Params(seed=2, lr=5.0),
        Params(seed=3, width=64, lr=4.0),
    ),
    "loss_spikes_recover": (
        Params(seed=1, event_step=30),
        Params(seed=2, lr=5e-3, event_step=35),
        Params(seed=3, width=64, schedule="linear"),
    ),
    "lr_too_low_full_finetune": (
        Params(seed=1),
        Params(seed=2, lr=1e-7),
        Params(seed=3, width=48),
    ),
    "frozen_params": (
        Params(seed=1),
        Params(seed=2, lr=5e-5),
    ),
    "labels_masked": (
        Params(seed=1),
        Params(seed=2, lr=1e-3, width=48),
    ),
    "chance_level_classifier": (
        Params(seed=1),
        Params(seed=2, lr=3e-3, width=48),
    ),
    "overfitting_small_data": (
        Params(seed=1),
        Params(seed=2, lr=5e-3),
    ),
    "resumed_after_stop": (
        Params(seed=1),
        Params(seed=2, lr=1e-3),
    ),
    # The 4-rank torchrun runs: the failure moved to other ranks and steps.
    "ddp_healthy_4ranks": (
        Params(seed=1, steps=25),
    ),
    "ddp_rank_exception": (
        Params(seed=1, rank=0, event_step=9),
        Params(seed=2, rank=3, event_step=22),
    ),
    "ddp_rank_stall_timeout": (
        Params(seed=1, rank=3, event_step=5),
        Params(seed=2, rank=2, event_step=17),
    ),
    "ddp_collective_mismatch_detail": (
        Params(seed=1, rank=1, event_step=12),
    ),
    "ddp_collective_mismatch_silent": (
        Params(seed=1, rank=0, event_step=5),
        Params(seed=2, rank=2, event_step=19),
    ),
    "ddp_uneven_batches": (
        Params(seed=1, rank=2, steps=14),
        Params(seed=2, rank=3, steps=25),
    ),
    # The slow runs: other seeds, lengths, save intervals.
    "slow_dataloader_starved": (
        Params(seed=1),
        Params(seed=2, steps=80),
    ),
    "slow_periodic_checkpoint_stalls": (
        Params(seed=1),
        Params(seed=3, event_step=25),
    ),
    "slow_rank_straggler_4ranks": (
        Params(seed=1),
        Params(seed=2, steps=80),
    ),
    # The two-launch resume runs: other seeds.
    **{name: (Params(seed=1), Params(seed=2)) for name in (
        "resume_scheduler_not_restored", "resume_optimizer_lost", "resume_grad_scaler_lost",
        "resume_data_position_lost", "resume_hf_scheduler_missing")},
}


def make_variant(situation: str, index: int, params: Params, out: Path) -> dict[str, Any]:
    """Make one variant; returns a record of what happened (made, or dropped and why)."""
    dirname = f"{situation}__v{index}"
    record: dict[str, Any] = {"run": dirname, "situation": situation,
                              "params": params.describe()}
    t0 = time.perf_counter()
    try:
        label = make.make_run(make.RUNS[situation], out, params, dirname)
    except Exception as exc:  # a self-check failure, or a run too odd to check: dropped
        shutil.rmtree(out / dirname, ignore_errors=True)
        make.label_path(out / dirname).unlink(missing_ok=True)
        reason = str(exc).strip().splitlines()[0][:300]
        print(f"{dirname}: dropped ({reason})", flush=True)
        record.update(status="dropped", reason=reason)
    else:
        record.update(status="made", family=label["family"], cause=label["cause"],
                      first_bad_step=label["first_bad_step"])
    record["seconds"] = round(time.perf_counter() - t0, 1)
    return record


def main(argv: list[str] | None = None) -> int:
    """Parse the command line and make the variants."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out", nargs="?", type=Path, default=DEFAULT_OUT,
                        help="output folder (%(default)s)")
    parser.add_argument("--only", nargs="+", metavar="SITUATION", choices=sorted(VARIANTS),
                        help="make only these situations' variants")
    parser.add_argument("--jobs", type=int, default=2, help="runs in parallel (%(default)s)")
    parser.add_argument("--seed-offset", type=int, default=0, metavar="N",
                        help="add N to every variant's seed: a fresh batch no rule was tuned on")
    ns = parser.parse_args(argv)
    out = ns.out.resolve()
    out.mkdir(parents=True, exist_ok=True)
    jobs = [
        (situation, i, dataclasses.replace(params, seed=params.seed + ns.seed_offset))
        for situation, variants in VARIANTS.items()
        if not ns.only or situation in ns.only
        for i, params in enumerate(variants, start=1)
    ]
    t0 = time.perf_counter()
    with ThreadPoolExecutor(max_workers=max(1, ns.jobs)) as pool:
        records = list(pool.map(lambda job: make_variant(*job, out), jobs))
    summary_path = out / "variants.json"
    previous = json.loads(summary_path.read_text()) if summary_path.exists() else {}
    kept = {r["run"]: r for r in previous.get("runs", []) if isinstance(r, dict)}
    kept.update({r["run"]: r for r in records})
    summary = {"seconds": round(time.perf_counter() - t0, 1),
               "runs": [kept[k] for k in sorted(kept)]}
    summary_path.write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")
    made = sum(r["status"] == "made" for r in records)
    print(f"{made} made, {len(records) - made} dropped in {summary['seconds']}s -> {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
