"""The NaN/Inf family's thresholds: one place, each with why it has its value.

:data:`CLASSIFY` is the shared classification of the run's NaN/Inf event
(:mod:`autopsy.rules.nan_inf._event`, :mod:`autopsy.rules.nan_inf._fp16`): every NAN rule
declares it, so one event is sorted into one kind whatever rule asks, and an override
(``--set NAN.spike_ratio=4``) applies to all of them. :data:`CAUSE` is the choice of a
blow-up's primary cause (:mod:`autopsy.rules.nan_inf._causes`), declared by the rules that
name it (NAN001, NAN003, NAN004), with the LR regimes of :mod:`autopsy.rules.thresholds`.
"""

from __future__ import annotations

from autopsy.rules.registry import Threshold
from autopsy.rules.thresholds import LR_REGIME

#: The shared classification of the NaN/Inf event (every NAN rule declares it).
CLASSIFY: dict[str, Threshold] = {
    "spike_window": Threshold(20, (
        "The grad norm just before the NaN is scored against the median and MAD of the "
        "spike_window finite points before each point; the loss's earlier level (for "
        "explosion_factor) is the median of up to spike_window points before the last "
        "lookback_points, and NAN002 shows the grad norm's median over as many. 20 points: one "
        "odd point does not move the median, and the baseline still follows a grad norm that "
        "drifts over training.")),
    "spike_min_points": Threshold(5, (
        "Fewest finite points a window needs before a point is scored, and the fewest "
        "grad-norm points before the first bad step for the event to be a bad batch (NAN002: "
        "the grad norm was seen flat) rather than unexplained (NAN005: too little to tell); "
        "also the loss points beyond lookback_points needed to test an explosion. A median and "
        "MAD of fewer than 5 points say nothing reliable about the level and its noise.")),
    "spike_score": Threshold(6.0, (
        "A grad-norm point is a spike when it is at least 6 robust deviations (1.4826 x MAD, "
        "the standard deviation for normal noise) above its window's median, and spike_ratio "
        "times it. A normal variable passes 6 standard deviations about once in a billion "
        "draws: the jump is not the grad norm's ordinary noise. Grad norms have heavier tails "
        "than that, hence the ratio test as well.")),
    "spike_ratio": Threshold(3.0, (
        "A spike must also be at least 3x its window's median: the robust score alone fires "
        "on a very quiet grad norm (tiny MAD) that moves a little, while a 3x jump is a change "
        "of scale, the kind that feeds on itself until the values overflow. The grad norm must "
        "still be at least 3x that median at the last point before the NaN (a spike it came "
        "back down from is not what the NaN grew out of), and a loss explosion's rise starts "
        "where the loss first exceeds 3x its earlier median.")),
    "lookback_points": Threshold(5, (
        "How many finite points before the first NaN/Inf are searched for the grad-norm spike "
        "or the loss explosion that explains it. A blow-up runs away within a few updates "
        "(each larger than the last), so a spike further back that the run came through is not "
        "the cause; with no spike there and the grad norm logged, the NaN came out of a flat "
        "grad norm (a bad batch, NAN002).")),
    "explosion_factor": Threshold(100.0, (
        "The loss exploded while still finite when one of its last lookback_points points "
        "reaches 100x the median before them: two orders of magnitude in a few points is a "
        "runaway, far beyond the spikes of a loss that recovers (DIV002). Such an explosion "
        "makes the event a blow-up (NAN001) even without a grad norm.")),
    "scaler_warmup_steps": Threshold(50, (
        "Steps after the start of each segment (launch) in which runs of fp16 scaler skips are "
        "the scaler's normal search for its scale, not an overflow. A dynamic loss scaler "
        "starts high (2^16 in torch's GradScaler, up to 2^32 in DeepSpeed) and halves the "
        "scale, skipping the step, on each overflow until the gradients fit: 16 halvings from "
        "2^16 reach 1, 32 from 2^32, all within 50 steps. A collapse to min_scale counts "
        "even inside it.")),
    "min_scale": Threshold(1.0, (
        "A loss scale at or below 1 is a collapse: the scaler no longer scales the loss up, "
        "and the gradients still overflow fp16, so every step is skipped and training no "
        "longer moves (NAN003 in the scalars, NAN006 in loss-scale log messages). HLT002 "
        "calls an early scale search benign only while the scale stays above it.")),
    "collapse_halvings": Threshold(8, (
        "After the scaler's warm-up, a fall of 8 halvings (a factor of 256) below the scale's "
        "running maximum is a collapse even above min_scale. A settled scaler halves only on "
        "an occasional overflow and grows back (torch's GradScaler doubles after 2000 clean "
        "steps), so 8 net halvings means overflow after overflow.")),
    "skip_run": Threshold(3, (
        "Consecutive skipped steps after the scaler's warm-up that make an overflow: a "
        "settled scaler skips an isolated step now and then and the next step at the halved "
        "scale is finite, so 3 in a row means the gradients overflow at every scale tried. "
        "Shorter runs of HF-style skips (a non-finite grad norm beside a finite loss) are "
        "benign and left out of the first bad step.")),
    "recover_points": Threshold(5, (
        "Points every series (loss, grad norm) needs after its last non-finite value, all "
        "finite, for the run to count as recovered: a recovered event is a warning (an fp16 "
        "scale collapse an error), one that stays is critical. Five points, like "
        "lookback_points, rule out a single finite point between bad ones.")),
}

#: The choice of a blow-up's primary cause (NAN001, NAN003, NAN004 declare it).
CAUSE: dict[str, Threshold] = {
    **LR_REGIME,
    "high_lr_factor": Threshold(3.0, (
        "The LR at the blow-up is high for the run's regime (lr_too_high) from 3x the top of "
        "its typical range (lora_lr_high, full_lr_high or sgd_lr_high): up to a little above "
        "the range an LR is a recipe's choice, 3x above it is outside the regime. Lowering the "
        "peak about 3x is also the advice's first step.")),
    "peak_fraction": Threshold(0.9, (
        "lr_too_high is the primary cause only when the LR at the blow-up's onset is at least "
        "90% of the schedule's peak: the run blew up at (or next to) its peak LR. Earlier in "
        "the warm-up or later in the decay the LR was below the run's own peak, so a missing "
        "warm-up or clipping explains the blow-up first.")),
    "early_steps": Threshold(50, (
        "A run without warm-up that blew up within 50 steps of its first logged step names "
        "no_warmup as the primary cause (unless the LR is high at its peak): the first steps "
        "are the dangerous ones without warm-up, while Adam's second-moment estimates are "
        "built from a few gradients and the weights sit in the initial sharp region. Later "
        "blow-ups name missing clipping first.")),
    "advice_warmup_ratio": Threshold(0.02, (
        "The warm-up the advice proposes, as a share of the run's steps (warmup_ratio=0.02): "
        "inside the 1-5% warm-up schedules commonly use, enough steps for Adam's moment "
        "estimates to settle before the full LR. Only the advice uses it; it decides "
        "nothing.")),
}

#: NAN007 nan-from-masked-labels.
NAN007: dict[str, Threshold] = {
    "min_points": Threshold(3, (
        "At least 3 logged points, every one with a loss of 0 and a non-finite grad norm: "
        "one or two could be a skipped fp16 step logged beside a finite loss; three in a "
        "row, from the start, is a run that never had a finite gradient.")),
    "zero_loss": Threshold(1e-7, (
        "A loss within 1e-7 of 0 is exactly 0, as FLAT001 reads it (its zero_loss): a mean "
        "over zero label tokens, or a NaN loss that some HF Trainer versions log as 0.")),
}

#: NAN008 captured-first-bad-module.
NAN008: dict[str, Threshold] = {
    "confidence": Threshold(0.95, (
        "The capture re-ran the failing batch and saw which module produced the first "
        "non-finite value: direct observation, not an inference from a curve, so it ranks "
        "above every reading of the logged series (NAN001-NAN005 are 0.6-0.9).")),
}
