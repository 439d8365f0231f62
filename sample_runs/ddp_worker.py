#!/usr/bin/env python
"""The per-rank training script of the multi-rank sample runs (launched by ``torchrun``).

A tiny MLP classifier trained with ``DistributedDataParallel`` over the gloo backend on CPU, on
synthetic data, every rank logging one line per step with a timestamp::

    2026-11-22 14:50:13,123 INFO step 12 loss 1.2345 mean_loss 1.2210 grad_norm 0.4321 lr 0.010000

Each step also all-reduces the loss (``dist.all_reduce``) for the logged mean, as many
training loops do. ``SCENARIO`` (the first argument) plants one failure on one rank:

- ``healthy``: nothing goes wrong.
- ``exception``: rank 2 raises a ``ValueError`` from a batch check in user code at step 15.
- ``stall``: rank 1 sleeps far past the collective timeout before step 10's forward.
- ``mismatch``: rank 3 all-reduces a ``[2]`` tensor (loss and count) at step 8 while the
  others all-reduce ``[1]``. This scenario averages the gradients by hand with
  ``dist.all_reduce`` instead of DDP: in torch 2.13 (CPU), wrapping a model in DDP under
  ``TORCH_DISTRIBUTED_DEBUG=DETAIL`` with gloo segfaults in ``_ddp_init_helper``.
- ``uneven``: rank 0's shard holds one batch fewer; it ends its epoch a step early and waits
  in the end-of-training barrier while the others wait in the next step's all-reduce.

Usage (see ``multirank.py``)::

    torchrun --standalone --nproc_per_node 4 ddp_worker.py SCENARIO --steps N --timeout S \
        [--culprit-rank R] [--event-step S]

``--culprit-rank`` and ``--event-step`` move the planted failure to another rank and step
(``bench/variants.py`` uses them); the ranks and steps above are the defaults.
"""

from __future__ import annotations

import argparse
import logging
import os
import time
from datetime import timedelta

import torch
import torch.distributed as dist
from torch.distributed.elastic.multiprocessing.errors import record
from torch.nn.parallel import DistributedDataParallel
from worker_exit import run_then_exit  # beside this file

FEATURES = 16
CLASSES = 4
BATCH = 8
LR = 0.1
EXCEPTION_RANK, EXCEPTION_STEP = 2, 15
STALL_RANK, STALL_STEP = 1, 10
MISMATCH_RANK, MISMATCH_STEP = 3, 8
SHORT_RANK = 0  # the uneven-batches rank

log = logging.getLogger("train")


def _batches(rank: int, steps: int, seed: int) -> list[tuple[torch.Tensor, torch.Tensor]]:
    """This rank's shard: ``steps`` batches of a linearly separable 4-class problem."""
    g = torch.Generator().manual_seed(seed)
    w = torch.randn(FEATURES, CLASSES, generator=g)
    g_rank = torch.Generator().manual_seed(seed * 1000 + rank + 1)
    out = []
    for _ in range(steps):
        x = torch.randn(BATCH, FEATURES, generator=g_rank)
        out.append((x, (x @ w).argmax(dim=1)))
    return out


DEFAULT_PLAN = {"exception": (EXCEPTION_RANK, EXCEPTION_STEP), "stall": (STALL_RANK, STALL_STEP),
                "mismatch": (MISMATCH_RANK, MISMATCH_STEP), "uneven": (SHORT_RANK, 0),
                "healthy": (-1, 0)}


def check_batch(x: torch.Tensor, step: int, planted: bool) -> None:
    """The user's sanity check of a batch (raises on the planted bad batch)."""
    if planted:
        x[3, 5] = float("nan")  # a corrupted record in this rank's shard
    if not torch.isfinite(x).all():
        bad = int((~torch.isfinite(x)).any(dim=1).sum())
        raise ValueError(f"batch at step {step} has {bad} sample(s) with non-finite features")


@record
def main() -> None:
    """Train, planting the scenario's failure."""
    parser = argparse.ArgumentParser()
    parser.add_argument("scenario")
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--timeout", type=float, default=15.0)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--culprit-rank", type=int, default=None)
    parser.add_argument("--event-step", type=int, default=None)
    ns = parser.parse_args()
    culprit, event_step = DEFAULT_PLAN[ns.scenario]
    culprit = culprit if ns.culprit_rank is None else ns.culprit_rank
    event_step = event_step if ns.event_step is None else ns.event_step
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s")
    torch.manual_seed(ns.seed)
    torch.set_num_threads(1)
    torch.use_deterministic_algorithms(True)

    dist.init_process_group(backend="gloo", timeout=timedelta(seconds=ns.timeout))
    rank, world = dist.get_rank(), dist.get_world_size()
    log.info("rank %d/%d started (pid %d), backend gloo, timeout %gs, scenario %s",
             rank, world, os.getpid(), ns.timeout, ns.scenario)
    model: torch.nn.Module = torch.nn.Sequential(
        torch.nn.Linear(FEATURES, 32), torch.nn.ReLU(), torch.nn.Linear(32, CLASSES)
    )
    ddp = ns.scenario != "mismatch"  # DDP under TORCH_DISTRIBUTED_DEBUG=DETAIL segfaults
    if ddp:
        model = DistributedDataParallel(model)
    else:
        for param in model.parameters():  # same start on every rank, as DDP would do
            dist.broadcast(param.data, src=0)
    opt = torch.optim.SGD(model.parameters(), lr=LR, momentum=0.9)
    n = ns.steps - 1 if ns.scenario == "uneven" and rank == culprit else ns.steps
    batches = _batches(rank, n, ns.seed)
    log.info("epoch 0: %d batches of %d on this rank", len(batches), BATCH)

    for step, (x, y) in enumerate(batches, start=1):
        here = rank == culprit and step == event_step
        check_batch(x, step, ns.scenario == "exception" and here)
        if ns.scenario == "stall" and here:
            time.sleep(ns.timeout * 10)  # stuck (a hung read, a deadlock...): never returns
        loss = torch.nn.functional.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()  # DDP all-reduces the gradients here
        if not ddp:
            for param in model.parameters():
                dist.all_reduce(param.grad)
                param.grad /= world
        grad_norm = torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        stat = loss.detach().clone().reshape(1)
        if ns.scenario == "mismatch" and here:
            stat = torch.stack([loss.detach().clone(), torch.tensor(float(len(y)))])  # [2], not [1]
        dist.all_reduce(stat)
        mean_loss = float(stat[0]) / world
        log.info("step %d loss %.4f mean_loss %.4f grad_norm %.4f lr %.6f", step,
                 float(loss.detach()), mean_loss, float(grad_norm), LR)
    log.info("epoch 0 done after %d steps", len(batches))
    dist.barrier()
    log.info("training finished")
    # no dist.destroy_process_group(): it can deadlock in torch 2.13 (see worker_exit)


if __name__ == "__main__":
    run_then_exit(main)
