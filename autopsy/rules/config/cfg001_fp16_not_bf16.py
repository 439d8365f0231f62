"""CFG001: mixed precision in fp16 where bf16 would avoid overflow."""

from __future__ import annotations

from autopsy.model.config import as_flag
from autopsy.model.finding import Evidence, Family, Finding, Severity
from autopsy.model.run import Run
from autopsy.rules.config._cfg import config_evidence
from autopsy.rules.context import RuleContext
from autopsy.rules.registry import rule


@rule(
    code="CFG001",
    name="fp16-not-bf16",
    family=Family.NAN_INF,
    causes=("fp16_overflow",),
    requires=("config:fp16",),
)
def fp16_not_bf16(run: Run, ctx: RuleContext) -> Finding | None:
    """Mixed precision uses fp16 where bf16 would do.

    What happened:
        The run trains in fp16 mixed precision (``fp16=True``) and not bf16. This is a
        risk, not a failure: the finding is a warning (family ``nan_inf``, the family
        its failures belong to) and never the verdict on its own.

    Why it happens:
        fp16 has a narrow range (largest value 65504): activations, attention logits or
        gradients that overflow become ``inf``, and the loss scaler then skips steps
        and shrinks its scale, sometimes until the scale collapses and the loss turns
        NaN. bf16 has the range of fp32, needs no loss scaling, and is the default
        choice on GPUs that support it.

    How to fix:
        On Ampere or newer GPUs (A100, H100, RTX 30xx/40xx, L4...), set ``bf16=True``
        and ``fp16=False``. On older GPUs (V100, T4) keep fp16 with the dynamic loss
        scaler and gradient clipping (``max_grad_norm=1.0``), and watch the loss scale.

    Evidence shown:
        The ``fp16`` and ``bf16`` values with the config file they came from. Fires when
        ``fp16`` is true and ``bf16`` is not.
    """
    fp16 = run.config.get_entry("fp16")
    if fp16 is None or as_flag(fp16.value) is not True:
        return None
    bf16 = run.config.get_entry("bf16")
    if bf16 is not None and as_flag(bf16.value) is True:
        return None
    evidence: list[Evidence] = [config_evidence(fp16)]
    if bf16 is not None:
        evidence.append(config_evidence(bf16))
    return ctx.finding(
        message=f"The run uses fp16 mixed precision (fp16=True in {fp16.source}) rather than "
                f"bf16: fp16 overflows above 65504 and relies on loss scaling.",
        severity=Severity.WARNING,
        confidence=0.6,
        cause="fp16_overflow",
        evidence=evidence,
        advice=(
            "On Ampere or newer GPUs (A100/H100/RTX 30xx+), switch to bf16: bf16=True, "
            "fp16=False.",
            "On older GPUs keep fp16 with the dynamic loss scaler and clipping "
            "(max_grad_norm=1.0), and watch the loss scale.",
        ),
    )
