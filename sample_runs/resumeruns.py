"""The resume sample runs: a crash, then a resume that does not restore everything.

Both are plain PyTorch loops (a small MLP on synthetic data, AdamW, a ``LambdaLR`` warm-up
schedule, clipping 1.0) that log ``train/loss``, ``train/grad_norm``, ``train/learning_rate``
and ``train/epoch`` every step with ``torch.utils.tensorboard.SummaryWriter`` under
``<run>/runs`` (the config as a JSON text summary ``args``) and save a ``torch.save`` dict
``ckpt_step_N.pt`` in the run dir every ``SAVE_STEPS`` steps. Each run is two launches of
this file (``python resumeruns.py KIND OUTPUT_DIR LAUNCH SEED``), started by the spec's
``train`` as subprocesses whose output goes to ``train.log``:

- launch 0 trains, saves, and dies with a traceback a few steps after its last checkpoint
  (a simulated node loss);
- launch 1 loads the newest checkpoint, goes on from the step after it, and writes a new
  event file into the same TensorBoard folder (the steps go back: segment 1).

What the checkpoint holds, and so what the resume restores:

- ``resume_scheduler_not_restored``: model, optimizer and step; no scheduler state. The
  resumed launch builds a fresh ``LambdaLR``, whose warm-up starts again at the resume step.
- ``resume_optimizer_lost``: model, scheduler and step; no optimizer state. The resumed
  launch builds a fresh AdamW: with empty moments its first updates are ``lr · sign(g)``
  in every coordinate, the loss jumps, and falls back as the moments fill.

The self-checks read the event files back (TensorBoard's own loader), assert the situation
really happened (two segments, the resume step, the LR or the loss compared with the first
launch's pre-crash tail at the same steps) and write the labels from those measurements.

``make.py`` registers :data:`SPECS` beside its other runs.
"""

from __future__ import annotations

import itertools
import json
import math
import statistics
import subprocess
import sys
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

from spec import Spec  # the SPECS record (beside this file)

HERE = Path(__file__).resolve().parent
LOG_NAME = "train.log"
TB_SUBDIR = "runs"
FEATURES = 16
N_EXAMPLES = 8192
LAUNCH_TIMEOUT = 120  # seconds

SAVE_STEPS = 20
INIT_SCALE = 2.0**24  # the initial loss scale (DeepSpeed-style high start; GradScaler: 2**16)
#: per kind: (steps, warm-up, schedule, peak lr, batch, crash after, task)
KINDS: dict[str, dict[str, Any]] = {
    "scheduler": {"steps": 80, "warmup": 10, "schedule": "cosine", "lr": 1e-2, "batch": 64,
                  "crash_after": 45, "task": "classification"},
    "optimizer": {"steps": 100, "warmup": 10, "schedule": "constant", "lr": 3e-2, "batch": 128,
                  "crash_after": 65, "task": "regression"},
    "scaler": {"steps": 100, "warmup": 10, "schedule": "constant", "lr": 3e-3, "batch": 128,
               "crash_after": 65, "task": "regression"},
    "data": {"steps": 120, "warmup": 10, "schedule": "cosine", "lr": 1e-2, "batch": 64,
             "crash_after": 65, "task": "noisy_classification"},
}


class ResumeCheckError(AssertionError):
    """A resume run did not show the situation it was made for."""


def _require(cond: bool, what: str) -> None:
    """Fail loudly (whatever ``python -O`` says) when ``cond`` is false."""
    if not cond:
        raise ResumeCheckError(what)


def _or(value: Any, default: Any) -> Any:
    return default if value is None else value


def _factor(i: int, warmup: int, total: int, schedule: str) -> float:
    """LR factor of the ``i``-th scheduler step (0-based): linear warm-up, then ``schedule``."""
    step = i + 1
    if step <= warmup:
        return step / warmup
    if schedule == "cosine":
        return 0.5 * (1 + math.cos(math.pi * (step - warmup) / max(1, total - warmup)))
    return 1.0


# --------------------------------------------------------------------------------------------
# One launch (a subprocess: ``python resumeruns.py KIND OUTPUT_DIR LAUNCH SEED``)
# --------------------------------------------------------------------------------------------


def _data(seed: int, task: str) -> tuple[Any, Any]:
    import torch

    g = torch.Generator().manual_seed(seed + 1)
    x = torch.randn(N_EXAMPLES, FEATURES, generator=g)
    if task == "regression":
        w = torch.randn(FEATURES, 1, generator=g)
        y = torch.tanh(x @ w / 4) + 0.05 * torch.randn(N_EXAMPLES, 1, generator=g)
    else:
        y = (x @ torch.randn(FEATURES, 4, generator=g)).argmax(1)
    if task == "noisy_classification":  # a quarter of the labels are noise: hard examples,
        noisy = torch.rand(N_EXAMPLES, generator=g) < 0.25  # so batches differ in difficulty
        y = torch.where(noisy, torch.randint(0, 4, (N_EXAMPLES,), generator=g), y)
    return x, y


def _batch(step: int, seed: int, batch: int) -> tuple[Any, float]:
    """Indices of a 1-based step's batch (a fixed shuffle per epoch) and the epoch position."""
    import torch

    per_epoch = N_EXAMPLES // batch
    epoch, pos = divmod(step - 1, per_epoch)
    order = torch.randperm(N_EXAMPLES, generator=torch.Generator().manual_seed(seed + 2 + epoch))
    return order[pos * batch:(pos + 1) * batch], epoch + (pos + 1) / per_epoch


def launch(kind: str, output_dir: str, launch_no: int, seed: int) -> None:
    """Train; launch 0 dies after ``crash_after`` steps, launch 1 resumes from the newest save."""
    import torch
    from torch.utils.tensorboard import SummaryWriter

    k = KINDS[kind]
    torch.manual_seed(seed)
    torch.set_num_threads(1)
    torch.use_deterministic_algorithms(True)
    steps, warmup, schedule, peak = k["steps"], k["warmup"], k["schedule"], k["lr"]
    x, y = _data(seed, k["task"])
    out = 1 if k["task"] == "regression" else 4
    model = torch.nn.Sequential(torch.nn.Linear(FEATURES, 64), torch.nn.Tanh(),
                                torch.nn.Linear(64, out))
    opt = torch.optim.AdamW(model.parameters(), lr=peak, weight_decay=0.0)

    def factor(i: int) -> float:
        return _factor(i, warmup, steps, schedule)

    start = 1
    run = Path(output_dir)
    state: dict[str, Any] = {}
    if launch_no > 0:
        newest = max(run.glob("ckpt_step_*.pt"), key=lambda p: int(p.stem.rsplit("_", 1)[1]))
        state = torch.load(newest, weights_only=True)
        model.load_state_dict(state["model"])
        if "optimizer" in state:
            opt.load_state_dict(state["optimizer"])
    sched = torch.optim.lr_scheduler.LambdaLR(opt, factor)  # built after the optimizer's state
    if state:
        if "scheduler" in state:
            sched.load_state_dict(state["scheduler"])
            for group, lr in zip(opt.param_groups, sched.get_last_lr(), strict=True):
                group["lr"] = lr
        start = int(state["step"]) + 1
        print(f"resumed from {newest.name}: step {start - 1}, restored "
              f"{sorted(key for key in state if key != 'step')}", flush=True)
    loss_fn = (torch.nn.functional.mse_loss if k["task"] == "regression"
               else torch.nn.functional.cross_entropy)
    # kind "scaler": fp16 autocast with a GradScaler that the checkpoint does not keep
    scaler = (torch.amp.GradScaler("cpu", init_scale=INIT_SCALE, growth_interval=2000)
              if kind == "scaler" else None)
    skipped = 0
    writer = SummaryWriter(log_dir=f"{output_dir}/{TB_SUBDIR}")
    config = {
        "framework": "plain_pytorch", "optim": "adamw", "learning_rate": peak,
        "lr_scheduler_type": schedule, "warmup_steps": warmup, "max_grad_norm": 1.0,
        "weight_decay": 0.0, "per_device_train_batch_size": k["batch"],
        "gradient_accumulation_steps": 1, "world_size": 1, "max_steps": steps,
        "logging_steps": 1, "save_steps": SAVE_STEPS, "fp16": scaler is not None,
        "bf16": False, "seed": seed,
    }
    if scaler is not None:
        config.update(init_loss_scale=INIT_SCALE, loss_scale_growth_interval=2000)
    writer.add_text("args", json.dumps(config, indent=2, sort_keys=True))
    print(f"config: {json.dumps(config, sort_keys=True)}", flush=True)
    for step in range(start, steps + 1):
        if launch_no == 0 and step == k["crash_after"] + 1:
            writer.close()
            raise RuntimeError(f"sample_runs: simulated crash (node lost) at step {step}")
        # kind "data": the resumed launch's data iterator starts its epoch over
        data_step = step - start + 1 if kind == "data" else step
        idx, epoch = _batch(data_step, seed, k["batch"])
        lr = opt.param_groups[0]["lr"]
        opt.zero_grad()
        logged: dict[str, float] = {}
        if scaler is None:
            loss = loss_fn(model(x[idx]), y[idx])
            loss.backward()
            grad_norm = torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            opt.step()
        else:
            with torch.autocast("cpu", dtype=torch.float16):
                pred = model(x[idx])
            loss = loss_fn(pred.float(), y[idx])
            scale = scaler.get_scale()
            scaler.scale(loss).backward()
            scaler.unscale_(opt)
            grad_norm = torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            scaler.step(opt)
            scaler.update()
            if scaler.get_scale() < scale:
                skipped += 1
                print(f"step {step}: gradient overflow, skipping the optimizer step; loss "
                      f"scale {scale:g} -> {scaler.get_scale():g}", flush=True)
            logged = {"loss_scale": scale, "skipped_steps": skipped}
        sched.step()
        for tag, value in (("loss", loss.item()), ("grad_norm", grad_norm.item()),
                           ("learning_rate", lr), ("epoch", epoch), *logged.items()):
            writer.add_scalar(f"train/{tag}", value, step)
        print(f"step {step}: loss={loss.item():.6g} grad_norm={grad_norm.item():.6g} "
              f"learning_rate={lr:.6g}", flush=True)
        if step % SAVE_STEPS == 0:
            state = {"model": model.state_dict(), "step": step}
            if kind != "optimizer":
                state["optimizer"] = opt.state_dict()
            if kind != "scheduler":
                state["scheduler"] = sched.state_dict()
            torch.save(state, run / f"ckpt_step_{step}.pt")
            print(f"step {step}: saved ckpt_step_{step}.pt", flush=True)
    writer.close()


HF_STEPS, HF_SAVE, HF_CRASH, HF_FROM, HF_WARMUP = 40, 10, 25, 20, 10


def launch_hf(output_dir: str, launch_no: int, seed: int) -> None:
    """An HF Trainer run (make.py's tiny GPT-2 recipe); launch 0 raises after step 25, launch 1
    resumes from checkpoint-20, whose scheduler.pt is gone: the Trainer then silently loads
    neither the scheduler nor the optimizer."""
    import make  # beside this file; its helpers build the model, the data and the arguments
    from transformers import Trainer, TrainerCallback

    class CrashAfter(TrainerCallback):  # type: ignore[misc]
        """Raise when the step after ``HF_CRASH`` begins: a real crash, with a traceback."""

        def on_step_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
            if state.global_step == HF_CRASH:
                raise RuntimeError(f"sample_runs: simulated crash (node lost) at step "
                                   f"{state.global_step + 1}")

    make._seed_everything(seed)
    args = make._args(output_dir, seed, max_steps=HF_STEPS, learning_rate=3e-3,
                      warmup_steps=HF_WARMUP, lr_scheduler_type="linear", max_grad_norm=1.0,
                      logging_steps=1, save_steps=HF_SAVE, save_total_limit=3)
    trainer = Trainer(model=make._tiny_gpt2(), args=args,
                      train_dataset=make._progressions(512, seed=seed + 1),
                      callbacks=[CrashAfter()] if launch_no == 0 else [])
    if launch_no == 0:
        trainer.train()
    else:
        trainer.train(resume_from_checkpoint=f"{output_dir}/checkpoint-{HF_FROM}")
    make._finish(trainer)


def _train_hf(output_dir: str, launch_no: int, p: Any) -> None:
    """Both HF launches; between them checkpoint-20/scheduler.pt is lost (a partial copy)."""
    del launch_no
    for n in (0, 1):
        if n == 1:
            lost = Path(output_dir) / f"checkpoint-{HF_FROM}" / "scheduler.pt"
            lost.unlink()
            print(f"sample_runs: {lost} lost in a partial copy before the resume", flush=True)
        sys.stdout.flush()
        rc = subprocess.run([sys.executable, str(HERE / "resumeruns.py"), "hf", output_dir,
                             str(n), str(p.seed)], timeout=LAUNCH_TIMEOUT,
                            check=False).returncode
        _require((rc != 0) == (n == 0), f"launch {n} exited {rc}")


def _train(kind: str) -> Callable[[str, int, Any], None]:
    """The spec's train: both launches as subprocesses, output appended to train.log."""

    def train(output_dir: str, launch_no: int, p: Any) -> None:
        del launch_no
        for n in (0, 1):
            sys.stdout.flush()
            rc = subprocess.run([sys.executable, str(HERE / "resumeruns.py"), kind, output_dir,
                                 str(n), str(p.seed)], timeout=LAUNCH_TIMEOUT,
                                check=False).returncode
            _require((rc != 0) == (n == 0), f"launch {n} exited {rc}")

    return train


# --------------------------------------------------------------------------------------------
# Reading back (the self-checks)
# --------------------------------------------------------------------------------------------


def _segments(run_dir: Path) -> list[dict[str, list[tuple[int, float]]]]:
    """``[{tag: [(step, value)]}]`` per event file, in time order (one file per launch)."""
    from tensorboard.backend.event_processing.event_file_loader import EventFileLoader

    out = []
    for path in run_dir.rglob("events.out.tfevents.*"):
        series: dict[str, list[tuple[int, float]]] = {}
        first_wall = math.inf
        for event in EventFileLoader(str(path)).Load():
            first_wall = min(first_wall, event.wall_time)
            if not event.HasField("summary"):
                continue
            for value in event.summary.value:
                if value.metadata.plugin_data.plugin_name == "scalars" and value.tensor.float_val:
                    number = float(value.tensor.float_val[0])
                elif value.HasField("simple_value"):
                    number = float(value.simple_value)
                else:
                    continue
                series.setdefault(value.tag.removeprefix("train/"), []).append(
                    (int(event.step), number))
        out.append((first_wall, series))
    return [series for _, series in sorted(out, key=lambda pair: pair[0])]


def _two_launches(run_dir: Path, kind: str, *restored: str) -> tuple[dict[str, Any], ...]:
    """Checks both runs share: a crash, a resume from the newest checkpoint, two segments."""
    import torch

    k = KINDS[kind]
    log = (run_dir / LOG_NAME).read_text(encoding="utf-8", errors="replace")
    _require("Traceback (most recent call last)" in log and "simulated crash" in log,
             "no traceback from the first launch")
    segs = _segments(run_dir)
    _require(len(segs) == 2, f"expected two event files, got {len(segs)}")
    first = {tag: dict(pts) for tag, pts in segs[0].items()}
    second = {tag: dict(pts) for tag, pts in segs[1].items()}
    resumed_from = k["crash_after"] // SAVE_STEPS * SAVE_STEPS
    resume = resumed_from + 1
    _require(sorted(first["loss"]) == list(range(1, k["crash_after"] + 1)), "launch 0 steps")
    _require(sorted(second["loss"]) == list(range(resume, k["steps"] + 1)), "launch 1 steps")
    _require(f"resumed from ckpt_step_{resumed_from}.pt" in log, "launch 1 did not resume")
    state = torch.load(run_dir / f"ckpt_step_{resumed_from}.pt", weights_only=True)
    _require(sorted(state) == sorted(["model", "step", *restored]), f"keys {sorted(state)}")
    checkpoints = sorted(int(p.stem.rsplit("_", 1)[1]) for p in run_dir.glob("ckpt_step_*.pt"))
    return first, second, {"resume_step": resume, "resumed_from_checkpoint": resumed_from,
                           "crash_after_step": k["crash_after"], "steps": k["steps"],
                           "segments": 2,
                           "segment_steps": [[1, k["crash_after"]], [resume, k["steps"]]],
                           "checkpoints": checkpoints, "checkpoint_keys": sorted(state)}


def _label(cause: str, step: int, facts: dict[str, Any], **more: Any) -> dict[str, Any]:
    """A resume label. ``first_bad_step`` is the step resumed from, the checkpoint's
    (``docs/labels.md``, resume); the first step of the resumed launch is ``resume_step``."""
    del step  # the resumed launch's first step, kept in the facts as resume_step
    return {"family": "resume", "cause": cause,
            "first_bad_step": facts["resumed_from_checkpoint"], "culprit_rank": None,
            **more, **facts}


def _check_scheduler(run_dir: Path, p: Any) -> dict[str, Any]:
    """The LR at the resume step is the warm-up's first value, not the first launch's LR."""
    del p
    first, second, facts = _two_launches(run_dir, "scheduler", "optimizer")
    k, resume = KINDS["scheduler"], facts["resume_step"]
    before, after = first["learning_rate"][resume], second["learning_rate"][resume]
    warm = [second["learning_rate"][resume + i] for i in range(k["warmup"])]
    _require(after < 0.5 * before, f"LR at the resume step: {before:.4g} -> {after:.4g}")
    _require(all(b > a for a, b in itertools.pairwise(warm)), "no warm-up ramp again")
    _require(math.isclose(after, k["lr"] / k["warmup"], rel_tol=1e-5), "not the warm-up's start")
    return _label(
        "scheduler_not_restored", resume, facts,
        lr_before=round(before, 6), lr_after=round(after, 6),
        lr_ratio=round(after / before, 4),
        warmup_steps_again=k["warmup"], lr_after_warmup_again=round(warm[-1], 6),
        note=f"launch 1 restored the model, the optimizer and the step from "
        f"ckpt_step_{facts['resumed_from_checkpoint']}.pt (which has no scheduler state) and "
        f"built a fresh LambdaLR: the LR at step {resume} is {after:.4g} (the warm-up's first "
        f"value) where launch 0 had {before:.4g}",
    )


def _check_optimizer(run_dir: Path, p: Any) -> dict[str, Any]:
    """The loss after the resume jumps above launch 0's at the same steps, then falls back."""
    del p
    first, second, facts = _two_launches(run_dir, "optimizer", "scheduler")
    resume, last0 = facts["resume_step"], facts["crash_after_step"]
    for step in range(resume, last0 + 1):  # the LR went on exactly as before
        _require(math.isclose(first["learning_rate"][step], second["learning_rate"][step],
                              rel_tol=1e-6), f"LR differs at step {step}")
    _require(math.isclose(first["loss"][resume], second["loss"][resume], rel_tol=1e-5),
             "the restored weights give another loss at the resume step")
    ratios = {s: second["loss"][s] / first["loss"][s] for s in range(resume + 1, last0 + 1)}
    peak_step = max(ratios, key=ratios.__getitem__)
    _require(ratios[peak_step] >= 3, f"no loss jump: {ratios}")
    pre = [first["loss"][s] for s in range(resume - 10, resume)]
    level = statistics.median(pre)
    late = statistics.median(second["loss"][s] for s in range(resume + 25, resume + 30))
    jump = second["loss"][peak_step]
    _require(late - level < 0.5 * (jump - level), f"the jump did not decay: {late:.4g}")
    return _label(
        "missing_optimizer_state", resume, facts,
        loss_at_resume_step=round(second["loss"][resume], 6),
        loss_jump_step=peak_step, loss_jump=round(jump, 6),
        loss_same_step_first_launch=round(first["loss"][peak_step], 6),
        loss_jump_ratio=round(ratios[peak_step], 3),
        loss_level_before=round(level, 6), loss_25_to_30_steps_after=round(late, 6),
        lr_at_resume_step=round(second["learning_rate"][resume], 6),
        note=f"launch 1 restored the model, the scheduler and the step from "
        f"ckpt_step_{facts['resumed_from_checkpoint']}.pt (which has no optimizer state) with a "
        f"fresh AdamW: the LR goes on unchanged, the loss jumps {ratios[peak_step]:.1f}x above "
        f"launch 0's at step {peak_step} and decays over the next steps",
    )


def _drops(scale: dict[int, float], steps: range) -> list[int]:
    """Steps after which the loss scale went down (an overflow: the step was skipped)."""
    return [s for s in steps if s + 1 in scale and scale[s + 1] < scale[s]]


def _check_scaler(run_dir: Path, p: Any) -> dict[str, Any]:
    """The loss scale restarts at its initial value after the resume, and overflows again."""
    del p
    first, second, facts = _two_launches(run_dir, "scaler", "optimizer", "scheduler")
    resume, last = facts["resume_step"], facts["steps"]
    before, after = first["loss_scale"][resume], second["loss_scale"][resume]
    _require(before < INIT_SCALE / 2, f"launch 0 never settled below its start: {before:g}")
    _require(after == INIT_SCALE, f"launch 1 started at {after:g}, not at {INIT_SCALE:g}")
    early = _drops(first["loss_scale"], range(1, 20))
    again = _drops(second["loss_scale"], range(resume, last))
    _require(bool(early) and bool(again), f"no overflow skips: {early} / {again}")
    _require(not _drops(first["loss_scale"], range(20, facts["crash_after_step"])),
             "launch 0 overflowed after its start")
    return _label(
        "grad_scaler_not_restored", resume, facts,
        loss_scale_before=before, loss_scale_after=after, initial_loss_scale=INIT_SCALE,
        skipped_steps_at_start=early, skipped_steps_after_resume=again,
        note=f"fp16 autocast with a GradScaler(init_scale={INIT_SCALE:g}); launch 1 restored "
        f"the model, the optimizer, the scheduler and the step from "
        f"ckpt_step_{facts['resumed_from_checkpoint']}.pt (no scaler state): its scaler "
        f"started at {after:g} where launch 0 had settled at {before:g}, and skipped "
        f"{len(again)} optimizer steps again while it came down",
    )


def _check_hf(run_dir: Path, p: Any) -> dict[str, Any]:
    """HF: checkpoint-20 lacks scheduler.pt; after the resume the LR warms up again."""
    del p
    log = (run_dir / LOG_NAME).read_text(encoding="utf-8", errors="replace")
    _require("Traceback (most recent call last)" in log and "simulated crash" in log,
             "no traceback from the first launch")
    ckpt = run_dir / f"checkpoint-{HF_FROM}"
    _require(not (ckpt / "scheduler.pt").exists() and (ckpt / "optimizer.pt").is_file(),
             "checkpoint-20 should hold optimizer.pt and no scheduler.pt")
    segs = _segments(run_dir)
    _require(len(segs) == 2, f"expected two event files, got {len(segs)}")
    first, second = ({t: dict(v) for t, v in seg.items()} for seg in segs)
    resume = HF_FROM + 1
    _require(sorted(first["loss"]) == list(range(1, HF_CRASH + 1)), "launch 0 steps")
    _require(sorted(second["loss"]) == list(range(resume, HF_STEPS + 1)), "launch 1 steps")
    before, after = first["learning_rate"][resume], second["learning_rate"][resume]
    warm = [second["learning_rate"][resume + i] for i in range(HF_WARMUP + 1)]
    _require(after < 0.5 * before, f"LR at the resume step: {before:.4g} -> {after:.4g}")
    _require(all(b > a for a, b in itertools.pairwise(warm)), "no warm-up ramp again")
    return {
        "family": "resume", "cause": ["scheduler_not_restored", "missing_optimizer_state"],
        "first_bad_step": HF_FROM, "culprit_rank": None,  # the step resumed from (the guide)
        "lr_before": before, "lr_after": after, "lr_after_warmup_again": warm[-1],
        "resume_step": resume, "resumed_from_checkpoint": HF_FROM,
        "crash_after_step": HF_CRASH, "steps": HF_STEPS, "segments": 2,
        "segment_steps": [[1, HF_CRASH], [resume, HF_STEPS]],
        "checkpoints": sorted(int(c.name.split("-")[1]) for c in run_dir.glob("checkpoint-*")),
        "missing_files": [f"checkpoint-{HF_FROM}/scheduler.pt"],
        "note": f"scheduler.pt of checkpoint-{HF_FROM} was lost before the resume; the HF "
        "Trainer loads optimizer.pt and scheduler.pt only when both exist, so it silently "
        f"restored neither: the LR warm-up starts again at step {resume} ({before:.4g} -> "
        f"{after:.4g}) and Adam's moments restart. scheduler_not_restored first (the LR "
        "shows it), missing_optimizer_state accepted",
    }


def _wiggle(values: list[float], half: int = 3) -> list[float]:
    """Each value minus the median of its centred window: the per-batch part of the loss."""
    return [v - statistics.median(values[max(0, i - half):i + half + 1])
            for i, v in enumerate(values)]


def _check_data(run_dir: Path, p: Any) -> dict[str, Any]:
    """The resumed launch's epoch starts over and its per-step losses repeat launch 0's."""
    del p
    first, second, facts = _two_launches(run_dir, "data", "optimizer", "scheduler")
    resume, n = facts["resume_step"], 40
    before, after = first["epoch"][resume], second["epoch"][resume]
    _require(after < before - 0.25, f"epoch {before} -> {after}: the position was kept")
    again = _wiggle([second["loss"][resume + i] for i in range(n)])
    seen = _wiggle([first["loss"][1 + i] for i in range(n)])
    corr = statistics.correlation(again, seen)
    _require(corr > 0.5, f"the losses do not repeat launch 0's from its start: {corr:.3f}")
    for step in range(resume, facts["crash_after_step"] + 1):
        _require(math.isclose(first["learning_rate"][step], second["learning_rate"][step],
                              rel_tol=1e-6), f"LR differs at step {step}")
    return _label(
        "sampler_not_restored", resume, facts,
        epoch_before=round(before, 6), epoch_after=round(after, 6),
        loss_pattern_correlation=round(corr, 4), loss_pattern_points=n,
        note=f"launch 1 restored the model, the optimizer, the scheduler and the step from "
        f"ckpt_step_{facts['resumed_from_checkpoint']}.pt but started its data iterator at the "
        f"beginning of the epoch: from step {resume} it sees launch 0's batches 1, 2, ... "
        f"again (epoch {before:.3g} -> {after:.3g}; the per-step loss wiggles correlate "
        f"{corr:.2f} with launch 0's from its start)",
    )




_BASE = ("plain loop, MLP, AdamW, LambdaLR, clip 1.0, `ckpt_step_N.pt` every "
         f"{SAVE_STEPS} steps; launch 1 raises after step {{crash}}, launch 2 resumes from "
         "the newest checkpoint into the same TensorBoard folder; ")

SPECS: tuple[Spec, ...] = (
    Spec(
        name="resume_scheduler_not_restored",
        situation="a resume with a fresh LR scheduler: the warm-up starts again",
        how=_BASE.format(crash=KINDS["scheduler"]["crash_after"])
        + "the checkpoint holds model, optimizer and step, no scheduler; warm-up 10, cosine, "
        "lr 1e-2, 80 steps",
        train=_train("scheduler"), check=_check_scheduler,
        conclusion=lambda lb: (f"resume / scheduler_not_restored, resumed from step "
                               f"{lb['first_bad_step']}: "
                               f"LR {lb['lr_before']} before the crash, {lb['lr_after']} after "
                               "the resume (the warm-up again)"),
    ),
    Spec(
        name="resume_optimizer_lost",
        situation="a resume with a fresh optimizer: the loss jumps, then decays",
        how=_BASE.format(crash=KINDS["optimizer"]["crash_after"])
        + "the checkpoint holds model, scheduler and step, no optimizer; regression, lr 3e-2 "
        "constant after warm-up 10, 100 steps",
        train=_train("optimizer"), check=_check_optimizer,
        conclusion=lambda lb: (f"resume / missing_optimizer_state, resumed from step "
                               f"{lb['first_bad_step']}: loss {lb['loss_jump_ratio']}x the first "
                               f"launch's at step {lb['loss_jump_step']}, then decays"),
    ),
    Spec(
        name="resume_grad_scaler_lost",
        situation="a resume with a fresh fp16 GradScaler: the loss scale starts over and "
        "overflows again",
        how=_BASE.format(crash=KINDS["scaler"]["crash_after"])
        + "fp16 autocast on CPU with a GradScaler(init_scale=2**24) that settles at 65536 "
        "after its first overflows; the checkpoint holds model, optimizer, scheduler and "
        "step, no scaler; regression, lr 3e-3, 100 steps",
        train=_train("scaler"), check=_check_scaler,
        conclusion=lambda lb: (f"resume / grad_scaler_not_restored, resumed from step "
                               f"{lb['first_bad_step']}: loss scale {lb['loss_scale_before']:g} "
                               f"before, {lb['loss_scale_after']:g} after the resume; "
                               f"{len(lb['skipped_steps_after_resume'])} steps skipped again"),
    ),
    Spec(
        name="resume_hf_scheduler_missing",
        situation="an HF Trainer resume from a checkpoint whose scheduler.pt was lost: the "
        "Trainer silently skips the scheduler and the optimizer",
        how=f"tiny GPT-2, HF Trainer, lr 3e-3, warm-up {HF_WARMUP}, linear, save every "
        f"{HF_SAVE}; launch 1 raises after step {HF_CRASH}; checkpoint-{HF_FROM}/scheduler.pt "
        f"is deleted; launch 2 resumes from checkpoint-{HF_FROM}",
        train=_train_hf, check=_check_hf,
        conclusion=lambda lb: (f"resume / scheduler_not_restored (missing_optimizer_state "
                               f"accepted), resumed from step {lb['first_bad_step']}: LR "
                               f"{lb['lr_before']:.4g} before, {lb['lr_after']:.4g} after the "
                               "resume (the warm-up again)"),
    ),
    Spec(
        name="resume_data_position_lost",
        situation="a resume whose data iterator starts the epoch over: the same batches again",
        how=_BASE.format(crash=KINDS["data"]["crash_after"])
        + "the checkpoint holds model, optimizer, scheduler and step, no data position; the "
        "resumed launch's batches start at the epoch's first; 25% noisy labels (batches differ "
        "in difficulty), warm-up 10, cosine, lr 1e-2, 120 steps",
        train=_train("data"), check=_check_data,
        conclusion=lambda lb: (f"resume / sampler_not_restored, resumed from step "
                               f"{lb['first_bad_step']}: "
                               f"epoch {lb['epoch_before']} → {lb['epoch_after']}, the loss "
                               f"pattern repeats (correlation {lb['loss_pattern_correlation']})"),
    ),
)


if __name__ == "__main__":
    (launch_hf if sys.argv[1] == "hf" else partial(launch, sys.argv[1]))(
        sys.argv[2], int(sys.argv[3]), int(sys.argv[4]))
