"""``autopsy fleet diff GOOD BAD``: what changed between the last good run and a bad one.

Three answers: the configuration keys whose values differ (from every source autopsy reads:
``training_args.bin``, hparams, ``config.json``...), the environment where the runs name it
(library versions in the config, world size, hosts), and the first step where the two
loss curves part: the first of :data:`PART_POINTS` consecutive common steps where the
losses differ by more than :data:`PART_TOLERANCE` of their size.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

#: Relative difference of two losses at one step past which the curves differ. Two runs of
#: the same recipe with different seeds differ by a few percent at the same step; 10% is
#: past that noise for most curves.
PART_TOLERANCE = 0.10
#: Consecutive differing steps needed (one noisy step is not a parting).
PART_POINTS = 3
#: Config keys that describe the environment rather than the recipe.
ENVIRONMENT_KEYS = ("transformers_version", "torch_version", "python_version", "cuda_version",
                    "lightning_version", "deepspeed_version", "accelerate_version", "host",
                    "hostname", "world_size", "num_processes", "n_gpu", "gpu", "os")


def _plain(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    return value


def _part(good: Any, bad: Any) -> dict[str, Any] | None:
    """The first step where the loss curves part, with both losses there."""
    import numpy as np

    if good.empty or bad.empty:
        return None
    common = good.index.intersection(bad.index).sort_values()
    if not len(common):
        return None
    a = good.loc[common].to_numpy(dtype="float64")
    b = bad.loc[common].to_numpy(dtype="float64")
    with np.errstate(invalid="ignore", divide="ignore"):
        scale = np.maximum(np.maximum(np.abs(a), np.abs(b)), 1e-12)
        differ = ~(np.abs(a - b) <= PART_TOLERANCE * scale)  # NaN on one side differs
    run = 0
    for i, d in enumerate(differ.tolist()):
        run = run + 1 if d else 0
        if run >= PART_POINTS:
            j = i - PART_POINTS + 1
            return {"step": int(common[j]), "good_loss": _plain(float(a[j])),
                    "bad_loss": _plain(float(b[j])), "common_steps": len(common)}
    return {"step": None, "common_steps": len(common)}


def diff_runs(good_path: Path, bad_path: Path) -> dict[str, Any]:
    """Compare two runs (see the module docstring)."""
    from autopsy.api import is_empty, load_run, nothing_readable, report
    from autopsy.errors import NothingReadable
    from autopsy.fleet.task import _hosts
    from autopsy.report.report import rank_count

    runs = []
    for path in (good_path, bad_path):
        run = load_run(path)
        if is_empty(run):
            raise NothingReadable(nothing_readable(run, str(path)))
        runs.append(run)
    good, bad = runs
    gc = {k: good.config[k] for k in good.config}
    bc = {k: bad.config[k] for k in bad.config}
    config, environment = [], []
    for key in sorted(set(gc) | set(bc)):
        a, b = gc.get(key), bc.get(key)
        if a != b:
            item = {"key": key, "good": _plain(a), "bad": _plain(b)}
            (environment if key in ENVIRONMENT_KEYS else config).append(item)
    for key, a, b in (("world_size", rank_count(good), rank_count(bad)),
                      ("hosts", _hosts(good), _hosts(bad))):
        if a != b:
            environment.append({"key": key, "good": a, "bad": b})
    verdicts = {}
    for name, run in (("good", good), ("bad", bad)):
        v = report(run, ranks=False).diagnosis.verdict
        verdicts[name] = {"family": v.family.value, "cause": v.cause, "code": v.code,
                          "step": v.step}
    return {"good": str(good_path), "bad": str(bad_path), "verdicts": verdicts,
            "config": config, "environment": environment,
            "loss_parts": _part(good.series("loss"), bad.series("loss"))}


def render_diff_text(d: dict[str, Any], out: Any) -> None:
    """The comparison as text."""
    w = out.write
    vg, vb = d["verdicts"]["good"], d["verdicts"]["bad"]
    w(f"good: {d['good']}  ({vg['family']}{' · ' + vg['code'] if vg['code'] else ''})\n")
    step = f" · step {vb['step']}" if vb["step"] is not None else ""
    w(f"bad:  {d['bad']}  ({vb['family']}{' · ' + vb['code'] if vb['code'] else ''}{step})\n")
    for title, items in (("Config", d["config"]), ("Environment", d["environment"])):
        w(f"\n{title} differences: {len(items)}\n")
        for item in items:
            w(f"  {item['key']}: {item['good']!r} -> {item['bad']!r}\n")
    part = d["loss_parts"]
    if part is None:
        w("\nLoss curves: no common steps to compare\n")
    elif part.get("step") is None:
        w(f"\nLoss curves agree over their {part['common_steps']:,} common steps "
          f"(within {PART_TOLERANCE:.0%})\n")
    else:
        w(f"\nLoss curves part at step {part['step']:,}: {part['good_loss']:.4g} (good) vs "
          f"{part['bad_loss']:.4g} (bad)\n")
