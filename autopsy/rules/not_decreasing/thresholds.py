"""The not-decreasing family's thresholds: one place, each with why it has its value.

Every FLAT rule declares all of :data:`FLAT`: they share one analysis of the flat loss
(:func:`autopsy.rules.not_decreasing._flat.flat_loss`) that picks exactly one cause, so they
must classify alike (``--set FLAT.chance_tol=0.05`` tunes them together). The LR regimes
come from :mod:`autopsy.rules.thresholds`.
"""

from __future__ import annotations

from autopsy.rules.registry import Threshold
from autopsy.rules.thresholds import LR_REGIME

#: The flat-loss analysis and its cause (every FLAT rule declares all of it).
FLAT: dict[str, Threshold] = {
    "min_points": Threshold(10, (
        "Fewest finite loss points for the plateau test (a Theil-Sen fit and the medians of "
        "the first and last quarters, against the point-to-point noise): with fewer, a "
        "trend cannot be told from the noise. Runs logged once per epoch, with fewer points, "
        "are judged only by the stuck-loss test (min_constant_points).")),
    "flat_rel_tol": Threshold(0.05, (
        "The loss is flat when its change over the run (of the fit, or of the quarter "
        "medians) is within 5% of its level, or within twice its noise about the fit. A run "
        "that learns moves its loss by far more from start to end; 5% is also the drop from "
        "which HLT001 calls a run healthy, so the two rules meet at the same figure.")),
    "initial_points": Threshold(3, (
        "The initial loss is the median of the first 3 finite points, so one odd first batch "
        "does not set it; max_initial_drop compares it with the plateau's end.")),
    "late_start_intervals": Threshold(10, (
        "FLAT005 (flat, no cause) only judges a log whose first point is within 10 logging "
        "intervals of step 0 (or of the first step of its epoch count): a flat stretch cut "
        "from the middle of a run (a reporter pasting steps 3290-3430) may be a plateau "
        "after learning, which the log cannot tell from never learning. The causes "
        "FLAT001-FLAT004 name (a zero loss, frozen gradients, chance level) hold wherever "
        "the window starts.")),
    "max_initial_drop": Threshold(0.1, (
        "A loss that fell more than 10% from its initial level before it flattened has "
        "learned, then converged or stalled late: not 'never learned', so no FLAT rule "
        "fires on it.")),
    "zero_loss": Threshold(1e-7, (
        "A loss within 1e-7 of 0 at every point is exactly 0 (labels_masked): the "
        "cross-entropy of a model in training is orders of magnitude above it, while a mean "
        "over zero label tokens (or a NaN loss that some HF Trainer versions log as 0) is 0 "
        "up to float rounding.")),
    "const_rel": Threshold(1e-6, (
        "A loss whose spread is within 1e-6 of its level is constant to about six "
        "significant digits: batches that differ give losses that differ in the later digits "
        "whenever any label contributes, so a loss that never changes, with no gradient, had "
        "no training signal (labels_masked). Also what 'identical' means in the stuck-loss "
        "test (min_constant_points).")),
    "zero_grad_norm": Threshold(1e-8, (
        "A grad-norm median at or below 1e-8 is zero: no parameter receives a gradient "
        "(frozen_params, or labels_masked when the loss is constant too). The grad norm of a "
        "trainable model with a loss that depends on its weights is orders of magnitude "
        "above it.")),
    "tiny_grad_rel": Threshold(0.05, (
        "Outside LoRA, a grad-norm median at most 5% of the loss level is tiny: frozen_params "
        "on weaker evidence. When the whole model (output layer included) trains, the grad "
        "norm of a cross-entropy loss is typically 0.1-5x the loss (largest at chance level, "
        "where p - y is largest); half the bottom of that range means only a sliver of the "
        "model trains. LoRA is left out: its adapters are a sliver by design.")),
    "chance_tol": Threshold(0.03, (
        "The flat loss is at chance level (chance_level, FLAT004) when within 3% (relative) "
        "of ln(C), C = num_labels or vocab_size: a plateau averaged over noisy batches sits "
        "near, not exactly on, the cross-entropy of a uniform guess, and 3% is still close "
        "enough that a plateau elsewhere is not taken for it. FLAT004's confidence falls "
        "with the distance within it.")),
    "min_constant_points": Threshold(3, (
        "A loss identical (to const_rel) over its last 3 logged points, and over at least a "
        "quarter of the run, has stopped changing: a model that still updates moves its loss "
        "in the later digits at every logged point, even once converged. Runs logged once "
        "per epoch have only a handful of points, fewer than min_points, so this test "
        "catches a dead run there.")),
    "min_constant_level": Threshold(0.01, (
        "A constant loss below 0.01 may be a fully fitted training set printed with few "
        "digits (loss: 0.0000), not a dead run: the stuck-loss test ignores it.")),
    "implied_chance_tol": Threshold(0.002, (
        "Without num_labels in a config, a stuck loss within 0.2% of ln(k) for a whole k >= 2 "
        "(0.6931 = ln 2, 1.386 = ln 4, 2.3026 = ln 10) is read as chance level over k "
        "classes: printed losses carry 4 or more digits, so a loss this close to ln(k) is not "
        "the coincidence of a real plateau.")),
    **LR_REGIME,
}

#: FLAT006 eval-accuracy-frozen (its own test, not the flat-loss analysis above).
FLAT006: dict[str, Threshold] = {
    "min_evals": Threshold(5, (
        "At least 5 finite eval accuracies: on fewer, a model that converged at its first "
        "evaluation and a model that never moved look the same.")),
    "frozen_share": Threshold(0.75, (
        "At least 3/4 of the evals give exactly the first eval's accuracy (to frozen_rel): the "
        "model's predictions on the eval set never got better than at the first evaluation. "
        "A model that learns changes some predictions between evaluations, so its accuracy "
        "moves in the later digits; one that outputs the majority class for every input "
        "scores the class's share every time. A quarter is left to a few evals where a "
        "handful of predictions flipped and flipped back.")),
    "frozen_rel": Threshold(1e-6, (
        "Two accuracies within 1e-6 (relative) are the same: float32 logging rounds the same "
        "count of correct predictions to within a few 1e-8, while one prediction out of a "
        "million differs by 1e-6.")),
    "max_accuracy": Threshold(0.999, (
        "An eval accuracy frozen at 0.999 or above is a solved eval set (every prediction "
        "right from the first evaluation on), not a stuck model.")),
}

#: FLAT007 accuracy-at-chance (a run judged by its accuracy: no loss was logged).
FLAT007: dict[str, Threshold] = {
    "min_points": Threshold(5, (
        "At least 5 finite accuracies: on fewer, a flat stretch at the start of a run that "
        "then learns cannot be told from one that never does.")),
    "max_classes": Threshold(20, (
        "Chance is 1/k for a whole k from 2 to 20: up to 20 classes the chance levels (0.5, "
        "0.33, ... 0.05) lie far enough apart that an accuracy sitting on one is no "
        "coincidence; with more classes 1/k crowds near zero, where any low accuracy would "
        "match one.")),
    "chance_rel_tol": Threshold(0.1, (
        "The accuracy's median lies within 10% (relative) of 1/k: a model that guesses "
        "scores 1/k on balanced classes give or take the sampling noise of a batch or an eval "
        "set (0.09-0.11 for ten classes), while a model that learned anything scores well "
        "above.")),
    "flat_abs": Threshold(0.02, (
        "Flat: the median of the last third of the points is at most 0.02 (in a 0-1 scale) "
        "above the first third's: a model that learns gains several points of accuracy over "
        "a run; one at chance wanders by about a point.")),
}

#: FLAT008 accuracy-zero (its own test, not the flat-loss analysis above).
FLAT008: dict[str, Threshold] = {
    "min_points": Threshold(5, (
        "At least 5 logged accuracies, every one 0: a model at the start of training scores 0 "
        "for a few batches, but one that learned anything (the most frequent class or token) "
        "gets some predictions right within a few logging intervals; 5 zeros in a row is "
        "as many as FLAT007 asks of an accuracy at chance.")),
    "zero_accuracy": Threshold(1e-9, (
        "An accuracy at or below 1e-9 is 0: printed accuracies carry at most 6-8 digits, and "
        "one right prediction in a batch of a few hundred is above 1e-3.")),
    "max_loss_drop": Threshold(0.1, (
        "The loss, when logged, fell by at most 10% from the median of its first third to "
        "that of its last: an accuracy stuck at 0 beside a loss that falls is a metric that "
        "does not fit the task (Keras 'accuracy' on a regression reads 0 throughout), not a "
        "model that does not learn. 10% is FLAT's max_initial_drop: the same figure says "
        "'the loss did not move'.")),
}
