"""NAN008: an ``autopsy.capture`` bundle names the step, the samples and the first bad module."""

from __future__ import annotations

from typing import Any

import pandas as pd

from autopsy.model.finding import Evidence, Family, Finding, Severity
from autopsy.model.run import Run
from autopsy.rules.context import RuleContext
from autopsy.rules.nan_inf.thresholds import NAN008
from autopsy.rules.registry import rule


def _ids(rows: Any, batch_ids: list[Any] | None) -> list[Any]:
    """The batch ids of rows of the batch (the rows themselves without ids)."""
    rows = [r for r in rows if isinstance(r, int) and not isinstance(r, bool)] \
        if isinstance(rows, list) else []
    if not batch_ids:
        return rows
    return [batch_ids[r] for r in rows if 0 <= r < len(batch_ids)] or rows


def _short(ids: Any) -> str:
    """A list of ids, the middle elided past 8 (``[288, 289, ..., 319] (32 ids)``)."""
    if not isinstance(ids, list) or len(ids) <= 8:
        return str(ids)
    return f"[{', '.join(map(str, ids[:3]))}, ..., {ids[-1]}] ({len(ids)} ids)"


def _stats(s: Any) -> str:
    if not isinstance(s, dict):
        return "?"
    return (f"{s.get('dtype')} {s.get('shape')}, min {s.get('min'):.4g}, max {s.get('max'):.4g}"
            if isinstance(s.get("min"), (int, float)) and isinstance(s.get("max"), (int, float))
            else f"{s.get('dtype')} {s.get('shape')}, every value non-finite")


@rule(code="NAN008", name="captured-first-bad-module", family=Family.NAN_INF,
      causes=("bad_data", "numerical_instability"), thresholds=NAN008)
def captured_first_bad_module(run: Run, ctx: RuleContext) -> Finding | None:
    """The capture bundle names the first non-finite step, its samples and the module.

    What happened:
        ``autopsy.capture`` saw the loss or the gradient go non-finite at a step, saved
        the batch and re-ran it with a hook on every module. The finding gives the step,
        the batch ids, the first module (in execution order) whose output was not finite
        (or, with every output finite, the module nearest the output whose gradient was
        not), the statistics of its input and output, and what the data checks found:
        non-finite inputs or labels out of range mean the data was bad (``bad_data``); a
        module whose input was finite and whose output was not made the NaN itself
        (``numerical_instability``: a log of 0 or a negative, a division by zero, an fp16
        overflow). Confidence is ``confidence``.

    Why it happens:
        A poisoned sample (NaN/Inf features, an empty sequence, a label id out of range),
        or an operation that leaves its domain on some input (log, sqrt, division, pow,
        softmax over -inf) or its dtype's range (fp16 above 65,504).

    How to fix:
        Load the saved batch (``torch.load(".../batch.pt")``) and look at the named
        samples; guard the named module's operation (clamp before log, add an epsilon to
        a divisor, compute it in fp32); drop or fix the bad samples.

    Evidence shown:
        The step and batch ids, the module with its type and the statistics of its input
        and output (or gradient), and the data checks.
    """
    ev = run.events
    if ev.empty:
        return None
    rows = ev[(ev["kind"].astype(str) == "nan_loss")
              & ev["details"].map(lambda d: isinstance(d, dict) and d.get("from") == "capture")]
    if rows.empty:
        return None
    row = rows.iloc[0]
    d: dict[str, Any] = row["details"]
    step = d.get("step")
    probe = d.get("probe") if isinstance(d.get("probe"), dict) else {}
    data = d.get("data") if isinstance(d.get("data"), dict) else {}
    batch_ids = d.get("batch_ids") if isinstance(d.get("batch_ids"), list) else None
    evidence = [Evidence(summary=f"step {step}: loss {d.get('loss')}, grad norm "
                                 f"{d.get('grad_norm')}; batch ids {_short(batch_ids)}",
                         source=str(row["source"]))]
    cause = None
    what = []
    bad_inputs = data.get("nonfinite_inputs") if isinstance(
        data.get("nonfinite_inputs"), dict) else {}
    bad_labels = data.get("labels_out_of_range") if isinstance(
        data.get("labels_out_of_range"), dict) else {}
    bad_inputs = {k: v for k, v in bad_inputs.items() if isinstance(v, dict)}
    bad_labels = {k: v for k, v in bad_labels.items() if isinstance(v, dict)}
    for name, info in bad_inputs.items():
        ids = _ids(info.get("rows", []), batch_ids)
        what.append(f"input {name} holds {info.get('count')} non-finite value(s) in "
                    f"sample(s) {ids}")
    for name, info in bad_labels.items():
        ids = _ids(info.get("rows", []), batch_ids)
        what.append(f"labels {info.get('values')} in {name} are outside "
                    f"0..{info.get('num_classes')} (sample(s) {ids})")
    if what:
        cause = "bad_data"
        evidence += [Evidence(summary=w) for w in what]
    module = probe.get("module")
    if module:
        where = probe.get("where")
        if where == "forward":
            out = probe.get("output") if isinstance(probe.get("output"), dict) else {}
            ids = _ids(out.get("nonfinite_rows", []), batch_ids)
            evidence.append(Evidence(summary=f"module {module} ({probe.get('type')}): input "
                                             f"{_stats(probe.get('input'))}; output "
                                             f"{_stats(out)} with {out.get('nonfinite')} "
                                             f"non-finite value(s) in sample(s) {ids}"))
            if cause is None and not probe.get("input_nonfinite"):
                cause = "numerical_instability"
            found = (f"the first non-finite output is module {module} ({probe.get('type')}), "
                     f"from a {'non-finite' if probe.get('input_nonfinite') else 'finite'} "
                     f"input, in sample(s) {ids}")
        else:
            evidence.append(Evidence(summary=f"module {module} ({probe.get('type')}): "
                                             f"gradient {_stats(probe.get('grad'))}"))
            found = (f"every output was finite; the first non-finite gradient (from the "
                     f"output back) is module {module} ({probe.get('type')})")
    else:
        found = "the re-run found no non-finite module (" + str(
            probe.get("error") or "the loss could not be recomputed from the batch") + ")"
    data_text = ("; the data was bad: " + "; ".join(what)) if what else (
        "; the inputs and labels were valid" if data else "")
    return ctx.finding(
        message=f"step {step} went non-finite (batch ids {_short(batch_ids)}): "
                f"{found}{data_text}.",
        severity=Severity.CRITICAL, confidence=ctx["confidence"], cause=cause,
        step=step if isinstance(step, int) else None,
        ranks=() if pd.isna(row["rank"]) or int(row["rank"]) == 0 else (int(row["rank"]),),
        evidence=evidence,
        advice=[f"load {row['source'].rsplit('/', 1)[0]}/batch.pt and look at the named samples",
                f"guard module {module}'s operation (clamp before log, an epsilon in a divisor, "
                "fp32 for it)" if module else "pass forward= and loss_fn= to the Recorder so "
                "the batch can be re-run",
                "drop or fix the bad samples" if what else
                "re-run that batch alone with torch.autograd.set_detect_anomaly(True)"],
    )
