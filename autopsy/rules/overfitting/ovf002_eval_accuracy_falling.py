"""OVF002: the eval accuracy falls after its best while the training keeps improving."""

from __future__ import annotations

import numpy as np
import pandas as pd

from autopsy.model.finding import Evidence, Family, Finding, Severity
from autopsy.model.run import Run
from autopsy.rules.context import RuleContext
from autopsy.rules.overfitting.thresholds import OVF002
from autopsy.rules.registry import rule


@rule(
    code="OVF002",
    name="eval-accuracy-falling",
    family=Family.OVERFITTING,
    causes=("overfitting",),
    requires=("eval_accuracy",),
    thresholds=OVF002,
)
def eval_accuracy_falling(run: Run, ctx: RuleContext) -> Finding | None:
    """The model overfits: the eval accuracy falls after its best while training improves.

    What happened:
        The run logs no eval loss (OVF001 judges those that do), but an eval accuracy:
        it peaked and then fell, every eval after the best below it (at least
        ``min_falling_evals`` of them, out of at least ``min_evals``), the last at least
        ``rel_drop`` below the best (relative), while the training accuracy rose or the
        training loss fell over the same stretch. The reported step is the best eval:
        the last good weights.

    Why it happens:
        As for OVF001: more capacity than the data constrains, too many epochs, too
        little regularisation. An eval accuracy that falls while the training accuracy
        also falls is not this (the training itself went wrong).

    How to fix:
        Keep the checkpoint of the best eval and stop there (early stopping on the eval
        accuracy), train for fewer epochs, regularise (weight decay, dropout,
        augmentation), get more data.

    Evidence shown:
        The eval accuracy at its best and at the end, and the training accuracy or loss
        at the best step and at the end.
    """
    if len(_finite(run.series("eval_loss"))) >= int(ctx["min_evals"]):
        return None  # OVF001 judges the eval loss
    acc = _finite(run.series("eval_accuracy"))
    if len(acc) < int(ctx["min_evals"]):
        return None
    values, steps = acc.to_numpy(dtype=float), acc.index.to_numpy()
    best_i = int(np.argmax(values))
    best, last = float(values[best_i]), float(values[-1])
    after = values[best_i + 1:]
    if len(after) < int(ctx["min_falling_evals"]) or not (after < best).all() or best <= 0:
        return None
    drop = (best - last) / best
    if drop < ctx["rel_drop"]:
        return None
    best_step, last_step = int(steps[best_i]), int(steps[-1])
    train = _training_improved(run, best_step, last_step)
    if train is None:
        return None
    return ctx.finding(
        message=f"The model overfits: the eval accuracy was best at step {best_step} "
                f"({best:.4g}) and fell to {last:.4g} by step {last_step} ({-drop:+.1%}), "
                f"while the training {train.summary.split(':')[0]} improved.",
        severity=Severity.ERROR, confidence=min(0.8, 0.5 + drop + 0.05 * len(after)),
        cause="overfitting", step=best_step,
        evidence=[Evidence(
            summary=f"eval accuracy best {best:.4g} at step {best_step}, then "
                    + ", ".join(f"{v:.4g}" for v in after[:8])
                    + (" ..." if len(after) > 8 else "")
                    + f"; {last:.4g} at step {last_step} ({-drop:+.1%})",
            tag="eval_accuracy", steps=(best_step, last_step),
            numbers={"best": best, "best_step": best_step, "last": last, "drop": drop,
                     "evals_after": len(after)}), train],
        advice=[f"keep the checkpoint of the best eval (step {best_step}) and stop there: "
                "early stopping on the eval accuracy (Keras EarlyStopping(monitor="
                "'val_accuracy', patience=3, restore_best_weights=True); HF "
                "metric_for_best_model='accuracy', load_best_model_at_end=True)",
                f"train for fewer steps (max_steps={best_step}) or epochs",
                "regularise: weight decay, dropout, data augmentation; get more data"],
    )


def _finite(s: pd.Series) -> pd.Series:
    s = s.sort_index()
    return s[np.isfinite(s.to_numpy(dtype=float))]


def _near(s: pd.Series, step: int) -> float:
    """The value at the last point at or before ``step`` (else the first)."""
    i = int(np.searchsorted(s.index.to_numpy(), step, side="right")) - 1
    return float(s.iloc[max(i, 0)])


def _training_improved(run: Run, best_step: int, last_step: int) -> Evidence | None:
    """Evidence that the training accuracy rose, or the training loss fell, from the best
    eval to the end; None when neither is logged or neither improved."""
    for tag, better in (("accuracy", 1.0), ("train_accuracy", 1.0), ("loss", -1.0)):
        s = _finite(run.series(tag))
        if len(s) < 2 or s.index.max() <= best_step:
            continue
        at_best, at_end = _near(s, best_step), _near(s, last_step)
        if better * (at_end - at_best) > 0:
            word = "loss" if tag == "loss" else "accuracy"
            return Evidence(
                summary=f"{word}: training {word} {at_best:.4g} at step {best_step} -> "
                        f"{at_end:.4g} at step {last_step}",
                tag=tag, steps=(best_step, last_step),
                numbers={"at_best": at_best, "at_end": at_end})
    return None
