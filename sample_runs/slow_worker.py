#!/usr/bin/env python
"""The per-rank script of the straggler sample run (launched by ``torchrun``, see slowruns.py).

A tiny MLP classifier trained data-parallel over gloo on CPU: every rank computes its
gradients locally, logs a timestamped line with its own data and compute time, then the
ranks average the gradients with ``dist.all_reduce`` (the collective in which the fast ranks
wait for the slow one) and step::

    2026-11-22 14:50:13,123 INFO step 12 loss 1.2345 lr 0.100000 data_time 0.1004 \
        compute_time 0.0012

``STRAGGLER_RANK`` reads its batches from slow storage: its data loading sleeps
``--delay`` seconds every step, from the first step on.

Usage::

    torchrun --standalone --nproc_per_node 4 slow_worker.py --steps N --delay S --timeout T
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
from worker_exit import run_then_exit  # beside this file

FEATURES = 16
CLASSES = 4
BATCH = 8
LR = 0.1
STRAGGLER_RANK = 2

log = logging.getLogger("train")


def load_batch(rank: int, step: int, seed: int, w: torch.Tensor,
               delay: float) -> tuple[torch.Tensor, torch.Tensor]:
    """This rank's batch of ``step`` (the straggler's storage is slow)."""
    if rank == STRAGGLER_RANK:
        time.sleep(delay)  # a slow disk / network mount on this rank's node
    g = torch.Generator().manual_seed(seed * 100_000 + rank * 1000 + step)
    x = torch.randn(BATCH, FEATURES, generator=g)
    return x, (x @ w).argmax(dim=1)


@record
def main() -> None:
    """Train; the straggler rank is slow to load every batch."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=40)
    parser.add_argument("--delay", type=float, default=0.1)
    parser.add_argument("--timeout", type=float, default=30.0)
    parser.add_argument("--seed", type=int, default=0)
    ns = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s")
    torch.manual_seed(ns.seed)
    torch.set_num_threads(1)
    torch.use_deterministic_algorithms(True)

    dist.init_process_group(backend="gloo", timeout=timedelta(seconds=ns.timeout))
    rank, world = dist.get_rank(), dist.get_world_size()
    log.info("rank %d/%d started (pid %d), backend gloo, %d steps", rank, world, os.getpid(),
             ns.steps)
    model = torch.nn.Sequential(
        torch.nn.Linear(FEATURES, 32), torch.nn.ReLU(), torch.nn.Linear(32, CLASSES)
    )
    for param in model.parameters():  # the same start on every rank
        dist.broadcast(param.data, src=0)
    opt = torch.optim.SGD(model.parameters(), lr=LR, momentum=0.9)
    w = torch.randn(FEATURES, CLASSES, generator=torch.Generator().manual_seed(ns.seed))
    dist.barrier()
    for step in range(1, ns.steps + 1):
        t0 = time.perf_counter()
        x, y = load_batch(rank, step, ns.seed, w, ns.delay)
        t1 = time.perf_counter()
        loss = torch.nn.functional.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        t2 = time.perf_counter()
        log.info("step %d loss %.4f lr %.6f data_time %.4f compute_time %.4f", step,
                 float(loss.detach()), LR, t1 - t0, t2 - t1)
        for param in model.parameters():  # the fast ranks wait here for the slow one
            dist.all_reduce(param.grad)
            param.grad /= world
        opt.step()
    dist.barrier()
    log.info("training finished")
    # no dist.destroy_process_group(): it can deadlock in torch 2.13 (see worker_exit)


if __name__ == "__main__":
    run_then_exit(main)
