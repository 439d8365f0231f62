"""The healthy family's thresholds: one place, each with why it has its value.

A health rule vouching for a run is what lets the verdict say ``healthy`` rather than
``unknown`` when no rule reports a failure (``docs/verdicts.md``).
"""

from __future__ import annotations

from autopsy.rules.registry import Threshold

#: HLT001 loss-decreasing.
HLT001: dict[str, Threshold] = {
    "min_points": Threshold(3, (
        "HLT001 vouches from 3 finite loss points, the fewest on which a fall is more than "
        "one change between two values: real runs often log once per epoch (Keras, "
        "Lightning, HF logging_strategy=\"epoch\"), a handful of points each averaged over a "
        "whole epoch; with fewer than 8 points the start and end are the first and last "
        "points.")),
    "min_drop": Threshold(0.05, (
        "The loss must fall at least 5% from the first to the last quarter of its points: "
        "above the epoch-to-epoch noise of epoch averages, and well below the fall of any "
        "run that learns. It is the same 5% within which the FLAT rules call a loss flat "
        "(flat_rel_tol).")),
    "max_end_rise": Threshold(0.3, (
        "The loss over the last quarter of the points must be within 30% of its best stretch "
        "(the lowest median of the four quarters: a running minimum would pick the luckiest "
        "window, and a long run thinned to the point budget keeps each bucket's extremes): a "
        "loss that fell and then "
        "climbed back a third above its best is turning into a divergence, not healthy, "
        "however far it fell first. 30% is DIV001's min_rel_rise, the rise it calls a "
        "divergence.")),
    "max_overflow_skips": Threshold(10, (
        "At most 10 non-finite grad norms, read as skipped fp16 steps: a loss scaler skips "
        "the steps whose gradients overflow while it finds its scale, and the HF Trainer logs "
        "their grad norm as NaN or Inf whether or not it logs the scale; a few such points "
        "beside a finite, falling loss are normal. More than that is not a scale search, and "
        "the NaN rules judge it.")),
}

#: HLT002 loss-scale-search.
HLT002: dict[str, Threshold] = {
    "min_scale": Threshold(1.0, (
        "The scale search is benign only while the loss scale stays above 1.0, the floor at "
        "or below which the NaN rules call the scale collapsed (NAN003, NAN006: "
        "min_scale).")),
    "max_skips": Threshold(64, (
        "At most 64 overflow-skipped steps: DeepSpeed's highest default start (2^32) takes "
        "32 halvings to reach 1, and with hysteresis: 2 each halving can take two overflows. "
        "More skips than a whole search from the top is not a search.")),
}

#: HLT003 loss-level-mid-run.
HLT003: dict[str, Threshold] = {
    "min_points": Threshold(3, (
        "HLT003 judges a level curve from 3 finite points, as HLT001 judges a falling one: the "
        "fewest on which being level is more than two values that happen to agree.")),
    "min_start_intervals": Threshold(10, (
        "The first logged step must be at least 10 logging intervals (the median gap between "
        "logged steps) into the run: a log written from its start shows its first points, "
        "so one that begins at its tenth logging point or later is an excerpt or a "
        "continuation of a run already under way, whose early fall is not shown. A level "
        "curve from the run's start is the FLAT rules' to judge, not a plateau.")),
    "max_rel_change": Threshold(0.1, (
        "The curve is level when the median of its last quarter is within 10% of the median "
        "of its first (and its Theil-Sen slope is not above zero at 95%): the batch-to-batch "
        "wander of a loss late in training is of that order, while a loss rising more than "
        "that is turning (DIV001 and HLT001's max_end_rise judge those), and one falling "
        "more than HLT001's min_drop is HLT001's.")),
    "min_accuracy": Threshold(0.01, (
        "An accuracy logged beside the curve must have a median above 1% of its scale (0.01, "
        "or 1 when printed in percent): a model that gets (almost) nothing right is stuck, "
        "not at a plateau, whatever its loss does (FLAT008 judges an accuracy of 0 from the "
        "run's start).")),
}
