"""The slow family's thresholds: one place, each with why it has its value.

A slow finding is a cost, never a failure that outranks another family's (see
``docs/verdicts.md``); these thresholds decide when a cost is worth a finding at all and when
it is an error rather than a warning. :data:`SKIP_FIRST` is declared by every slow rule;
:data:`STALLS` by SLOW003 and SLOW006, which share one stall search, and in part by SLOW004,
which leaves the stalls out of its trend (``--set SLOW.ratio=4`` tunes them together).
"""

from __future__ import annotations

from autopsy.rules.registry import Threshold

#: Steps left out at the start of each segment (every slow rule declares it).
SKIP_FIRST: dict[str, Threshold] = {
    "skip_first": Threshold(1, (
        "Steps left out at the start of each segment (each launch of the run): the first "
        "step of a launch carries one-time work (CUDA context and kernel warm-up, "
        "torch.compile, the DataLoader's first prefetch, the allocator growing its pool) and "
        "is often many times slower than the rest; kept, it would pass for a stall, a "
        "starving loader or a straggler.")),
}

_STALL_USE = (" SLOW003 (periodic) and SLOW006 (irregular) share this stall search; SLOW004 "
              "uses it to leave the stalls out of its trend.")

#: The stall search (SLOW003, SLOW006; SLOW004 leaves the stalls out of its trend).
STALLS: dict[str, Threshold] = {
    "ratio": Threshold(3.0, (
        "A logged interval is a stall when it took at least ratio - 1 = 2 median steps more "
        "than the median pace (logging every step: the step took 3x the median). A checkpoint "
        "save or an evaluation blocks for many steps' worth of time; the step-to-step "
        "variation of a healthy loop (batch lengths, logging) usually stays below that."
        + _STALL_USE)),
    "min_extra_s": Threshold(0.05, (
        "A stall also took at least 50 ms beyond the median pace: with steps of a few "
        "milliseconds, 3x the median is still within the jitter of timestamps and the OS "
        "scheduler, and costs nothing worth a finding. The same 50 ms is SLOW002's floor for "
        "a rank's lag (min_lag_s)." + _STALL_USE)),
    "min_score": Threshold(10.0, (
        "A stall's per-step time is also at least 10 robust deviations (1.4826 x MAD) above "
        "the median step time: step times have a heavy right tail (a long batch, a garbage-"
        "collection pause), so a stall must stand far outside it." + _STALL_USE)),
    "min_count": Threshold(3, (
        "At least 3 stalls: with fewer there are not two gaps between them to show a period, "
        "and one or two long steps are not a pattern worth changing the run for."
        + _STALL_USE)),
}

#: SLOW001 data-starvation.
SLOW001: dict[str, Threshold] = {
    "share": Threshold(0.5, (
        "Data loading is an error when the data wait is at least half of the step (median "
        "over the ranks that wait): the accelerator then idles as long as it computes, every "
        "step, and a faster input pipeline would nearly double the throughput.")),
    "warn_share": Threshold(0.3, (
        "From 30% of the step the data wait is a warning: a share a faster input pipeline "
        "(more workers, prefetching, a ready-to-read format) wins back; below it, loading "
        "overlaps compute well enough. The onset step is where the per-step share first "
        "stays above it.")),
    "min_rank_share": Threshold(0.5, (
        "In a multi-rank job, at least half of the ranks must wait for data for the job to "
        "be starved: a minority waiting is one slow host, a straggler (SLOW002), whose fix "
        "is on that host.")),
    **SKIP_FIRST,
}

#: SLOW002 straggler.
SLOW002: dict[str, Threshold] = {
    "ratio": Threshold(1.5, (
        "By component times: the rank's median data or compute time must be at least 1.5x the "
        "other ranks' median. Ranks of one job run the same code on the same hardware with "
        "the same batch size, so their times agree closely; half as much again is a rank "
        "that is really slower, not noise.")),
    "min_excess_share": Threshold(0.1, (
        "By component times: the rank's excess over the others must also be at least 10% of "
        "the step, else the others lose too little per step waiting for it to matter.")),
    "lag_share": Threshold(0.2, (
        "By arrival: a rank whose step line comes at least 20% of the step time after the "
        "other ranks' (median over the steps) is a straggler, in a loop that logs before the "
        "collective (the fast ranks log, then wait for it).")),
    "min_lag_s": Threshold(0.05, (
        "By arrival, the lag must also be at least 50 ms: the clocks of different hosts can "
        "differ by tens of milliseconds, which shifts every log stamp of a rank by a constant "
        "and would make a rank look late.")),
    "last_share": Threshold(0.7, (
        "The straggler must be the slowest rank at 70% of the steps or more: a straggler is "
        "consistently slower; ranks that take turns being the slowest are noise, not a slow "
        "host.")),
    **SKIP_FIRST,
}

#: SLOW003 periodic-stalls.
SLOW003: dict[str, Threshold] = {
    **STALLS,
    "share": Threshold(0.1, (
        "Periodic stalls (saves, evaluations) are an error when the time above the median "
        "they took is at least 10% of the run's measured step time: a tenth of the compute "
        "budget is worth changing the save or eval schedule for (save asynchronously, "
        "evaluate a subset).")),
    "warn_share": Threshold(0.03, (
        "Below 3% of the run's step time periodic stalls are not reported: saving and "
        "evaluating are a normal part of training and cost a few percent. From 3% they are "
        "a warning.")),
    **SKIP_FIRST,
}

#: SLOW004 slowing-down (the stall thresholds only leave the stalls out of the trend).
SLOW004: dict[str, Threshold] = {
    "rel_change": Threshold(0.5, (
        "Steps slowing down is an error when the fitted step time at the end is at least 50% "
        "above the fitted time at the start: the end of the run costs half as much again per "
        "step, a leak or a growing cache worth fixing.")),
    "warn_rel_change": Threshold(0.25, (
        "From 25% slower at the end than at the start the slowdown is a warning; below, the "
        "drift is within what host load and data order make of step times. The step from "
        "which the run was noticeably slower is where the fit crosses 25% above the start.")),
    "min_increase_s": Threshold(0.005, (
        "The fitted step time must also grow by at least 5 ms: a relative change of "
        "millisecond steps is timer and host noise.")),
    "min_lost_s": Threshold(10.0, (
        "The slowdown must have cost at least 10 s in all (the time above the start's pace): "
        "a tiny run whose 4 ms steps wander to 14 ms on a busy host is noise, not a "
        "finding.")),
    "min_points": Threshold(6, (
        "At least 6 step times (stalls left out) for the Theil-Sen trend and its 95% "
        "confidence interval: runs that log once per epoch (Keras, Lightning, epoch-end log "
        "lines) have a handful, and a slowdown that makes someone stop a run shows in them. "
        "From 6 points the interval is sound (step times with no trend put its lower end "
        "above zero in 0.6-1.6% of 4,000 simulated runs of 6-8 points, under the nominal "
        "2.5%); at 4 points it is not (3.7%).")),
    "min_sparse_points": Threshold(3, (
        "A run with fewer than min_points step times (a reporter's few pasted lines, a run "
        "that logs once an epoch) is judged on its raw points from 3 on: they must rise at "
        "every point and end sparse_ratio times the first. Three points rising in a row "
        "happen by chance one time in six; doubling on top of that does not happen to "
        "step times that only jitter. On 2 points a rise is one interval, a stall.")),
    "sparse_ratio": Threshold(2.0, (
        "The few step times must end at least twice the first (tail_ratio's half speed): "
        "with no trend interval to test against, only a change far beyond the few-percent "
        "wander of step times says the run slows down. A first point inflated by warm-up "
        "only works against a rise, so it is kept.")),
    "sparse_max_jump_share": Threshold(2 / 3, (
        "No single interval may hold more than two thirds of the rise: a slowdown that grows "
        "climbs at every point; one big jump (a checkpoint or an evaluation in the last "
        "interval) is a stall or a new pace, which SLOW003/SLOW006 and the tail drop judge.")),
    "tail_ratio": Threshold(2.0, (
        "A run whose printed throughput ends at half its median before (each step at least "
        "twice as long) slowed down sharply at the end, trend or not: half the speed is what "
        "a practitioner calls a slowdown (a throttling GPU, another job on the device, "
        "swapping), well beyond the few-percent wander of a throughput meter.")),
    "tail_points": Threshold(2, (
        "At least the last 2 printed throughputs that slow: one slow interval is a hiccup (a "
        "checkpoint written in it, a busy host), two in a row that the run did not recover "
        "from are a new pace.")),
    "tail_min_before": Threshold(5, (
        "At least 5 printed throughputs before the drop, whose median is the run's own "
        "pace: with fewer, the warm-up is the pace.")),
    **SKIP_FIRST,
    **{k: v for k, v in STALLS.items() if k in ("ratio", "min_extra_s", "min_score", "min_count")},
}

_MFU_INPUT = (" An input, not a limit: 0 (or empty) means not given, and the rule reads it "
              "from the run; when it cannot, the rule is skipped and says which input is "
              "missing.")

#: SLOW005 low-mfu (the MFU limits, and the inputs of the MFU a user can give).
SLOW005: dict[str, Threshold] = {
    "min_mfu": Threshold(0.1, (
        "MFU below 10% is an error: well-tuned transformer training reaches 35-55%, so under "
        "a third of that the accelerator spends most of its time waiting (for data, other "
        "ranks, the host) or computing in a slow precision.")),
    "warn_mfu": Threshold(0.25, (
        "MFU below 25% is a warning: clearly under the 35-55% well-tuned transformer training "
        "reaches, with gains to be had from bf16, larger micro-batches and fused kernels.")),
    "peak_flops": Threshold(0.0, (
        "The accelerator's peak dense FLOP/s per device (--peak-flops 989T)." + _MFU_INPUT
        + " Else the peak is the datasheet's for the accelerator gpu or the config names, in "
        "the run's precision.")),
    "gpu": Threshold("", (
        "The accelerator's name (h100, a100, mi300x...; --gpu) whose datasheet peak is used."
        + _MFU_INPUT + " Else the config's gpu, gpu_name, device_name or accelerator entry.")),
    "n_params": Threshold(0.0, (
        "The model's parameter count N." + _MFU_INPUT + " Else the config's num_parameters "
        "(or the estimate from the model's config.json).")),
    "tokens_per_step": Threshold(0.0, (
        "Tokens per optimizer step of the whole job." + _MFU_INPUT + " Else the config, a "
        "logged tokens_per_step or num_input_tokens_seen, or micro-batch x accumulation x "
        "ranks x sequence length.")),
    "flops_per_token": Threshold(0.0, (
        "Training FLOPs per token; 0 means 6 x N, the standard estimate for a dense "
        "transformer (2N for the forward pass, 4N for the backward). Set it where that does "
        "not hold: a mixture of experts (its active parameters), long sequences (attention "
        "adds to it).")),
    **SKIP_FIRST,
}

#: SLOW006 irregular-stalls.
SLOW006: dict[str, Threshold] = {
    **STALLS,
    "share": Threshold(0.2, (
        "Irregular stalls are an error only from 20% of the run's step time, twice SLOW003's "
        "10%: they follow no schedule of the run's own, often come from the host (a shared "
        "filesystem, noisy neighbours), and are harder to act on, so they must cost more "
        "to be an error.")),
    "warn_share": Threshold(0.05, (
        "Below 5% of the run's step time irregular stalls are not reported (a few slow reads "
        "or pauses are part of running on shared machines); from 5% they are a warning.")),
    "lone_share": Threshold(0.5, (
        "Fewer than min_count stalls (one or two) are a finding only when they took at least "
        "half of the run's step time: one pause longer than all the training around it (an "
        "epoch of 14 hours among epochs of 14 seconds) is what a practitioner calls a stalled "
        "run, while one or two shorter ones are the hiccups min_count is there to ignore.")),
    "lone_min_s": Threshold(600.0, (
        "One or two stalls must also have cost at least 10 minutes: a single pause of seconds "
        "or a few minutes is a checkpoint save, an evaluation or a slow read, even in a short "
        "excerpt whose few steps it outweighs; one of ten minutes or more held the run up "
        "beyond any routine pause.")),
    **SKIP_FIRST,
}

#: SLOW007 slow-stretch.
SLOW007: dict[str, Threshold] = {
    "ratio": Threshold(3.0, (
        "A logged point is slow when its step took at least 3 times the run's best sustained "
        "pace (the same factor as the stall search's ratio): a host or input pipeline that "
        "runs the same model and batches three times slower for a while has lost two thirds "
        "of that time, far beyond the batch-to-batch spread of a healthy loop (10-30%).")),
    "window": Threshold(3, (
        "The run's best sustained pace is the lowest median of 3 consecutive logged step "
        "times: one lucky short step does not set it, while a fast stretch of three points "
        "is what the run shows it can do.")),
    "min_stretch": Threshold(3, (
        "A slow stretch is at least 3 consecutive slow points: one or two are stalls "
        "(SLOW003, SLOW006 judge those), three in a row are a different pace, not a pause.")),
    "min_points": Threshold(6, (
        "At least 6 step times: a slow stretch of 3 and as many at the run's own faster pace "
        "to compare it with.")),
    "share": Threshold(0.25, (
        "The time lost in the stretch (above the best sustained pace) is an error from a "
        "quarter of the run's step time: a run that spent a quarter of its time going three "
        "times slower than it can would have finished at least a quarter sooner, the size of "
        "loss SLOW004 calls an error too.")),
    "warn_share": Threshold(0.1, (
        "From a tenth of the run's step time the stretch is a warning: worth a look, not a "
        "verdict.")),
    **SKIP_FIRST,
}
