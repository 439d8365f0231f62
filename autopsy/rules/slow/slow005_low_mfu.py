"""SLOW005: model FLOPs utilisation far below what the hardware can reach."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from autopsy.model.finding import Evidence, Family, Finding, Severity
from autopsy.model.run import Run
from autopsy.rules.context import RuleContext
from autopsy.rules.registry import rule
from autopsy.rules.slow._slow import first_step, median, reference_times, seconds
from autopsy.rules.slow.thresholds import SLOW005
from autopsy.signals.hardware import Precision, find_accelerator
from autopsy.signals.steptime import ranks_of, run_average_step_time

PARAM_KEYS = ("num_parameters", "n_params", "num_params", "model_parameters", "n_params_estimate")
SEQ_KEYS = ("seq_length", "max_seq_length", "seq_len", "sequence_length", "block_size",
            "max_length")
GPU_KEYS = ("gpu", "gpu_name", "device_name", "accelerator")


@dataclass(frozen=True)
class Known:
    """One input of the MFU, with where it came from."""

    value: float
    source: str


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value) if math.isfinite(value) and value > 0 else None


def _config(run: Run, keys: tuple[str, ...]) -> Known | None:
    for key in keys:
        entry = run.config.get_entry(key)
        if entry is not None and (v := _number(entry.value)) is not None:
            return Known(v, f"{key}={entry.value:g} ({entry.source})")
    return None


def _tokens_per_step(run: Run, ctx: RuleContext, world: int) -> Known | None:
    if float(ctx["tokens_per_step"]) > 0:
        return Known(float(ctx["tokens_per_step"]), "threshold tokens_per_step")
    known = _config(run, ("tokens_per_step",))
    if known:
        return known
    tag = median(run.series("tokens_per_step"))
    if math.isfinite(tag) and tag > 0:
        return Known(tag, "the tokens_per_step tag (median)")
    seen = run.series("tokens_seen").sort_index()
    seen = seen[seen.notna()]
    if len(seen) >= 3:
        per = (seen.diff() / seen.index.to_series().diff()).iloc[1:]
        rate = median(per[per > 0])
        if math.isfinite(rate) and rate > 0:
            return Known(rate, "the growth of num_input_tokens_seen per step (median)")
    seq = _config(run, SEQ_KEYS)
    global_batch = median(run.series("global_batch_size"))
    if seq is not None and math.isfinite(global_batch) and global_batch > 0:
        return Known(global_batch * seq.value,
                     f"global batch size {global_batch:g} (logged) × {seq.source}")
    batch = _config(run, ("per_device_train_batch_size",))
    if batch is None or seq is None:
        return None
    accum = _config(run, ("gradient_accumulation_steps",))
    acc = accum.value if accum else 1.0
    return Known(batch.value * acc * world * seq.value,
                 f"{batch.source} × accumulation {acc:g} × {world} rank(s) × {seq.source}")


def _peak(run: Run, ctx: RuleContext) -> tuple[Known | None, str]:
    """Peak dense FLOP/s per device, and the precision it is for."""
    flags = {k: run.config.get(k) for k in ("bf16", "fp16", "tf32")}
    precision = (Precision.BF16 if flags["bf16"] is True else Precision.FP16
                 if flags["fp16"] is True else Precision.TF32 if flags["tf32"] is True
                 else Precision.FP32)
    if float(ctx["peak_flops"]) > 0:
        return Known(float(ctx["peak_flops"]), "threshold peak_flops"), precision.value
    names = [(str(ctx["gpu"]), "threshold gpu")] if str(ctx["gpu"]).strip() else []
    for key in GPU_KEYS:
        entry = run.config.get_entry(key)
        if entry is not None and isinstance(entry.value, str):
            names.append((entry.value, f"{key} ({entry.source})"))
    for name, where in names:
        acc = find_accelerator(name)
        if acc is not None:
            return (Known(acc.peak(precision), f"{acc.name} from {where}, dense "
                          f"{precision.value} datasheet peak"), precision.value)
    return None, precision.value


@rule(
    code="SLOW005",
    name="low-mfu",
    family=Family.SLOW,
    causes=("low_mfu",),
    thresholds=SLOW005,
)
def low_mfu(run: Run, ctx: RuleContext) -> Finding | None:
    """Model FLOPs utilisation is far below what the hardware can reach.

    What happened:
        From the model size N, the tokens per optimizer step and the step time, the
        run did ``6 × N × tokens`` FLOPs per step (``flops_per_token`` overrides 6N),
        and MFU = those FLOPs / (step time × devices × peak dense FLOP/s per device).
        It is an error below ``min_mfu``, a warning below ``warn_mfu``. Well-tuned
        transformer training reaches 0.35-0.55. The inputs: N from ``n_params`` or
        the config (``num_parameters``, or the estimate from the model's
        ``config.json``); tokens per step from ``tokens_per_step`` or the config
        (micro-batch × accumulation × ranks × sequence length, or a logged global
        batch size × sequence length); the peak from ``peak_flops`` or the
        accelerator named by ``gpu`` (``h100``, ``a100``, ``mi300x``...) or the
        config, in the run's precision (bf16/fp16/fp32). A run that logs its own
        FLOP/s per device (Megatron's ``throughput per GPU (TFLOP/s/GPU)``), or an HF
        Trainer run's ``total_flos`` over its ``train_runtime`` (evaluation and saving
        included, so a lower bound), needs only the peak; HF's
        ``num_input_tokens_seen`` gives the tokens per step. When an input is
        unknown the rule is listed as skipped, naming the input missing.

    Why it happens:
        The accelerator waits: for data (SLOW001), for other ranks (SLOW002), for
        the host (a ``.item()`` or ``print`` of a tensor every step forces a sync),
        or does work in slow precision (fp32 where bf16 would do), with small
        matrices (micro-batch too small), unfused kernels (eager attention, separate
        optimizer kernels), or more communication than compute.

    How to fix:
        Train in bf16 (autocast); raise the micro-batch until memory is full; use
        fused attention (``attn_implementation="sdpa"`` or flash attention), fused
        optimizers (``optim="adamw_torch_fused"``), ``torch.compile``; avoid host
        syncs in the loop; fix data starvation and stragglers first.

    Evidence shown:
        The model size, tokens per step, step time, devices and peak used, with
        where each came from, the achieved FLOP/s per device and the MFU.
    """
    world = _number(run.config.get("world_size")) or float(max(1, len(ranks_of(run))))
    peak, precision = _peak(run, ctx)
    if peak is None:
        raise ctx.skip("the accelerator's peak FLOP/s is unknown: pass --gpu NAME or "
                       "--peak-flops X (or set SLOW005.gpu / SLOW005.peak_flops)")
    n = (Known(float(ctx["n_params"]), "threshold n_params") if float(ctx["n_params"]) > 0
         else _config(run, PARAM_KEYS))
    tokens = _tokens_per_step(run, ctx, int(world))
    logged = median(run.series("tflops_per_device"))
    if (n is None or tokens is None) and math.isfinite(logged) and logged > 0:
        return _judge(ctx, logged * 1e12 / peak.value, logged * 1e12, peak, precision, run, [
            Evidence(summary=f"the run logs {logged:.4g} TFLOP/s per device (median of the "
                     f"tflops_per_device tag); peak {peak.value / 1e12:.4g} TFLOP/s: MFU "
                     f"{logged * 1e12 / peak.value * 100:.3g}%", tag="tflops_per_device",
                     numbers={"tflops_per_device": logged, "peak_flops": peak.value}),
            Evidence(summary=f"peak: {peak.source}")])
    flos, runtime = median(run.series("total_flos")), median(run.series("train_runtime"))
    if (n is None or tokens is None) and math.isfinite(flos) and flos > 0 \
            and math.isfinite(runtime) and runtime > 0:
        achieved = flos / runtime / world
        return _judge(ctx, achieved / peak.value, achieved, peak, precision, run, [
            Evidence(summary=f"the Trainer counted {flos:.3g} FLOPs (total_flos, 6 × "
                     f"parameters × tokens) in {seconds(runtime)} (train_runtime, evaluation "
                     f"and saving included) on {world:g} device(s): "
                     f"{achieved / 1e12:.3g} TFLOP/s per device; peak "
                     f"{peak.value / 1e12:.4g} TFLOP/s: MFU {achieved / peak.value * 100:.3g}%",
                     tag="total_flos", numbers={"total_flos": flos, "train_runtime_s": runtime,
                                                "devices": world, "peak_flops": peak.value}),
            Evidence(summary=f"peak: {peak.source}")])
    if n is None or tokens is None:
        missing = " and ".join(w for w, v in (("the model size", n), ("the tokens per step",
                                                                       tokens)) if v is None)
        verb = "are" if " and " in missing else "is"
        raise ctx.skip(f"{missing} {verb} unknown (set SLOW005.n_params / "
                       "SLOW005.tokens_per_step)")
    times = reference_times(run, ctx)
    step_s = median(times.seconds) if times is not None and times.reliable else math.nan
    how = "the median step time"
    if not math.isfinite(step_s) or step_s <= 0:
        step_s = run_average_step_time(run) or math.nan
        how = "train_steps_per_second"
    if not math.isfinite(step_s) or step_s <= 0:
        return None
    per_token = float(ctx["flops_per_token"]) or 6.0 * n.value
    achieved = per_token * tokens.value / step_s / world
    mfu = achieved / peak.value
    numbers = {"n_params": n.value, "tokens_per_step": tokens.value, "step_s": step_s,
               "devices": world, "peak_flops": peak.value, "achieved_flops": achieved,
               "mfu": round(mfu, 4)}
    evidence = [Evidence(
        summary=f"{per_token / n.value:g} × {n.value:.3g} params × {tokens.value:.3g} tokens "
                f"per step / {seconds(step_s)} ({how}) / {world:g} device(s) = "
                f"{achieved / 1e12:.3g} TFLOP/s per device; peak {peak.value / 1e12:.4g} "
                f"TFLOP/s: MFU {mfu * 100:.3g}%", numbers=numbers),
        Evidence(summary=f"model size: {n.source}"),
        Evidence(summary=f"tokens per step: {tokens.source}"),
        Evidence(summary=f"peak: {peak.source}"),
    ]
    return _judge(ctx, mfu, achieved, peak, precision, run, evidence)


def _judge(ctx: RuleContext, mfu: float, achieved: float, peak: Known, precision: str,
           run: Run, evidence: list[Evidence]) -> Finding | None:
    """The finding for an MFU: a note above 100%, an error or warning when low."""
    if mfu > 1.0:
        return ctx.finding(
            message=f"MFU computes to {mfu:.0%}, above 100%: the model size, tokens per step "
                    "or peak given do not describe this run.",
            severity=Severity.INFO, confidence=0.5, cause=None, evidence=evidence,
            title="MFU inputs inconsistent")
    if mfu >= ctx["warn_mfu"]:
        return None
    severity = Severity.ERROR if mfu < ctx["min_mfu"] else Severity.WARNING
    advice = ["train in bf16 (autocast) rather than fp32" if precision == "fp32" else
              "check the hardware is really the one given (and the run's precision)",
              "raise the micro-batch until memory is nearly full; use fused attention "
              "(attn_implementation='sdpa' or flash attention) and a fused optimizer "
              "(optim='adamw_torch_fused'); try torch.compile",
              "remove host syncs from the step (.item(), printing tensors) and fix data "
              "starvation or stragglers first (SLOW001, SLOW002)"]
    return ctx.finding(
        message=f"MFU is {mfu * 100:.3g}% ({achieved / 1e12:.3g} of {peak.value / 1e12:.4g} "
                f"TFLOP/s per device, {precision}): far below the 35-55% that well-tuned "
                "training reaches.",
        severity=severity, confidence=0.7, cause="low_mfu", step=first_step(run),
        evidence=evidence, advice=advice,
    )
