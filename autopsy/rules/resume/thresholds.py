"""The resume family's thresholds: one place, each with why it has its value.

RES010-RES015 compare each launch of a run with the previous one at the restart (the
boundary); RES016 reads the exception a checkpoint load raised. The confidences order
findings of equal severity, cause and family (``docs/verdicts.md``, ranking step 5); for
RES010-RES013 the checkpoint audit raises the confidence by 0.1 when it confirms the part
is missing and lowers it by 0.1 when the part is there.
"""

from __future__ import annotations

from autopsy.rules.registry import Threshold

_MAX_LR_CHANGE = Threshold(0.25, (
    "At a restart, an LR within 25% of the previous launch's at the same step is the same "
    "schedule (the reference is interpolated between logged points, and logged LRs are "
    "rounded); beyond it the LR jumped: RES010 reports a scheduler not restored, and RES011 "
    "lowers its confidence by 0.25, as the LR jump may explain the loss jump."))

#: RES010 scheduler-not-restored.
RES010: dict[str, Threshold] = {
    "max_lr_change": _MAX_LR_CHANGE,
    "confidence": Threshold(0.85, (
        "The confidence of a scheduler not restored: the LR the resumed launch used differs "
        "from the previous launch's at the same step, read off the two launches' own logs. "
        "Not higher: a schedule changed on purpose at a relaunch without a new configured "
        "learning_rate looks the same.")),
}

#: RES011 optimizer-state-lost.
RES011: dict[str, Threshold] = {
    "min_ratio": Threshold(1.5, (
        "After the restart the loss must be at least 1.5x the previous launch's at the same "
        "steps (or its last values): Adam moments rebuilt from zero make the first updates "
        "about lr x sign(grad) in every coordinate, a jump far above the loss's noise; half "
        "as much again is a jump, not a different batch.")),
    "min_score": Threshold(6.0, (
        "The jump must also be at least 6 times the loss's noise before the restart (a "
        "median of three consecutive steps, so a single blip does not count): far outside "
        "what the previous launch's loss did from step to step.")),
    "window": Threshold(20, (
        "Within 20 steps of the restart the excess must have fallen to half or less: the way "
        "Adam recovers as its moments fill again; a jump that does not decay is something "
        "else (damaged weights, other data).")),
    "max_lr_change": _MAX_LR_CHANGE,
    "confidence": Threshold(0.85, (
        "The confidence of lost optimizer state: a loss jump that decays is the signature of "
        "fresh Adam moments, but a new data shard or a changed LR at the relaunch can look "
        "alike (an LR jump lowers it by 0.25).")),
}

#: RES012 grad-scaler-not-restored.
RES012: dict[str, Threshold] = {
    "min_factor": Threshold(2.0, (
        "The loss scale the previous launch had reached must differ from the initial scale "
        "by at least a factor 2 (one halving or doubling) for a restart at the initial value "
        "to show a scaler that started over; a scale still at its initial value tells "
        "nothing.")),
    "confidence": Threshold(0.8, (
        "The confidence when the resumed launch's scale is back at the initial value but did "
        "not drop again: the evidence is one value after the restart, and the restart cost "
        "nothing visible yet (a warning); lower than confidence_dropped.")),
    "confidence_dropped": Threshold(0.95, (
        "The confidence when the resumed launch's scale, back at the initial value, then "
        "dropped again (overflow steps skipped): the scaler is searching for its scale a "
        "second time, which only a scaler that started over does.")),
}

#: RES013 data-position-lost.
RES013: dict[str, Threshold] = {
    "head": Threshold(5, (
        "The loss at a launch's start and end, and after the restart, are medians of 5 "
        "points, so one batch does not decide whether the weights were restored.")),
    "fresh_fraction": Threshold(0.2, (
        "A step counter that started over with the loss back within 20% (of the previous "
        "launch's fall) of its starting level is a run that loaded no checkpoint at all "
        "(checkpoint_not_loaded, a warning) rather than lost data position: restored weights "
        "keep most of what the previous launch learned.")),
    "min_fall": Threshold(0.1, (
        "A step counter that started over says something about the weights only when the "
        "previous launch's loss fell by at least 10% (its first and last medians): only then "
        "does the loss after the restart sit clearly at its end (weights restored) or its "
        "start (a fresh run). A launch whose loss barely moved (a few logged points, two runs "
        "pasted one after the other, evaluation batches numbered from 1) tells neither.")),
    "min_epoch_drop": Threshold(0.25, (
        "The epoch went back by at least a quarter epoch (or 10% of the epoch count, if "
        "larger) at the restart: less is within how epochs are logged (fractional epochs, "
        "rounding, the epoch ending in between).")),
    "min_correlation": Threshold(0.6, (
        "The loss's step-to-step pattern after the restart must correlate at least 0.6 with "
        "the previous launch's from its start (detrended losses at the same offset), and "
        "clearly more than at the same steps: the same batches in the same order give the "
        "same ups and downs.")),
    "pattern_points": Threshold(40, (
        "Up to 40 logged steps after the restart are compared with as many from the previous "
        "launch's start: enough for a correlation to mean something, few enough to stay in "
        "the stretch of the epoch the resume repeats.")),
    "min_pattern_points": Threshold(12, (
        "At least 12 steps must be compared: a correlation of fewer points reaches 0.6 by "
        "chance too often.")),
}

#: RES014 world-size-changed.
RES014: dict[str, Threshold] = {
    "confidence": Threshold(0.8, (
        "The confidence of a changed world size (a warning): the two world sizes come from "
        "the launches' own configs, their ranks or the checkpoint, but the change may be "
        "intended (elastic training).")),
}

#: RES015 resumed-from-older-checkpoint.
RES015: dict[str, Threshold] = {
    "confidence": Threshold(0.8, (
        "The confidence that a resume came from an older checkpoint than the newest saved: "
        "the newer one is known from the audit or a checkpoint_saved line, but whether the "
        "resume could have used it (a sync not finished, a damaged file the audit could not "
        "see) is not always in the logs.")),
}

#: RES016 checkpoint-load-failed.
RES016: dict[str, Threshold] = {
    "confidence": Threshold(0.85, (
        "The confidence that the run died loading its checkpoint: the exception that ended "
        "the run matches a checkpoint-loader signature of the exception catalogue; the same "
        "messages can come from loading something else (a pretrained model), hence not "
        "higher.")),
}
