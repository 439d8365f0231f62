"""The overfitting family's thresholds: one place, each with why it has its value.

OVF001 calls a run overfitting when the eval loss rises after its minimum while the
training loss keeps falling (a training loss rising too is a divergence, DIV001).
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
