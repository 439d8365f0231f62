"""Consistency: step counters (CKPT011, CKPT012, CKPT015), the scheduler's LR against the
optimizer's (CKPT013), the optimizer's coverage (CKPT010) and shapes (CKPT014)."""

from __future__ import annotations

from collections import Counter
from typing import Any

from autopsy.ckpt.checks.judge import Judge
from autopsy.ckpt.components import Part, Status
from autopsy.ckpt.files import is_tensor, numel, scalar_value
from autopsy.ckpt.layouts import Layout
from autopsy.ckpt.statedicts import int_value, walk_tensors
from autopsy.model.finding import Evidence

#: How many per-parameter ``step`` tensors are read (a few bytes each).
MAX_STEP_READS = 64
#: Relative tolerance of the LR comparison.
LR_RTOL = 1e-6
_MOMENTS = ("exp_avg", "exp_avg_sq")


def global_step(judge: Judge) -> tuple[int | None, str]:
    """The checkpoint's global step and where it came from (trainer state, dict, name)."""
    parts = judge.parts
    if parts.global_steps:
        src, n = parts.global_steps[0]
        return n, src
    if parts.name_step is not None and parts.layout in (Layout.HF_TRAINER, Layout.DEEPSPEED):
        return parts.name_step, "the folder name"
    return None, ""


def check(judge: Judge, world_size: int | None = None) -> None:
    """Run every consistency check that the components present allow.

    ``world_size`` is the one the checkpoint was saved with: accelerate's
    ``AcceleratedScheduler`` steps the scheduler once per process per optimizer step
    (unless ``split_batches``), so ``last_epoch`` may be the step count times it.
    """
    parts = judge.parts
    gs, gs_src = global_step(judge)
    if parts.layout in (Layout.HF_TRAINER, Layout.DEEPSPEED) and parts.name_step is not None:
        for src, n in parts.global_steps:
            if n != parts.name_step:
                what = f"{src} is {n}, but the folder is {parts.root.name}"
                judge.mark(Part.TRAINER_STATE, Status.INCONSISTENT, what)
                judge.fail("CKPT015", what,
                           evidence=[Evidence(what, source=src.split(" ")[0],
                                              numbers={"global_step": n,
                                                       "folder_step": parts.name_step})],
                           advice=["check which run wrote this folder before resuming"])
    opt = parts.slot(Part.OPTIMIZER)
    optimizer = opt.value if opt.present and isinstance(opt.value, dict) else None
    sched = parts.slot(Part.SCHEDULER)
    scheduler = sched.value if sched.present and isinstance(sched.value, dict) else None
    opt_step = None
    if optimizer is not None and not parts.flat_optimizer:
        opt_step = _optimizer(judge, optimizer, gs, gs_src)
    if scheduler is not None:
        _scheduler(judge, scheduler, gs, gs_src, opt_step, world_size)
        if optimizer is not None:
            _lr(judge, scheduler, optimizer)
    _shapes(judge, optimizer)


def _accepts(count: int, gs: int, accum: int | None, fp16: bool | None,
             others: tuple[int | None, ...] = ()) -> bool:
    if count == gs or count in others:
        return True
    a = accum or 1
    if a > 1 and (count * a == gs or count == gs * a):
        return True
    return bool(fp16) and count <= gs


def _keeps_state(groups: list[Any]) -> bool:
    """Whether the optimizer keeps per-parameter state once it has stepped.

    Adam-like (``betas``), RMSprop (``alpha``), Adagrad (``initial_accumulator_value``) and
    SGD with momentum do; plain SGD (``momentum`` 0) keeps none.
    """
    for g in groups:
        if not isinstance(g, dict):
            continue
        if any(k in g for k in ("betas", "alpha", "initial_accumulator_value")):
            return True
        momentum = g.get("momentum")
        if isinstance(momentum, (int, float)) and momentum:
            return True
    return False


def _optimizer(judge: Judge, optimizer: dict[str, Any], gs: int | None,
               gs_src: str) -> int | None:
    parts = judge.parts
    state = optimizer.get("state")
    groups = optimizer.get("param_groups")
    if not isinstance(state, dict) or not isinstance(groups, list):
        judge.mark(Part.OPTIMIZER, Status.CORRUPT, "no 'state' dict or 'param_groups' list")
        judge.fail("CKPT010", "the optimizer state has no 'state' dict or 'param_groups' list",
                   advice=["re-save the optimizer with optimizer.state_dict()"])
        return None
    params = [p for g in groups if isinstance(g, dict)
              and isinstance(g.get("params"), (list, tuple))
              for p in g["params"] if isinstance(p, (int, str))]
    with_state = [p for p in params if p in state]
    judge.note(Part.OPTIMIZER, f"{len(groups)} param group(s), {len(params)} parameter(s), "
                               f"{len(with_state)} with state")
    if params and not with_state and (gs or 0) > 0 and _keeps_state(groups):
        what = (f"none of the {len(params)} parameters has optimizer state, though "
                f"{gs_src} is {gs}")
        judge.mark(Part.OPTIMIZER, Status.INCONSISTENT, what)
        judge.fail("CKPT010", what, advice=["save the optimizer after it has stepped"])
        return None
    entries = [state[p] for p in with_state if isinstance(state[p], dict)]
    adam = [e for e in entries if any(k in e for k in _MOMENTS)]
    if adam:
        incomplete = [p for p in with_state if isinstance(state[p], dict)
                      and not all(k in state[p] for k in (*_MOMENTS, "step"))]
        if incomplete:
            what = (f"{len(incomplete)} parameter(s) lack exp_avg / exp_avg_sq / step "
                    f"(first: {incomplete[0]})")
            judge.mark(Part.OPTIMIZER, Status.INCONSISTENT, what)
            judge.fail("CKPT010", what,
                       evidence=[Evidence(what, key=f"state.{incomplete[0]}")],
                       advice=["re-save the optimizer; these parameters restart their moments"])
    steps: Counter[int] = Counter()
    for e in entries[:MAX_STEP_READS]:
        value = scalar_value(e.get("step"))
        if value is not None and float(value).is_integer():
            steps[int(value)] += 1
    if not steps:
        return None
    opt_step = max(steps)
    judge.optimizer_step = opt_step
    judge.note(Part.OPTIMIZER, f"Adam step count {opt_step}"
               + (f" (other values: {sorted(steps)[:-1]})" if len(steps) > 1 else ""))
    if gs is not None and not _accepts(opt_step, gs, parts.grad_accum, parts.fp16):
        what = (f"the optimizer's step count is {opt_step}, but {gs_src} is {gs}"
                + (f" (gradient accumulation {parts.grad_accum})"
                   if (parts.grad_accum or 1) > 1 else ""))
        judge.mark(Part.OPTIMIZER, Status.INCONSISTENT, what)
        judge.fail("CKPT011", what,
                   evidence=[Evidence(what, key="state.*.step",
                                      numbers={"optimizer_step": opt_step, "global_step": gs})],
                   advice=["the optimizer state comes from another save: resume from a "
                           "checkpoint whose files were written together"])
    return opt_step


def _scheduler(judge: Judge, scheduler: dict[str, Any], gs: int | None, gs_src: str,
               opt_step: int | None, world_size: int | None = None) -> None:
    parts = judge.parts
    last = int_value(scheduler.get("last_epoch"))
    count = int_value(scheduler.get("_step_count"))
    if last is not None:
        judge.note(Part.SCHEDULER, f"last_epoch {last}"
                   + (f", _step_count {count}" if count is not None else ""))
    if last is None:
        return
    if count is not None and count != last + 1:
        what = f"_step_count {count} is not last_epoch {last} + 1"
        judge.mark(Part.SCHEDULER, Status.INCONSISTENT, what)
        judge.fail("CKPT012", f"the scheduler's own counters disagree: {what}",
                   evidence=[Evidence(what, numbers={"last_epoch": last, "_step_count": count})],
                   advice=["the scheduler state was edited or is damaged; re-save it"])
    ref, ref_src = (gs, gs_src) if gs is not None else (opt_step, "the optimizer's step count")
    if ref is None:
        return
    others: tuple[int | None, ...] = (opt_step,)
    if parts.layout is Layout.ACCELERATE and world_size and world_size > 1:
        others += (ref * world_size, opt_step * world_size if opt_step is not None else None)
    if not _accepts(last, ref, parts.grad_accum, parts.fp16, others):
        what = f"the scheduler's last_epoch is {last}, but {ref_src} is {ref}"
        judge.mark(Part.SCHEDULER, Status.INCONSISTENT, what)
        judge.fail("CKPT012", what + ": after the resume the LR is that of another step",
                   evidence=[Evidence(what, numbers={"last_epoch": last, "global_step": ref})],
                   advice=["save the scheduler together with the optimizer at the same step"])


def _close(a: float, b: float) -> bool:
    return abs(a - b) <= LR_RTOL * max(abs(a), abs(b), 1e-12)


def _lr(judge: Judge, scheduler: dict[str, Any], optimizer: dict[str, Any]) -> None:
    groups = [g for g in (optimizer.get("param_groups") or []) if isinstance(g, dict)]
    group_lrs = [g.get("lr") for g in groups]
    last_lr = scheduler.get("_last_lr")
    base = scheduler.get("base_lrs")
    problems: list[str] = []
    if isinstance(base, list) and base and len(base) != len(groups):
        problems.append(f"the scheduler has {len(base)} base_lrs, the optimizer "
                        f"{len(groups)} param group(s)")
    if isinstance(last_lr, list) and last_lr and not problems:
        for i, (s, o) in enumerate(zip(last_lr, group_lrs, strict=False)):
            sv, ov = scalar_value(s), scalar_value(o)
            if sv is not None and ov is not None and not _close(sv, ov):
                problems.append(f"param group {i}: the scheduler's last LR is {sv:.6g}, the "
                                f"optimizer's lr {ov:.6g}")
    if isinstance(base, list) and len(base) == len(groups) and not problems:
        for i, (b, g) in enumerate(zip(base, groups, strict=True)):
            bv, iv = scalar_value(b), scalar_value(g.get("initial_lr"))
            if bv is not None and iv is not None and not _close(bv, iv):
                problems.append(f"param group {i}: the scheduler's base LR is {bv:.6g}, the "
                                f"optimizer's initial_lr {iv:.6g}")
    if not problems:
        problems += _configured_lr(judge, scheduler, groups)
    if problems:
        judge.mark(Part.SCHEDULER, Status.INCONSISTENT, problems[0])
        judge.fail("CKPT013", "; ".join(problems[:3]),
                   evidence=[Evidence(p) for p in problems[:8]],
                   advice=["save the scheduler and the optimizer from the same run and step"])
    elif isinstance(last_lr, list) and last_lr:
        judge.note(Part.SCHEDULER, "its last LR matches the optimizer's param_group lr")


def _shapes(judge: Judge, optimizer: dict[str, Any] | None) -> None:
    parts = judge.parts
    if parts.flat_optimizer:
        judge.note(Part.OPTIMIZER, "sharded optimizer (ZeRO / FSDP): per-parameter shapes not "
                                   "compared")
        return
    moments = list(parts.moment_tensors)
    if optimizer is not None and not moments:
        moments = [(k, v) for k, v in walk_tensors(optimizer.get("state"), "state")
                   if k.rsplit(".", 1)[-1] == "exp_avg"]
    else:
        moments = [(k, v) for k, v in moments if k.rsplit(".", 1)[-1] == "exp_avg"]
    weights = [(k, v) for k, v in parts.weight_tensors
               if is_tensor(v) and getattr(v, "is_floating", True)
               and str(getattr(v, "dtype", "float32")).startswith(("float", "bfloat"))]
    if not moments or not weights:
        return
    available = Counter(tuple(v.shape) for _, v in weights)
    unmatched = []
    for key, v in moments:
        shape = tuple(v.shape)
        if available[shape] > 0:
            available[shape] -= 1
        else:
            unmatched.append((key, shape))
    total_w = sum(numel(v) for _, v in weights)
    total_m = sum(numel(v) for _, v in moments)
    if not unmatched:
        judge.note(Part.OPTIMIZER, f"{len(moments)} exp_avg tensor(s) match the shapes of "
                                   f"the weights ({total_m:,} of {total_w:,} elements)")
        return
    key, shape = unmatched[0]
    what = (f"{len(unmatched)} of {len(moments)} exp_avg tensors have no weight of the same "
            f"shape (first: {key} {list(shape)}); exp_avg holds {total_m:,} elements, the "
            f"weights {total_w:,}")
    judge.mark(Part.OPTIMIZER, Status.INCONSISTENT, what)
    judge.fail("CKPT014", what,
               evidence=[Evidence(f"{k}: shape {list(s)} matches no weight", key=k)
                         for k, s in unmatched[:8]],
               advice=["the optimizer state belongs to another model (or another sharding): "
                       "resume from a checkpoint whose weights and optimizer were saved together"])


def _configured_lr(judge: Judge, scheduler: dict[str, Any], groups: list[dict[str, Any]]
                   ) -> list[str]:
    """HF Trainer: the LR the configured schedule gives at ``last_epoch`` vs the saved ones."""
    parts = judge.parts
    if parts.layout is not Layout.HF_TRAINER:
        return []
    args = parts.slot(Part.TRAINING_ARGS).value
    state = parts.slot(Part.TRAINER_STATE).value
    last = int_value(scheduler.get("last_epoch"))
    if not isinstance(args, dict) or not isinstance(state, dict) or last is None:
        return []
    from autopsy.ckpt.checks.schedule import expected_lr

    found = expected_lr(args, state, last)
    if found is None or not groups:
        return []
    lr, how = found
    saved = scalar_value(groups[0].get("lr"))
    initial = scalar_value(groups[0].get("initial_lr"))
    if saved is None or (initial is not None and not _close(initial, float(args["learning_rate"]))):
        return []  # param groups with their own base LR: not the plain configured schedule
    if _close(lr, saved) or abs(lr - saved) <= 1e-12:
        judge.note(Part.SCHEDULER, f"the LR matches training_args.bin's schedule ({how})")
        return []
    return [f"training_args.bin's schedule gives LR {lr:.6g} at step {last} ({how}); the "
            f"optimizer's param group 0 has {saved:.6g}"]
