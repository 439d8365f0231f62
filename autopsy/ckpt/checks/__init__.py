"""The checks of the checkpoint audit, each with a permanent code (``CKPT001``...).

Codes are never reused. ``autopsy explain CKPT011`` prints a check's entry;
``docs/ckpt.md`` lists them all. A failed check is a finding of family ``resume``
(the same record as ``autopsy analyze``'s findings) and sets its component's status.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class CheckDoc:
    """One check: its code, slug, the cause it names, its title and what it means."""

    code: str
    name: str
    cause: str
    title: str
    doc: str


CHECKS: dict[str, CheckDoc] = {c.code: c for c in (
    CheckDoc("CKPT001", "weights-missing", "missing_weights",
             "The checkpoint holds no model weights",
             "No model.safetensors / pytorch_model.bin / adapter_model.safetensors (or the "
             "model key of a torch.save dict) was found. Nothing can be resumed without them."),
    CheckDoc("CKPT002", "optimizer-missing", "missing_optimizer_state",
             "The optimizer state is missing",
             "A resume rebuilds Adam's moments from zero: the first updates are as large as "
             "at step 1 (bias correction restarts) and the loss usually jumps. The HF Trainer "
             "loads optimizer.pt and scheduler.pt only when both exist, and says nothing."),
    CheckDoc("CKPT003", "scheduler-missing", "scheduler_not_restored",
             "The LR scheduler state is missing",
             "A resume restarts the schedule at its first step: warmup runs again and the "
             "decay starts over. Save it with trainer.save_state / accelerator.save_state or "
             "put lr_scheduler.state_dict() in your torch.save dict."),
    CheckDoc("CKPT004", "grad-scaler-missing", "grad_scaler_not_restored",
             "The fp16 grad scaler state is missing",
             "The run used fp16 but no GradScaler state was saved: the loss scale restarts "
             "at 65536 and the first steps after the resume overflow and are skipped."),
    CheckDoc("CKPT005", "rng-missing", "rng_not_restored",
             "RNG state is missing (for some ranks)",
             "The HF Trainer writes rng_state.pth (one process) or rng_state_R.pth (one per "
             "rank); accelerate random_states_R.pkl. A missing one is only logged at INFO: "
             "that rank resumes with fresh dropout masks and shuffles."),
    CheckDoc("CKPT006", "data-position-missing", "sampler_not_restored",
             "No data position is saved",
             "No sampler, StatefulDataLoader or data-loader state and no step counter: the "
             "resumed run starts its epoch from the first batch and sees those batches twice. "
             "A warning: many loops skip to the step themselves."),
    CheckDoc("CKPT007", "torn-save", "torn_checkpoint",
             "The save did not finish (torn checkpoint)",
             "A Trainer folder without trainer_state.json (the Trainer writes it last), or "
             "a file that is zero-length or shorter than its own header says: the process "
             "died while saving. Resume from the newest complete checkpoint."),
    CheckDoc("CKPT010", "optimizer-incomplete", "missing_optimizer_state",
             "The optimizer state does not cover every parameter",
             "Some parameters of the param groups have no state, or Adam's exp_avg / "
             "exp_avg_sq / step are missing for some: those parameters restart their moments."),
    CheckDoc("CKPT011", "optimizer-step-mismatch", "step_mismatch",
             "The optimizer's step count disagrees with the global step",
             "Adam's per-parameter step should equal the global step (optimizer updates), or "
             "global_step x gradient accumulation for loops that count micro-batches; fewer "
             "is allowed under fp16 (overflow steps are skipped). Otherwise the optimizer "
             "state comes from another save or another run."),
    CheckDoc("CKPT012", "scheduler-step-mismatch", "step_mismatch",
             "The scheduler's step count disagrees with the global step",
             "scheduler.last_epoch (and _step_count - 1) should equal the global step: else "
             "the LR after the resume is the LR of another step."),
    CheckDoc("CKPT013", "scheduler-lr-mismatch", "lr_mismatch",
             "The scheduler's LR disagrees with the optimizer's param_group lr",
             "The scheduler's last LR (_last_lr) and the optimizer's param_groups[i]['lr'] "
             "differ, or they count a different number of param groups: the two states were "
             "not saved together. For the HF Trainer, also the LR the schedule configured in "
             "training_args.bin gives at the scheduler's step."),
    CheckDoc("CKPT014", "optimizer-shape-mismatch", "optimizer_model_mismatch",
             "The optimizer moments do not match the model's parameter shapes",
             "The exp_avg tensors' shapes (count and numel) do not match the weights': the "
             "optimizer state belongs to another model, or the weights were re-sharded. "
             "load_state_dict will fail or, worse, pair moments with the wrong parameters."),
    CheckDoc("CKPT015", "global-step-mismatch", "step_mismatch",
             "trainer_state's global_step disagrees with the folder's step",
             "checkpoint-N/ holds a trainer_state.json whose global_step is not N: the folder "
             "was renamed, copied over, or written by two runs."),
    CheckDoc("CKPT016", "world-size-mismatch", "world_size_mismatch",
             "The world size disagrees across files (or with --world-size)",
             "The training args, the per-rank RNG / optimizer files and --world-size must "
             "agree: resuming with another world size leaves ranks without their RNG state "
             "(and ZeRO partitions without an owner)."),
    CheckDoc("CKPT020", "corrupt-file", "torn_checkpoint",
             "A checkpoint file is unreadable or damaged",
             "A zip directory that cannot be read, a storage missing or shorter than its "
             "tensors need, safetensors offsets outside the file, invalid JSON: loading it "
             "will fail or give garbage."),
    CheckDoc("CKPT021", "shard-missing", "torn_checkpoint",
             "A file the checkpoint's index names does not exist",
             "A sharded index (model.safetensors.index.json, pytorch_model.bin.index.json) or "
             "a DCP .metadata names a file that is absent or shorter than it needs to be."),
    CheckDoc("CKPT030", "unsafe-pickle", "unsafe_pickle",
             "A pickle in the checkpoint can run code when loaded",
             "The file references a dangerous global (os.system, subprocess, builtins.eval, "
             "...). autopsy never ran it; torch.load(weights_only=False) would. Do not resume "
             "from it; find where it came from."),
    CheckDoc("CKPT032", "unverifiable-pickle", "unsafe_pickle",
             "A pickle in the checkpoint names a global autopsy cannot vouch for",
             "The file references a global that is on neither the list of dangerous names nor "
             "the allowlist of what real checkpoints hold (torch's rebuilds, storages and "
             "dtypes, numpy's reconstruction, the standard value types, the classes of the "
             "training libraries): a standard-library function under a harmless name, a "
             "dotted attribute path, a class of your own. Loading it with torch.load("
             "weights_only=False) runs whatever it is; torch.load(weights_only=True) refuses "
             "it. autopsy never ran it. Resume only if you know what the name is and trust "
             "the file's origin."),
    CheckDoc("CKPT031", "nonfinite-state", "nonfinite_state",
             "Weights or optimizer moments hold NaN or Inf",
             "Found with --scan-values. A NaN in exp_avg_sq makes every update NaN, so every "
             "resume from this checkpoint diverges at once; resume from an older one."),
)}


def explain_check(code: str) -> str | None:
    """The ``autopsy explain`` text of a check code, or None if it is not one."""
    doc = CHECKS.get(code.strip().upper()) or next(
        (c for c in CHECKS.values() if c.name == code.strip()), None)
    if doc is None:
        return None
    return (f"{doc.code} {doc.name}: {doc.title}\n\nfamily: resume (autopsy ckpt check)\n"
            f"cause: {doc.cause}\n\n{doc.doc}\n")
