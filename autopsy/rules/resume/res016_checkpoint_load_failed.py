"""RES016: the run died loading the checkpoint it was to resume from."""

from __future__ import annotations

import pandas as pd

from autopsy.ckpt.layouts import step_in_path
from autopsy.model.finding import Evidence, Family, Finding, Severity
from autopsy.model.run import Run
from autopsy.rules.context import RuleContext
from autopsy.rules.exceptions import exception_rows
from autopsy.rules.registry import rule
from autopsy.rules.resume.thresholds import RES016

#: What to do for each cause.
ADVICE: dict[str, str] = {
    "state_dict_mismatch": "load the checkpoint into the same model it was saved from (same "
                           "config, same wrapping: a `module.` prefix from DDP, LoRA adapters "
                           "merged or not); to reuse weights on purpose, load with "
                           "`strict=False` and check the missing and unexpected keys listed",
    "optimizer_group_mismatch": "build the optimizer with the same parameter groups, in the "
                                "same order, as the run that saved it (same frozen layers, "
                                "same weight-decay split); or resume the weights only and "
                                "start a fresh optimizer, knowing its moments restart",
    "torn_checkpoint": "the file is cut short or corrupt (the save was killed, the disk "
                       "filled): resume from the previous checkpoint and check it first with "
                       "`autopsy ckpt`",
    "load_error": "check the checkpoint path exists and holds what the loader expects; for "
                  "a `weights_only` error, load with the classes allow-listed "
                  "(`torch.serialization.add_safe_globals`) if you trust the file",
}


@rule(code="RES016", name="checkpoint-load-failed", family=Family.RESUME,
      causes=("state_dict_mismatch", "optimizer_group_mismatch", "torn_checkpoint",
              "load_error"),
      thresholds=RES016)
def checkpoint_load_failed(run: Run, ctx: RuleContext) -> Finding | None:
    """The run died loading the checkpoint it was to resume from.

    What happened:
        The exception that ended the run is one the checkpoint loader raises
        (the signatures of ``autopsy/rules/exceptions.py``): keys missing or
        unexpected, a tensor of another size (``size mismatch for ...``), an
        optimizer state whose parameter groups do not match, a file cut short
        (``PytorchStreamReader failed``, ``storage has wrong size``), or a file
        that cannot be found or unpickled. The run never got back to training.

    Why it happens:
        The model or optimizer was built differently from the run that saved the
        checkpoint (another config, another wrapping, other frozen layers), the
        checkpoint was written by a job that was killed while saving, or the
        path points to something else.

    How to fix:
        Per cause: load into the same model and optimizer the checkpoint was
        saved from; resume from an earlier, complete checkpoint; check the path.

    Evidence shown:
        The exception with its message and where it was raised; the step is the one
        the checkpoint's path names (``checkpoint-500``, ``global_step500``,
        ``iter_0000500``, ``step=500``), when it names one. Confidence is
        ``confidence``.
    """
    hits = [(r.row, r.signature) for r in exception_rows(run, ctx=ctx)
            if r.signature is not None and r.signature.family is Family.RESUME]
    if not hits:
        return None
    row, sig = hits[-1]  # the last one ended the run
    d = row["details"] if isinstance(row["details"], dict) else {}
    exc = str(d.get("exception") or "an exception")
    text = str(d.get("exc_message") or row["message"] or "").split("\n")[0]
    rank = None if pd.isna(row["rank"]) else int(row["rank"])
    who = f"rank {rank}" if rank is not None else "the run"
    line = None if pd.isna(row["line"]) else int(row["line"])
    frame = d.get("user_frame") if isinstance(d.get("user_frame"), dict) else None
    evidence = [Evidence(summary=f"{exc}: {text[:300]}", source=str(row["source"]), line=line,
                         numbers={"exception": exc, "signature": sig.name})]
    if frame:
        evidence.append(Evidence(
            summary=f"raised from {frame.get('function', '?')} ({frame.get('file', '?')}:"
                    f"{frame.get('line', '?')})",
            source=str(frame.get("file")), line=frame.get("line")))
    assert sig.cause is not None
    step = step_in_path(f"{text} {row['message'] or ''}")
    return ctx.finding(
        step=step,
        message=f"{who[0].upper() + who[1:]} died loading its checkpoint: {sig.why} "
                f"({exc}: {text[:160]}).",
        severity=Severity.CRITICAL, confidence=ctx["confidence"], cause=sig.cause,
        ranks=() if rank is None else (rank,), evidence=evidence,
        advice=[ADVICE[sig.cause]], title="checkpoint load failed",
    )
