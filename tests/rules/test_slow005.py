"""SLOW005 low-mfu: model FLOPs utilisation far below the hardware's peak."""

from __future__ import annotations

import numpy as np
from slow_runs import findings, jitter, timed_run

from autopsy.model import Severity

# 1.3e9 params, 64 × 2048 tokens per step on 8 GPUs, bf16
CONFIG = {"n_params_estimate": 1.3e9, "per_device_train_batch_size": 8,
          "gradient_accumulation_steps": 1, "world_size": 8, "max_seq_length": 2048,
          "bf16": True}


def _run(step_s: float) -> object:
    return timed_run({None: jitter(50, step_s)}, config=CONFIG)


def test_fires_when_mfu_is_far_below_the_peak() -> None:
    # 6 × 1.3e9 × 131072 = 1.02e15 FLOPs per step; at 2 s on 8 H100s: 64 TFLOP/s each, 6.5%
    (f,) = findings(_run(2.0), "SLOW005", gpu="h100")
    assert f.severity is Severity.ERROR and f.cause == "low_mfu"
    assert 0.05 < f.evidence[0].numbers["mfu"] < 0.08
    assert "NVIDIA H100 SXM" in f.evidence[3].summary and "bf16" in f.evidence[3].summary


def test_peak_flops_threshold_and_a_gpu_named_in_the_config() -> None:
    (f,) = findings(_run(2.0), "SLOW005", peak_flops=312e12)
    assert 0.2 < f.evidence[0].numbers["mfu"] < 0.21 and f.severity is Severity.WARNING
    config = dict(CONFIG, gpu_name="NVIDIA A100-SXM4-80GB")
    (g,) = findings(timed_run({None: jitter(50, 2.0)}, config=config), "SLOW005")
    assert "A100" in g.evidence[3].summary


def test_near_miss_passes_at_a_good_mfu() -> None:
    # 0.3 s per step on 8 H100s: 43% MFU
    assert findings(_run(0.3), "SLOW005", gpu="h100") == []


def test_unknown_inputs_pass_and_impossible_inputs_are_a_note() -> None:
    assert findings(_run(2.0), "SLOW005") == []  # no hardware known
    assert findings(timed_run({None: jitter(50, 2.0)}), "SLOW005", gpu="h100") == []
    (note,) = findings(_run(0.01), "SLOW005", gpu="h100")  # 1000% MFU
    assert note.severity is Severity.INFO and note.cause is None


def test_fires_from_the_flops_a_megatron_run_logs_itself() -> None:
    run = timed_run({None: jitter(30, 1.0)}, config={"bf16": True},
                    tags={"throughput per GPU (TFLOP/s/GPU)": {None: jitter(30, 40.0)}})
    (f,) = findings(run, "SLOW005", gpu="a100", peak_flops=0.0)
    assert f.cause == "low_mfu" and f.severity is Severity.WARNING  # 40 of 312: 12.8%
    assert f.evidence[0].tag == "tflops_per_device"


def test_fires_from_an_hf_trainer_total_flos_and_tokens_seen() -> None:
    # the Trainer's own count: 6e17 FLOPs in 1000 s on 4 devices = 150 TFLOP/s each
    summary = {"train/total_flos": {None: [6e17] * 30}, "train/train_runtime": {None: [1e3] * 30}}
    run = timed_run({None: jitter(30, 1.0)}, tags=summary, config={"world_size": 4, "bf16": True})
    (f,) = findings(run, "SLOW005", gpu="h100")  # 150 of 989: 15%
    assert f.severity is Severity.WARNING and f.evidence[0].tag == "total_flos"
    seen = {None: np.cumsum(np.full(40, 65536.0))}  # 65,536 tokens per step
    run = timed_run({None: jitter(40, 2.0)}, tags={"num_input_tokens_seen": seen},
                    config={"n_params_estimate": 1.3e9, "bf16": True, "world_size": 8})
    (g,) = findings(run, "SLOW005", gpu="h100")
    assert g.evidence[0].numbers["tokens_per_step"] == 65536.0
    assert "num_input_tokens_seen" in g.evidence[2].summary
