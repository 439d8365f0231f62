"""The overfitting family's thresholds: one place, each with why it has its value.

OVF001 calls a run overfitting when the eval loss rises after its minimum while the
training loss keeps falling (a training loss rising too is a divergence, DIV001); OVF002
when a run without an eval loss sees its eval accuracy fall after its best while the
training improves.
"""

from __future__ import annotations

from autopsy.rules.registry import Threshold

#: OVF001 overfitting.
OVF001: dict[str, Threshold] = {
    "min_evals": Threshold(3, (
        "At least 3 finite evals: a minimum needs an eval before or at it and rising evals "
        "after it; with two, one noisy eval decides.")),
    "min_rising_evals": Threshold(2, (
        "At least 2 of the evals after the minimum must be above the bar (rel_rise): an eval "
        "set is small and one bad eval is noise, two are a trend.")),
    "rel_rise": Threshold(0.1, (
        "The last eval, and min_rising_evals of those after the minimum, are at least 10% "
        "above the minimum (0.1 above it when the minimum is 0 or less), and the median eval "
        "after the minimum is 10% above the median of as many evals before it: a rise "
        "clearly beyond the eval-to-eval noise of a plateau, whose lowest eval is a lucky "
        "one.")),
    "train_points": Threshold(3, (
        "The training loss at the best step and at the end are medians of 3 points, so one "
        "batch does not decide whether the training loss still fell (needed to tell "
        "overfitting from a divergence).")),
    "memorised_train": Threshold(0.1, (
        "A training loss below 0.1 while the eval loss is above memorised_eval is called "
        "memorised: a cross-entropy of 0.1 puts about 90% probability (e^-0.1) on the right "
        "answer of every training example.")),
    "memorised_eval": Threshold(1.0, (
        "The eval loss above 1.0 (about 37% probability, e^-1, on the right answer) while the "
        "training loss is below memorised_train: the model knows its training set by heart "
        "and does not generalise.")),
}

#: OVF001's second reading: an eval loss that never came back to its minimum.
OVF001.update({
    "stale_evals": Threshold(5, (
        "At least 5 evals after the minimum, none back at it: the patience practitioners give "
        "early stopping (Keras and HF examples use 3-10); fewer is the wander of a plateau.")),
    "stale_share": Threshold(0.25, (
        "Those evals are at least a quarter of all: a minimum near the end of a long run is "
        "a run still converging, not one that went on past its best.")),
    "stale_rise": Threshold(0.03, (
        "Their median at least 3% above the minimum: the eval loss sits clearly off its best, "
        "not level with it.")),
    "stale_train_drop": Threshold(0.2, (
        "While the training loss fell by at least 20% from the best step to the end: the "
        "model keeps fitting its training set (a gap that widens) while the eval loss does "
        "not follow; a training loss that barely moves is a converged run, not overfitting.")),
})

#: OVF001's third reading: a noisy eval loss whose running median rises.
OVF001.update({
    "smooth_window": Threshold(5, (
        "The running median is taken over 5 evals (and the rule needs twice as many): the "
        "median of 5 ignores two outliers on either side, the eval-to-eval wander of small "
        "validation sets (Keras and YOLO curves jump 10-40% from one epoch to the next) while "
        "still following a rise that lasts a handful of epochs. The lowest window and the "
        "last one must not overlap, and the last must be rel_rise above the lowest.")),
})

#: OVF002 eval-accuracy-falling.
OVF002: dict[str, Threshold] = {
    "min_evals": Threshold(3, (
        "At least 3 finite evals (of the accuracy; OVF002 stands aside when as many eval "
        "losses are logged, OVF001 judges those): a best and at least two after it.")),
    "min_falling_evals": Threshold(2, (
        "At least 2 evals after the best, every one below it: one eval below the best is "
        "noise, two in a row that never come back are a trend.")),
    "rel_drop": Threshold(0.05, (
        "The last eval at least 5% (relative) below the best: the binomial noise of an "
        "accuracy on a few thousand eval examples is about 1-2% relative at 40-90% "
        "accuracy, so 5% is well beyond what a re-draw of the eval set would move.")),
}
