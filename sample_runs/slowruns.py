"""The slow sample runs: where the time of a training run went.

- ``slow_dataloader_starved``: a plain loop whose ``Dataset.__getitem__`` sleeps per item
  (a slow decode or a slow mount), read with ``num_workers=0``: the loop waits for data most
  of each step. It logs what mmengine logs: ``train/time`` (the whole iteration) and
  ``train/data_time`` (the wait for the batch) to TensorBoard every step, and an mmengine-style
  ``Epoch(train) [1][ 10/60]  lr: ...  time: ...  data_time: ...  loss: ...`` line every
  10 steps.
- ``slow_periodic_checkpoint_stalls``: a plain loop that saves a checkpoint every
  ``save_steps`` steps (``checkpoint-N/model.pt``, the previous one removed) and then waits
  for the "upload to slow storage" (a sleep): every save stalls training.
- ``slow_rank_straggler_4ranks``: ``torchrun --standalone --nproc_per_node 4`` over gloo on
  CPU running :mod:`slow_worker`: one rank's batches come from slow storage (a sleep per
  step); every rank logs a timestamped line with its own ``data_time`` and ``compute_time``
  before the gradient all-reduce, in which the fast ranks wait for the slow one.

The self-checks read the runs back without autopsy (TensorBoard's event loader, a few
regexes on the workers' own lines), assert the situation really happened, and compute the
labels from what was measured: medians, stall steps, their cost, the straggler's lag.

``make.py`` registers :data:`SPECS` beside its other runs.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import time
from datetime import datetime
from pathlib import Path
from typing import Any

from spec import Spec  # the SPECS record (beside this file)

HERE = Path(__file__).resolve().parent
WORKER = HERE / "slow_worker.py"
LOG_NAME = "train.log"
LOG_DIR = "logs"
TB_SUBDIR = "runs"
WORLD = 4
LAUNCH_TIMEOUT = 120  # seconds
COLLECTIVE_TIMEOUT = 30  # seconds

FEATURES, CLASSES = 16, 4

STARVED_STEPS, STARVED_BATCH, STARVED_ITEM_DELAY = 60, 16, 0.004  # 64 ms of data per step
STALL_STEPS, STALL_SAVE_STEPS, STALL_SAVE_DELAY = 120, 20, 0.4
STRAGGLER_STEPS, STRAGGLER_DELAY, STRAGGLER_RANK = 40, 0.1, 2

LINE_RE = re.compile(r"^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3}) INFO step (\d+) loss (\S+) lr \S+ "
                     r"data_time (\S+) compute_time (\S+)$")


class SlowCheckError(AssertionError):
    """A slow run did not show the situation it was made for."""


def _require(cond: bool, what: str) -> None:
    """Fail loudly (whatever ``python -O`` says) when ``cond`` is false."""
    if not cond:
        raise SlowCheckError(what)


# --------------------------------------------------------------------------------------------
# Training (runs in make.py's child process, whose stdout/stderr is <run>/train.log)
# --------------------------------------------------------------------------------------------


def _seed(seed: int) -> None:
    import torch

    torch.manual_seed(seed)
    torch.set_num_threads(1)
    torch.use_deterministic_algorithms(True)


def _writer(output_dir: str, config: dict[str, Any]) -> Any:
    """A SummaryWriter under ``<run>/runs`` with the config as a JSON text summary ``args``."""
    from torch.utils.tensorboard import SummaryWriter

    writer = SummaryWriter(log_dir=f"{output_dir}/{TB_SUBDIR}")
    writer.add_text("args", json.dumps(config, indent=2, sort_keys=True))
    print(f"config: {json.dumps(config, sort_keys=True)}", flush=True)
    return writer


def _mlp(width: int = 64) -> Any:
    import torch

    return torch.nn.Sequential(torch.nn.Linear(FEATURES, width), torch.nn.ReLU(),
                               torch.nn.Linear(width, CLASSES))


def _or(value: Any, default: Any) -> Any:
    return default if value is None else value


def _train_starved(output_dir: str, launch: int, p: Any) -> None:
    """A loop that waits for its DataLoader: each item costs a sleep, no worker processes."""
    import torch
    from torch.utils.data import DataLoader, Dataset

    del launch
    _seed(p.seed)
    steps, lr = _or(p.steps, STARVED_STEPS), _or(p.lr, 3e-3)
    g = torch.Generator().manual_seed(p.seed + 1)
    w = torch.randn(FEATURES, CLASSES, generator=g)

    class SlowDecode(Dataset):  # type: ignore[type-arg]
        """Each item is 'decoded' slowly (a sleep), as a JPEG decode or a slow mount would be."""

        def __init__(self, n: int) -> None:
            self.x = torch.randn(n, FEATURES, generator=g)
            self.y = (self.x @ w).argmax(1)

        def __len__(self) -> int:
            return len(self.x)

        def __getitem__(self, i: int) -> tuple[Any, Any]:
            time.sleep(STARVED_ITEM_DELAY)
            return self.x[i], self.y[i]

    data = SlowDecode(steps * STARVED_BATCH)
    loader = DataLoader(data, batch_size=STARVED_BATCH, shuffle=True, num_workers=0,
                        generator=torch.Generator().manual_seed(p.seed + 2))
    writer = _writer(output_dir, {
        "framework": "plain_pytorch", "optim": "adamw", "learning_rate": lr,
        "lr_scheduler_type": "constant", "warmup_steps": 0, "max_grad_norm": 1.0,
        "per_device_train_batch_size": STARVED_BATCH, "gradient_accumulation_steps": 1,
        "dataloader_num_workers": 0, "world_size": 1, "max_steps": steps, "logging_steps": 1,
        "fp16": False, "bf16": False, "seed": p.seed,
    })
    model = _mlp()
    opt = torch.optim.AdamW(model.parameters(), lr=lr)
    t_end = time.perf_counter()
    t_start = t_end
    for step, (x, y) in enumerate(loader, start=1):
        data_time = time.perf_counter() - t_end
        loss = torch.nn.functional.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        grad_norm = torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        now = time.perf_counter()
        iter_time = now - t_end
        t_end = now
        for tag, value in (("loss", loss.item()), ("grad_norm", grad_norm.item()),
                           ("lr", lr), ("time", iter_time), ("data_time", data_time)):
            writer.add_scalar(f"train/{tag}", value, step)
        if step % 10 == 0:
            eta = (now - t_start) / step * (steps - step)
            print(f"{datetime.now():%Y/%m/%d %H:%M:%S} - mmengine - INFO - Epoch(train) "
                  f"[1][{step:>3d}/{steps}]  lr: {lr:.4e}  eta: 0:00:{eta:02.0f}  "
                  f"time: {iter_time:.4f}  data_time: {data_time:.4f}  loss: {loss.item():.4f}",
                  flush=True)
        if step >= steps:
            break
    writer.close()


def _train_checkpoint_stalls(output_dir: str, launch: int, p: Any) -> None:
    """A loop that saves every ``save_steps`` and then waits for the slow storage."""
    import torch

    del launch
    _seed(p.seed)
    steps, lr, batch = _or(p.steps, STALL_STEPS), _or(p.lr, 3e-3), 32
    save_steps = _or(p.event_step, STALL_SAVE_STEPS)
    g = torch.Generator().manual_seed(p.seed + 1)
    x = torch.randn(steps * batch, FEATURES, generator=g)
    y = (x @ torch.randn(FEATURES, CLASSES, generator=g)).argmax(1)
    writer = _writer(output_dir, {
        "framework": "plain_pytorch", "optim": "adamw", "learning_rate": lr,
        "lr_scheduler_type": "constant", "warmup_steps": 0, "max_grad_norm": 1.0,
        "per_device_train_batch_size": batch, "gradient_accumulation_steps": 1,
        "world_size": 1, "max_steps": steps, "logging_steps": 1, "save_steps": save_steps,
        "save_total_limit": 1, "fp16": False, "bf16": False, "seed": p.seed,
    })
    model = _mlp()
    opt = torch.optim.AdamW(model.parameters(), lr=lr)
    for step in range(1, steps + 1):
        idx = slice((step - 1) * batch, step * batch)
        loss = torch.nn.functional.cross_entropy(model(x[idx]), y[idx])
        opt.zero_grad()
        loss.backward()
        grad_norm = torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        if step % save_steps == 0:
            t0 = time.perf_counter()
            ckpt = Path(output_dir) / f"checkpoint-{step}"
            ckpt.mkdir(parents=True, exist_ok=True)
            torch.save({"model": model.state_dict(), "optimizer": opt.state_dict(),
                        "step": step}, ckpt / "model.pt")
            for old in Path(output_dir).glob("checkpoint-*"):
                if old != ckpt:
                    shutil.rmtree(old)
            time.sleep(STALL_SAVE_DELAY)  # the upload to slow (network) storage
            print(f"step {step}: saved {ckpt.name} in {time.perf_counter() - t0:.3f}s",
                  flush=True)
        for tag, value in (("loss", loss.item()), ("grad_norm", grad_norm.item()), ("lr", lr)):
            writer.add_scalar(f"train/{tag}", value, step)
        print(f"step {step}: loss={loss.item():.6g} grad_norm={grad_norm.item():.6g} "
              f"lr={lr:.6g}", flush=True)
    writer.close()


def _train_straggler(output_dir: str, launch: int, p: Any) -> None:
    """torchrun 4 ranks of :mod:`slow_worker` with ``--redirects 3 --log-dir <run>/logs``."""
    del launch
    env = dict(os.environ)
    env.pop("TORCH_DISTRIBUTED_DEBUG", None)
    cmd = [
        sys.executable, "-m", "torch.distributed.run", "--standalone",
        "--nproc_per_node", str(WORLD), "--redirects", "3", "--log-dir", f"{output_dir}/{LOG_DIR}",
        os.path.relpath(WORKER), "--steps", str(_or(p.steps, STRAGGLER_STEPS)),
        "--delay", str(STRAGGLER_DELAY), "--timeout", str(COLLECTIVE_TIMEOUT),
        "--seed", str(p.seed),
    ]
    sys.stdout.flush()
    rc = subprocess.run(cmd, env=env, timeout=LAUNCH_TIMEOUT, check=False).returncode
    if rc:
        raise SystemExit(rc)


# --------------------------------------------------------------------------------------------
# Reading back (the self-checks)
# --------------------------------------------------------------------------------------------


def _tb(run_dir: Path) -> dict[str, list[tuple[int, float, float]]]:
    """``{tag: [(step, value, wall_time)]}`` of the run's single event file."""
    from tensorboard.backend.event_processing.event_file_loader import EventFileLoader

    files = sorted(run_dir.rglob("events.out.tfevents.*"))
    _require(len(files) == 1, f"expected one event file, got {files}")
    out: dict[str, list[tuple[int, float, float]]] = {}
    for event in EventFileLoader(str(files[0])).Load():
        if not event.HasField("summary"):
            continue
        for value in event.summary.value:
            if value.HasField("simple_value"):
                number = float(value.simple_value)
            elif value.metadata.plugin_data.plugin_name == "scalars" and value.tensor.float_val:
                number = float(value.tensor.float_val[0])
            else:
                continue
            out.setdefault(value.tag, []).append((int(event.step), number, float(event.wall_time)))
    return out


def _r(x: float, nd: int = 4) -> float:
    return round(float(x), nd)


def _label(family: str, cause: str | None, first_bad_step: int | None,
           culprit_rank: int | None, **more: Any) -> dict[str, Any]:
    return {"family": family, "cause": cause, "first_bad_step": first_bad_step,
            "culprit_rank": culprit_rank, **more}


def _loss_falls(loss: list[float]) -> tuple[float, float]:
    first, last = statistics.mean(loss[:5]), statistics.mean(loss[-5:])
    _require(last < first, f"loss did not fall: {first:.4f} -> {last:.4f}")
    return first, last


def _check_starved(run_dir: Path, p: Any) -> dict[str, Any]:
    """Data time is most of every step (after the first)."""
    tb = _tb(run_dir)
    steps = _or(p.steps, STARVED_STEPS)
    for tag in ("train/loss", "train/time", "train/data_time"):
        _require([s for s, _, _ in tb.get(tag, [])] == list(range(1, steps + 1)), f"{tag} steps")
    it = [v for _, v, _ in tb["train/time"]][1:]
    data = [v for _, v, _ in tb["train/data_time"]][1:]
    share = [d / t for d, t in zip(data, it, strict=True)]
    med_share = statistics.median(share)
    _require(med_share > 0.7, f"data share only {med_share:.2f}")
    _require(min(data) >= STARVED_BATCH * STARVED_ITEM_DELAY * 0.9, "a batch came too fast")
    log = (run_dir / LOG_NAME).read_text(encoding="utf-8")
    _require("mmengine - INFO - Epoch(train)" in log and "data_time: " in log, "no mmengine lines")
    first, last = _loss_falls([v for _, v, _ in tb["train/loss"]])
    return _label(
        "slow", "data_starvation", None, None, steps=steps,
        step_time_median_s=_r(statistics.median(it)),
        data_time_median_s=_r(statistics.median(data)),
        compute_time_median_s=_r(statistics.median(t - d for t, d in zip(it, data, strict=True))),
        data_share_median=_r(med_share, 3),
        data_seconds_per_batch_planted=STARVED_BATCH * STARVED_ITEM_DELAY,
        loss_first5=_r(first), loss_last5=_r(last),
        note="the first step (warm-up) is left out of the medians; the whole run is starved, "
        "so there is no step where it became slow: first_bad_step is null (docs/labels.md, "
        "slow)",
    )


def _check_checkpoint_stalls(run_dir: Path, p: Any) -> dict[str, Any]:
    """Every save step's interval is far above the median step time; nothing else is."""
    tb = _tb(run_dir)
    steps = _or(p.steps, STALL_STEPS)
    every = _or(p.event_step, STALL_SAVE_STEPS)
    loss = tb.get("train/loss", [])
    _require([s for s, _, _ in loss] == list(range(1, steps + 1)), "loss steps")
    walls = {s: w for s, _, w in loss}
    delta = {s: walls[s] - walls[s - 1] for s in range(3, steps + 1)}  # step 2's: warm-up
    med = statistics.median(delta.values())
    stalls = sorted(s for s, d in delta.items() if d > 5 * med and d > 0.2)
    _require(stalls == list(range(every, steps + 1, every)), f"stall steps {stalls}")
    extra = sum(delta[s] - med for s in stalls)
    total = walls[steps] - walls[2]
    _require(sorted(int(c.name.split("-")[1]) for c in run_dir.glob("checkpoint-*")) == [
        steps - steps % every], "checkpoints on disk")
    first, last = _loss_falls([v for _, v, _ in loss])
    return _label(
        "slow", "periodic_stall", stalls[0], None, steps=steps,
        save_steps=every, stall_steps=stalls, step_time_median_s=_r(med),
        stall_seconds_each=[_r(delta[s]) for s in stalls], stall_cost_s=_r(extra, 3),
        stall_share_of_run=_r(extra / total, 3), run_seconds_after_warmup=_r(total, 3),
        loss_first5=_r(first), loss_last5=_r(last),
        note="the loop saves, then logs the step: the wall-time interval that ends at each "
        "save step holds the save and the simulated upload (a sleep)",
    )


def _stamp(text: str) -> float:
    return datetime.strptime(text, "%Y-%m-%d %H:%M:%S,%f").timestamp()


def _rank_lines(run_dir: Path) -> dict[int, dict[int, tuple[float, float, float, float]]]:
    """``{rank: {step: (wall, loss, data_time, compute_time)}}`` from the per-rank logs."""
    out: dict[int, dict[int, tuple[float, float, float, float]]] = {}
    files = sorted(run_dir.glob(f"{LOG_DIR}/*/attempt_0/*/stderr.log"))
    _require(len(files) == WORLD, f"rank logs: {files}")
    for f in files:
        rank = int(f.parent.name)
        for line in f.read_text(encoding="utf-8").splitlines():
            m = LINE_RE.match(line.strip())
            if m:
                out.setdefault(rank, {})[int(m.group(2))] = (
                    _stamp(m.group(1)), float(m.group(3)), float(m.group(4)), float(m.group(5)))
    return out


def _check_straggler(run_dir: Path, p: Any) -> dict[str, Any]:
    """The slow rank is last at every step by about its delay; the others wait for it."""
    steps = _or(p.steps, STRAGGLER_STEPS)
    lines = _rank_lines(run_dir)
    _require(sorted(lines) == list(range(WORLD)), f"ranks {sorted(lines)}")
    for r, by_step in lines.items():
        _require(sorted(by_step) == list(range(1, steps + 1)), f"rank {r} steps")
    lags: dict[int, list[float]] = {r: [] for r in range(WORLD)}
    for s in range(1, steps + 1):
        walls = {r: lines[r][s][0] for r in range(WORLD)}
        for r in range(WORLD):
            others = [walls[o] for o in range(WORLD) if o != r]
            lags[r].append(walls[r] - statistics.median(others))
    slow = lags[STRAGGLER_RANK]
    _require(statistics.median(slow) > 0.5 * STRAGGLER_DELAY, f"lag {statistics.median(slow)}")
    _require(slow[0] > 0.5 * STRAGGLER_DELAY, f"not slow at step 1: {slow[0]}")
    last_count = sum(
        1 for s in range(1, steps + 1)
        if max(range(WORLD), key=lambda r: lines[r][s][0]) == STRAGGLER_RANK)
    _require(last_count >= 0.9 * steps, f"the slow rank was last at {last_count} steps")
    data_med = {r: statistics.median(v[2] for v in lines[r].values()) for r in range(WORLD)}
    _require(data_med[STRAGGLER_RANK] >= 0.9 * STRAGGLER_DELAY, f"data times {data_med}")
    _require(all(data_med[r] < 0.2 * STRAGGLER_DELAY for r in range(WORLD)
                 if r != STRAGGLER_RANK), f"data times {data_med}")
    period = {r: statistics.median(
        lines[r][s][0] - lines[r][s - 1][0] for s in range(3, steps + 1)) for r in range(WORLD)}
    log = (run_dir / LOG_NAME).read_text(encoding="utf-8", errors="replace")
    _require("ChildFailedError" not in log, "a rank failed")
    texts = {r: "\n".join(f.read_text(encoding="utf-8") for f in
                          sorted(run_dir.glob(f"{LOG_DIR}/*/attempt_0/{r}/*.log")))
             for r in range(WORLD)}
    _require(all("training finished" in t for t in texts.values()), "a rank did not finish")
    return _label(
        "slow", "straggler", None, STRAGGLER_RANK, steps=steps,
        world_size=WORLD, launcher="torchrun --standalone --nproc_per_node 4", backend="gloo",
        collective_timeout_s=COLLECTIVE_TIMEOUT, log_layout="redirects",
        ranks={str(r): {"last_step": steps, "exitcode": 0, "first_error": None}
               for r in range(WORLD)},
        timed_out_ranks=[], connection_closed_ranks=[], sigterm_ranks=[],
        torchelastic_root_cause_rank=None,
        planted_delay_s=STRAGGLER_DELAY,
        data_time_median_s={str(r): _r(v) for r, v in data_med.items()},
        arrival_lag_median_s={str(r): _r(statistics.median(v)) for r, v in lags.items()},
        step_period_median_s={str(r): _r(v) for r, v in period.items()},
        straggler_last_at_steps=last_count,
        note=f"rank {STRAGGLER_RANK} sleeps {STRAGGLER_DELAY}s loading every batch; each rank "
        "logs before the gradient all-reduce, so the slow rank's line comes last at every "
        "step while every rank's step period is the same (the fast ranks wait in the "
        "all-reduce); a whole-run problem, so there is no step where it became slow: "
        "first_bad_step is null (docs/labels.md, slow)",
    )




SPECS: tuple[Spec, ...] = (
    Spec(
        name="slow_dataloader_starved",
        situation="data loading dominates every step: the model waits for its DataLoader",
        how=f"plain loop, MLP, AdamW, {STARVED_STEPS} steps of batch {STARVED_BATCH}; "
        f"`Dataset.__getitem__` sleeps {STARVED_ITEM_DELAY * 1000:g} ms per item, "
        "`num_workers=0`; TensorBoard `train/time` and `train/data_time` every step, an "
        "mmengine-style line every 10",
        train=_train_starved, check=_check_starved,
        conclusion=lambda lb: (f"slow / data_starvation: data time {lb['data_time_median_s']}s "
                               f"of {lb['step_time_median_s']}s per step "
                               f"({lb['data_share_median']:.0%}), the whole run"),
    ),
    Spec(
        name="slow_periodic_checkpoint_stalls",
        situation="every checkpoint save stalls training",
        how=f"plain loop, MLP, AdamW, {STALL_STEPS} steps; saves `checkpoint-N/model.pt` every "
        f"{STALL_SAVE_STEPS} steps then waits {STALL_SAVE_DELAY}s for the upload (a sleep)",
        train=_train_checkpoint_stalls, check=_check_checkpoint_stalls,
        conclusion=lambda lb: (f"slow / periodic_stall: stalls at steps {lb['stall_steps']} "
                               f"(every save_steps={lb['save_steps']}), "
                               f"{lb['stall_cost_s']}s lost, "
                               f"{lb['stall_share_of_run']:.0%} of the run"),
    ),
    Spec(
        name="slow_rank_straggler_4ranks",
        situation="one rank is slow every step; the others wait for it in the all-reduce",
        how=f"torchrun 4 ranks, gloo, MLP with gradients all-reduced by hand, "
        f"{STRAGGLER_STEPS} steps; rank {STRAGGLER_RANK} sleeps {STRAGGLER_DELAY}s loading "
        "each batch; every rank logs `step N loss X lr X data_time D compute_time C` before "
        "the all-reduce; `--redirects 3 --log-dir logs`",
        train=_train_straggler, check=_check_straggler,
        conclusion=lambda lb: (f"slow / straggler: rank {lb['culprit_rank']} arrives "
                               f"{lb['arrival_lag_median_s'][str(lb['culprit_rank'])]}s after "
                               f"the others at every step (data time "
                               f"{lb['data_time_median_s'][str(lb['culprit_rank'])]}s)"),
    ),
)

