"""The diverging family's thresholds: one place, each with why it has its value.

DIV001 (a finite loss that rises and stays up: a failure) and DIV002 (spikes the loss came
back from: a warning) split the loss going up between them: a rise that lasts
``min_rise_points`` or more is DIV001's, a spike that is back within ``recover_points`` is
DIV002's; once a value is NaN/Inf the NaN rules own the run.
"""

from __future__ import annotations

from autopsy.rules.registry import Threshold

#: DIV001 loss-diverging.
DIV001: dict[str, Threshold] = {
    "min_points": Threshold(8, (
        "Fewest loss points to judge a divergence: a best level, a rise of min_rise_points "
        "after it and a noise estimate before it each need a few points; on fewer, a rise "
        "cannot be told from noise.")),
    "smooth_points": Threshold(5, (
        "The loss is smoothed by a centred running median over at least 5 points before its "
        "best level and the rise are read: one odd batch then neither sets the best nor fakes "
        "a rise (a 5-point median ignores up to 2 outliers).")),
    "smooth_fraction": Threshold(20, (
        "On long runs the smoothing window grows to 1/20 of the points (5% of the run), so "
        "the best level is that of a stretch of training, not of a lucky run of batches.")),
    "near_min": Threshold(0.02, (
        "The smoothed loss within 2% of its best (or within its noise, if larger) is still "
        "at the best: the rise begins after the last such stretch, so a flat floor long "
        "before the rise does not count as its start.")),
    "min_rise_points": Threshold(5, (
        "A sustained rise lasts at least 5 points without coming back near the best: a "
        "loss that comes back within fewer spiked and recovered, which is DIV002's (its "
        "recover_points is 5 too).")),
    "min_rel_rise": Threshold(0.3, (
        "A sustained rise ends at least 30% above the best level (and above the typical "
        "level before the best, by as much): less is within the wander of a noisy plateau at "
        "the end of a run, while a diverging loss keeps climbing far beyond it.")),
    "min_trend_rise": Threshold(0.1, (
        "A rise whose trend is up over its whole 95% interval (a steady climb, not wander) "
        "needs only end 10% above the best: a training loss that climbs for "
        "min_rise_points logged points in a row is already diverging (an epoch-level log "
        "rising 1.09 -> 1.24 over five epochs), while 10% keeps the small drift of a "
        "converged loss out.")),
    "min_lost_progress": Threshold(0.1, (
        "A steady climb (min_trend_rise) must give back at least 10% of what the loss had "
        "gained from its first points to its best: a loss that has converged near zero "
        "drifts by large factors (0.0006 to 0.0012) while losing nothing that matters, "
        "whereas a diverging run heads back toward where it started.")),
    "noise_k": Threshold(2.0, (
        "The rise must also exceed 2 standard deviations of the point-to-point noise of "
        "log(loss) up to the best: a noisy run needs a clearer rise than a smooth one, so its "
        "noise alone is never a divergence.")),
    "explode_ratio": Threshold(10.0, (
        "A loss whose last min_explode_points points are at least 10x its best exploded: an "
        "order of magnitude is beyond any noisy plateau, so it counts even when the rise is "
        "shorter than min_rise_points; the message then says 'exploded' and the confidence "
        "is higher.")),
    "min_explode_points": Threshold(2, (
        "An explosion needs its last 2 points at least explode_ratio above the best, so a "
        "single wild last value is not called a divergence.")),
    "min_sparse_points": Threshold(4, (
        "A loss logged fewer than min_points times (once per epoch, every 500 steps, or a "
        "reporter's hand-picked lines) is judged on its raw points from 4 on: its best point "
        "and every point after it, at least min_explode_points of them, must sit "
        "min_rel_rise above the best (or the loss must rise at every logged step, ending "
        "min_trend_rise above its first: a steady climb), and an eval loss, when logged, "
        "must have risen by min_trend_rise too; on 3 or fewer points a rise cannot be told "
        "from one bad epoch.")),
    "absurd_loss": Threshold(1e15, (
        "A training loss still at or above 1e15 over its last min_explode_points points has "
        "exploded, whatever its curve did before it was logged: no classification, "
        "detection or language-model loss comes near it (cross-entropy over a million "
        "classes is 14), and a squared error on raw regression targets of ten million "
        "(1e14) stays below it. It catches a loss logged only after it blew up (mmdet#1081: "
        "5e26 from the first line), where no best point exists to rise from.")),
    "end_points": Threshold(3, (
        "The loss at the end is the median of at least the last 3 points of the rise (or a "
        "smoothing window), so the rise factor reported is not one point's.")),
    "excerpt_start_intervals": Threshold(10, (
        "A sparse loss whose lowest point is its first, in a log that starts at least 10 "
        "logging intervals into the run (an excerpt; HLT003.min_start_intervals reads it the "
        "same way), has shown no level it left: its one low point may be a lucky batch of a "
        "noisy per-batch loss. It is a divergence only when the points after it climb (their "
        "Theil-Sen slope above zero at 95%), climb at every step, or exploded "
        "(explode_ratio).")),
}

#: DIV002 loss-spikes.
DIV002: dict[str, Threshold] = {
    "window": Threshold(20, (
        "A point's level is the median of the 20 finite loss points before it (and its noise "
        "their MAD): long enough that a spike does not raise its own baseline, short enough "
        "to follow a falling loss.")),
    "min_periods": Threshold(10, (
        "A point is scored only with at least 10 points before it: the first points of a "
        "run fall fast, and a median and MAD of fewer would call ordinary early points "
        "spikes.")),
    "min_score": Threshold(8.0, (
        "A spike is at least 8 robust deviations above the noise of log(loss) around its "
        "running median (detrend_points): a training loss is noisy from batch to batch with "
        "heavy tails (hard or long batches), so only a jump far outside that noise is a "
        "spike.")),
    "detrend_points": Threshold(9, (
        "Scores are measured around a centred running median of log(loss) over 9 points, so "
        "that neither the loss level nor a fast descent inside the window passes for noise; "
        "a 9-point median ignores a spike of up to 4 points.")),
    "min_ratio": Threshold(1.5, (
        "A spike is also at least 1.5x the median before it (half as much again): a high "
        "score on a very quiet loss can be a small move.")),
    "recover_points": Threshold(5, (
        "The loss must be back within 5 logged points for a spike the run recovered from; "
        "one that stays up longer is a rise (DIV001, min_rise_points 5) and is not "
        "reported here.")),
    "recover_tol": Threshold(0.2, (
        "'Back' means within 20% of the level before the spike (a logged 0.0, the HF NaN "
        "filter's, is no recovery).")),
    "single_point_ratio": Threshold(3.0, (
        "A spike of a single point (back at the very next one) counts only from 3x its level: "
        "one odd batch a little above the rest is ordinary noise; 3x is a batch worth "
        "inspecting.")),
    "max_isolated": Threshold(2, (
        "One or two spike events are isolated: cause bad_data (inspect those batches) unless "
        "clipping is off; more are repeated instability, lr_too_high when most of them sit in "
        "the warm-up, at the peak LR or at a warm restart.")),
    "max_listed": Threshold(5, (
        "The evidence lists at most 5 spike events (the message counts the rest): a limit on "
        "the report's length that decides nothing.")),
}

#: DIV003 loss-unbounded-below.
DIV003: dict[str, Threshold] = {
    "min_points": Threshold(4, (
        "At least 4 finite loss points (DIV001's min_sparse_points): a start, an end and the "
        "fall between them.")),
    "ratio": Threshold(100.0, (
        "The loss ends below zero at least 100 times further from zero than it started (the "
        "start's magnitude floored at 1): a bounded objective with a negative part (an "
        "ELBO, a Gaussian or flow log-likelihood) settles within a small factor of where it "
        "began, while a loss with no lower bound (a cross-entropy fed targets outside [0, 1], "
        "a variance collapsing to zero in a Gaussian NLL) runs away by orders of magnitude. "
        "Two orders leave every bounded case far behind.")),
    "min_falling_share": Threshold(0.7, (
        "At least 70% of the steps between points go down: the run keeps digging, not one "
        "wild value.")),
}
