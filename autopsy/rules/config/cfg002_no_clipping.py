"""CFG002: gradient clipping is off."""

from __future__ import annotations

import numpy as np

from autopsy.model.finding import Evidence, Family, Finding, Severity
from autopsy.model.run import Run
from autopsy.rules.config._cfg import as_number, config_evidence, is_model_config
from autopsy.rules.context import RuleContext
from autopsy.rules.registry import rule


def _clipping_off(value: object) -> bool:
    """None, False, "none"/"false", or a number <= 0."""
    if value is None or value is False:
        return True
    if isinstance(value, str):
        return value.strip().lower() in ("none", "null", "false", "0", "0.0")
    number = as_number(value)
    return number is not None and number <= 0


@rule(
    code="CFG002",
    name="no-clipping",
    family=Family.DIVERGING,
    causes=("no_clipping",),
    requires=("config:max_grad_norm",),
)
def no_clipping(run: Run, ctx: RuleContext) -> Finding | None:
    """Gradient clipping is disabled (max_grad_norm is 0 or None).

    What happened:
        The training config sets ``max_grad_norm`` to 0 or None: gradients are never
        clipped. This is a risk, not a failure: the finding is a warning (family
        ``diverging``, where its failures land) and never the verdict on its own; a
        NaN or divergence rule may cite it as a contributing cause.

    Why it happens:
        One bad batch or a sharp region of the loss can produce a gradient many times
        the usual size; without clipping the optimizer takes the whole step, which can
        throw the weights far off (a loss spike, divergence, or a NaN a few steps
        later). Clipping the global norm to about 1 costs almost nothing.

    How to fix:
        Set ``max_grad_norm=1.0`` (HF Trainer; it is the default there) or call
        ``torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)`` between
        ``backward()`` and ``step()``.

    Evidence shown:
        The ``max_grad_norm`` value with the file it came from, and the grad norm's
        median and peak when logged. Fires only when ``max_grad_norm`` is present in a
        training config (training_args.bin, hparams, the Trainer's logged arguments) and
        is 0, negative or None. When the key is absent nothing is claimed: clipping is
        then unknown, not off.
    """
    entry = run.config.get_entry("max_grad_norm")
    if entry is None or is_model_config(run, entry.source) or not _clipping_off(entry.value):
        return None
    evidence: list[Evidence] = [config_evidence(entry, ": gradients are not clipped")]
    grad = run.series("grad_norm")
    values = grad.to_numpy(dtype=float)
    finite = np.isfinite(values)
    if finite.sum() >= 2:
        med = float(np.median(values[finite]))
        i = int(np.argmax(np.where(finite, values, -np.inf)))
        peak, step = float(values[i]), int(grad.index[i])
        evidence.append(Evidence(
            summary=f"grad norm median {med:.3g}, peak {peak:.3g} at step {step}"
                    + (f" ({peak / med:.3g}x the median)" if med > 0 else ""),
            tag="grad_norm", steps=(int(grad.index[0]), int(grad.index[-1])),
            numbers={"median": med, "peak": peak, "peak_step": step},
        ))
    return ctx.finding(
        message=f"Gradient clipping is off (max_grad_norm={entry.value!r} in {entry.source}): "
                f"one outsized gradient can throw the weights off.",
        severity=Severity.WARNING,
        confidence=0.8,
        cause="no_clipping",
        evidence=evidence,
        advice=("Set max_grad_norm=1.0 (or torch.nn.utils.clip_grad_norm_(params, 1.0) "
                "before optimizer.step()).",),
    )
