"""The recorder: a ring of the last steps, and a bundle on the first non-finite one.

Per step the recorder keeps (:class:`Entry`): the loss (a detached tensor, or the float the
loop already has), the gradient norm, total and per parameter group, at the checked steps,
the learning rate of each parameter group, the loss scale when a
``GradScaler`` is given, the step time, the batch ids and the shapes and dtypes of the batch's
tensors. Every ``check_every`` steps it norms the gradients (one ``torch._foreach_norm``, the
one cost that grows with the model), and on an accelerator reads the pending entries
together: one host synchronisation per ``check_every`` steps, nothing else per step. Values
already on the host (a CPU run, a loss passed as a float) are judged at every step. The
statistics of the batch's values (min, max, non-finite count) are computed for the bundle
only.

On the first entry whose loss or gradient norm is not finite, or an exception inside
:meth:`Recorder.guard`, the recorder writes ``<out_dir>/autopsy-capture/step_<N>/``:

* ``meta.json``: the step, the batch ids, the error, what the data checks found (non-finite
  inputs, labels out of range) and the probe's result;
* ``ring.json``: the last ``keep_steps`` entries;
* ``batch.pt``: the batch's tensors (CPU copies, ``torch.save``), up to ``max_batch_bytes``;
* ``rng.pt``: the RNG states (torch, CUDA, Python, NumPy) at the dump;
* ``data_position.pt``: the loader's ``state_dict()`` when it keeps one (``loader=``).

The **probe** runs the batch once more with a forward hook on every module (no optimizer
step; the gradients, the RNG states and the train/eval mode are restored after it): the first
module, in execution order, whose output is not finite is named with its type, dtype and the
statistics of its input and output; if every output is finite, the loss is backpropagated
and the module nearest the output whose parameters got a non-finite gradient is named. With
``check_every`` > 1 the optimizer may have applied the bad step's update before the check;
weights already non-finite are then reported instead of a module.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import random
import time
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import torch

#: Label keys of a dict batch, and the ignore index of PyTorch's losses.
LABEL_KEYS = ("labels", "label", "targets", "target", "y")
IGNORE_INDEX = -100
BUNDLE_DIR = "autopsy-capture"


class NonFiniteStep(RuntimeError):
    """Raised (``on_nan="stop"``) after the bundle of the first non-finite step is written."""

    def __init__(self, step: int, bundle: Path) -> None:
        super().__init__(f"step {step}: the loss or gradient is not finite; autopsy wrote "
                         f"{bundle} (autopsy analyze {bundle.parent.parent})")
        self.step = step
        self.bundle = bundle


@dataclass
class Entry:
    """One step of the ring (tensors until the entry is read)."""

    step: int
    loss: Any
    grad_norm: Any = None
    group_grad_norms: list[Any] = field(default_factory=list)  # per optimizer param group
    lr: list[float] = field(default_factory=list)
    loss_scale: Any = None
    step_time: float | None = None
    batch_ids: Any = None  # as given (a device tensor stays there until read)
    tensors: dict[str, dict[str, Any]] = field(default_factory=dict)

    def read(self) -> None:
        """Bring the kept tensors to the host (one synchronisation for the entry)."""
        if self.batch_ids is not None and not isinstance(self.batch_ids, list):
            self.batch_ids = _ids(self.batch_ids)
        self.loss = _scalar(self.loss)
        self.grad_norm = _scalar(self.grad_norm)
        self.group_grad_norms = [_scalar(g) for g in self.group_grad_norms]
        self.loss_scale = _scalar(self.loss_scale)
        for stats in self.tensors.values():
            for k in ("min", "max", "nonfinite"):
                if k in stats:
                    stats[k] = _scalar(stats[k])

    @property
    def finite(self) -> bool:
        """Whether the loss and the gradient norm (those known) are finite."""
        return all(v is None or math.isfinite(v) for v in (self.loss, self.grad_norm))

    def to_json(self) -> dict[str, Any]:
        """The entry as JSON-able values (after :meth:`read`)."""
        d = asdict(self)
        return {k: v for k, v in d.items() if v not in (None, [], {})}


def _scalar(value: Any) -> float | None:
    if value is None:
        return None
    if isinstance(value, torch.Tensor):
        value = value.detach().float().item() if value.numel() == 1 else float("nan")
    return float(value)


def named_tensors(batch: Any, prefix: str = "") -> Iterator[tuple[str, torch.Tensor]]:
    """The tensors of a batch (a tensor, a dict, a list or tuple, nested), with their keys."""
    if isinstance(batch, torch.Tensor):
        yield prefix or "input", batch
    elif isinstance(batch, dict) or hasattr(batch, "items"):
        for k, v in batch.items():
            yield from named_tensors(v, f"{prefix}.{k}" if prefix else str(k))
    elif isinstance(batch, (list, tuple)):
        for i, v in enumerate(batch):
            yield from named_tensors(v, f"{prefix}.{i}" if prefix else str(i))


def _stats(t: torch.Tensor) -> dict[str, Any]:
    """Shape, dtype and lazy min/max/non-finite count of one tensor (no sync)."""
    out: dict[str, Any] = {"shape": list(t.shape), "dtype": str(t.dtype).replace("torch.", "")}
    if t.numel() == 0 or t.dtype == torch.bool:
        return out
    with torch.no_grad():
        d = t.detach()
        if d.is_floating_point():
            fin = torch.isfinite(d)
            out["nonfinite"] = (~fin).sum()
            safe = torch.where(fin, d, torch.zeros((), dtype=d.dtype, device=d.device))
            out["min"], out["max"] = safe.min(), safe.max()
        elif not d.is_complex():
            out["min"], out["max"] = d.min(), d.max()
    return out


class Recorder:
    """Record the last steps of a training loop; save a bundle on the first bad one.

    Args:
        out_dir: where ``autopsy-capture/`` is written (the run's output folder).
        model: the model (its modules are probed, its gradients normed).
        optimizer: its learning rates are recorded (optional).
        keep_steps: how many steps the ring keeps.
        check_every: norm the gradients every this many steps, and on an accelerator read
            the pending steps then: one pass over the gradients and one host
            synchronisation per ``check_every`` steps (default 10). A loss already on the
            host (a CPU run, a float) is judged at every step. A step judged at once is
            probed on the weights that made it; one found at a later check has had the
            optimizer apply it (reported as such). 1: everything at every step.
        on_nan: ``"stop"`` raises :class:`NonFiniteStep` after the bundle, ``"continue"``
            returns.
        num_classes: the label range (``model.config.num_labels`` or ``vocab_size`` when not
            given), for the label check.
        forward: how to run the model on a batch for the probe (default: ``model(**batch)``
            for a dict, ``model(batch[0])`` for a list or tuple, ``model(batch)``).
        loss_fn: ``loss_fn(output, batch)`` for the probe's backward (default: the output's
            ``.loss``, or the output itself when it is a scalar).
        scaler: a ``torch.amp.GradScaler`` whose scale is recorded.
        max_batch_bytes: the largest batch saved in the bundle.
        hang_timeout_s: when set, ``faulthandler`` dumps every thread's stack into the
            capture folder if a step takes longer than this (re-armed at each step).
        check_grads: judge the gradient norm too (False under fp16 loss scaling, where a
            non-finite gradient is the scaler's business: the step is skipped).
        loader: the training DataLoader, for the data position in the bundle: its
            ``state_dict()`` where it has one (torchdata's ``StatefulDataLoader``) goes to
            ``data_position.pt``; a sampler's ``epoch`` (``DistributedSampler``) to
            ``meta.json``.
    """

    def __init__(self, out_dir: str | os.PathLike[str], model: torch.nn.Module,
                 optimizer: torch.optim.Optimizer | None = None, *, keep_steps: int = 64,
                 check_every: int = 10, on_nan: str = "stop", num_classes: int | None = None,
                 forward: Callable[[Any], Any] | None = None,
                 loss_fn: Callable[[Any, Any], Any] | None = None, scaler: Any = None,
                 max_batch_bytes: int = 64 << 20, hang_timeout_s: float | None = None,
                 check_grads: bool = True, loader: Any = None) -> None:
        if on_nan not in ("stop", "continue"):
            raise ValueError("on_nan must be 'stop' or 'continue'")
        self.root = Path(out_dir) / BUNDLE_DIR
        self.model, self.optimizer, self.scaler = model, optimizer, scaler
        self.ring: deque[Entry] = deque(maxlen=max(1, keep_steps))
        self.pending: list[Entry] = []
        self.check_every = max(1, check_every)
        self.on_nan = on_nan
        self.num_classes = num_classes if num_classes is not None else _num_classes(model)
        self.forward, self.loss_fn = forward, loss_fn
        self.max_batch_bytes = max_batch_bytes
        self.check_grads = check_grads
        self.loader = loader
        self._batches: dict[int, Any] = {}  # the batches of the pending steps
        self._since_norm = 0
        self.rank = int(os.environ.get("RANK", "0") or 0)
        self.steps = 0
        self.bundles: list[Path] = []
        self._last = time.perf_counter()
        self._hang = hang_timeout_s
        self._stack_file: Any = None
        if hang_timeout_s:
            self._arm()

    # ----------------------------------------------------------------- per step
    def step(self, loss: Any, *, batch: Any = None, batch_ids: Any = None,
             step: int | None = None) -> Path | None:
        """Record one step (after ``backward()``, before ``optimizer.step()``); returns the
        bundle's folder when this step wrote one."""
        entry = self._entry(loss, batch, batch_ids, step)
        self.ring.append(entry)
        self.pending.append(entry)
        self._batches[entry.step] = batch  # until the entry is checked (then released)
        if not self._due(loss, len(self.pending)):
            return None
        return self.check()

    def _due(self, loss: Any, pending: int) -> bool:
        """Whether the steps are read now: every ``check_every`` steps on an accelerator,
        every step when the values are on the host already (no synchronisation to save)."""
        if pending >= self.check_every:
            return True
        if isinstance(loss, torch.Tensor):
            return loss.device.type == "cpu"
        if loss is not None:
            return True  # a Python number: already on the host
        first = next(iter(self.model.parameters()), None)
        return first is None or first.device.type == "cpu"

    def check(self) -> Path | None:
        """Read the pending steps now; dump the first non-finite one."""
        pending, self.pending = self.pending, []
        batches, self._batches = self._batches, {}
        for e in pending:
            e.read()
        bad = next((e for e in pending if not e.finite), None)
        if bad is None or self.bundles:
            return None
        batch = batches.get(bad.step)
        bundle = self._dump(bad, batch, error=None)
        if self.on_nan == "stop":
            raise NonFiniteStep(bad.step, bundle)
        return bundle

    @contextlib.contextmanager
    def guard(self, batch: Any = None, *, batch_ids: Any = None) -> Iterator[None]:
        """Around one step: an exception raised inside writes the bundle (with the error and
        the data checks), then propagates."""
        try:
            yield
        except NonFiniteStep:
            raise
        except Exception as exc:
            entry = Entry(step=self.steps, loss=None, batch_ids=_ids(batch_ids),
                          tensors={k: _stats(t) for k, t in named_tensors(batch)})
            entry.read()
            self.ring.append(entry)
            if not self.bundles:
                self._dump(entry, batch, error=f"{type(exc).__name__}: {exc}")
            raise

    def __enter__(self) -> Recorder:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Read what is pending and disarm the hang watchdog (``with Recorder(...) as rec:``
        does it at the end of the block)."""
        if self.pending:
            with contextlib.suppress(NonFiniteStep):
                self.check()
        if self._hang:
            import faulthandler

            faulthandler.cancel_dump_traceback_later()
        if self._stack_file is not None:
            self._stack_file.close()
            self._stack_file = None

    # ----------------------------------------------------------------- internals
    def _entry(self, loss: Any, batch: Any, batch_ids: Any, step: int | None) -> Entry:
        now = time.perf_counter()
        n = step if step is not None else self.steps
        self.steps = n + 1
        lr = [float(g.get("lr", float("nan"))) for g in self.optimizer.param_groups] \
            if self.optimizer is not None else []
        scale = self.scaler.get_scale() if self.scaler is not None and hasattr(
            self.scaler, "get_scale") else None
        loss_kept = loss.detach() if isinstance(loss, torch.Tensor) else loss  # None: grads only
        # the batch's shapes per step; its values' statistics only in a bundle
        # the gradient norm (a pass over every gradient) every ``check_every`` steps, or at
        # every step when the loss is not given (a callback that only sees the gradients)
        self._since_norm += 1
        norm = self.check_grads and (loss is None or self._since_norm >= self.check_every)
        if norm:
            self._since_norm = 0
        total, groups = _grad_norms(self.model, self.optimizer) if norm else (None, [])
        entry = Entry(step=n, loss=loss_kept, grad_norm=total, group_grad_norms=groups, lr=lr,
                      loss_scale=scale, step_time=now - self._last,
                      batch_ids=batch_ids.detach() if isinstance(batch_ids, torch.Tensor)
                      else batch_ids,
                      tensors={k: {"shape": list(t.shape),
                                   "dtype": str(t.dtype).replace("torch.", "")}
                               for k, t in named_tensors(batch)})
        self._last = now
        if self._hang:
            self._arm()
        return entry

    def _arm(self) -> None:
        import faulthandler
        import signal

        if self._stack_file is None:
            self.root.mkdir(parents=True, exist_ok=True)
            self._stack_file = open(self.root / f"stacks_rank{self.rank}.log", "a")
            if hasattr(signal, "SIGUSR1"):  # kill -USR1 <pid>: every thread's stack, now
                with contextlib.suppress(ValueError, RuntimeError):  # (not the main thread)
                    faulthandler.register(signal.SIGUSR1, file=self._stack_file,
                                          all_threads=True, chain=False)
        faulthandler.dump_traceback_later(float(self._hang or 0), repeat=True,
                                          file=self._stack_file)

    def _folder(self, step: int) -> Path:
        name = f"step_{step}" if self.rank == 0 else f"step_{step}_rank{self.rank}"
        return self.root / name

    def _dump(self, entry: Entry, batch: Any, error: str | None) -> Path:
        folder = self._folder(entry.step)
        folder.mkdir(parents=True, exist_ok=True)
        if batch is not None:
            entry.tensors = {k: _stats(t) for k, t in named_tensors(batch)}
            entry.read()
        meta: dict[str, Any] = {"step": entry.step, "rank": self.rank,
                                "world_size": int(os.environ.get("WORLD_SIZE", "1") or 1),
                                "batch_ids": entry.batch_ids,
                                "loss": entry.loss, "grad_norm": entry.grad_norm,
                                "error": error, "torch": torch.__version__,
                                "data": data_checks(batch, self.num_classes)}
        _save_rng(folder / "rng.pt")
        meta["data_position"] = _save_position(self.loader, folder / "data_position.pt")
        meta["batch_saved"] = _save_batch(batch, folder / "batch.pt", self.max_batch_bytes)
        if batch is not None and error is None:
            try:
                meta["probe"] = probe(self.model, batch, self.forward, self.loss_fn)
            except Exception as exc:  # the probe must never break the training run
                meta["probe"] = {"error": f"{type(exc).__name__}: {exc}"}
        (folder / "ring.json").write_text(json.dumps(
            [e.to_json() for e in self.ring], default=_json_default, indent=1))
        (folder / "meta.json").write_text(json.dumps(meta, default=_json_default, indent=1))
        self.bundles.append(folder)
        return folder


def _json_default(value: Any) -> Any:
    if isinstance(value, torch.Tensor):
        return value.tolist() if value.numel() <= 64 else f"tensor{list(value.shape)}"
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    return str(value)


def _ids(batch_ids: Any) -> list[Any] | None:
    if batch_ids is None:
        return None
    if isinstance(batch_ids, torch.Tensor):
        return batch_ids.detach().cpu().reshape(-1).tolist()
    return list(batch_ids) if isinstance(batch_ids, (list, tuple, range)) else [batch_ids]


def _num_classes(model: torch.nn.Module) -> int | None:
    config = getattr(model, "config", None)
    for key in ("num_labels", "vocab_size"):
        value = getattr(config, key, None)
        if isinstance(value, int) and value > 0:
            return value
    return None


def _grad_norms(model: torch.nn.Module, optimizer: Any) -> tuple[Any, list[Any]]:
    """The total gradient norm and one per optimizer parameter group (device tensors; one
    ``torch._foreach_norm`` over every gradient)."""
    params = [p for p in model.parameters() if p.grad is not None]
    if not params:
        return None, []
    with torch.no_grad():
        norms = torch._foreach_norm([p.grad for p in params])
        of = {id(p): n.float() for p, n in zip(params, norms, strict=True)}
        total = torch.linalg.vector_norm(torch.stack(list(of.values())))
        groups = []
        for group in getattr(optimizer, "param_groups", None) or []:
            mine = [of[id(p)] for p in group.get("params", []) if id(p) in of]
            groups.append(torch.linalg.vector_norm(torch.stack(mine)) if mine else None)
    return total, groups


def data_checks(batch: Any, num_classes: int | None) -> dict[str, Any]:
    """Non-finite values in the inputs (which tensors, which rows) and labels out of range."""
    out: dict[str, Any] = {"nonfinite_inputs": {}, "labels_out_of_range": {}}
    if batch is None:
        return out
    tensors = dict(named_tensors(batch))
    for name, t in tensors.items():
        if t.is_floating_point() and t.numel():
            bad = ~torch.isfinite(t.detach())
            if bool(bad.any()):
                rows = bad.reshape(bad.shape[0], -1).any(dim=1).nonzero().reshape(-1) \
                    if bad.dim() else torch.zeros(1, dtype=torch.long)
                out["nonfinite_inputs"][name] = {"count": int(bad.sum()),
                                                 "rows": rows[:32].tolist()}
    labels = [(k, t) for k, t in tensors.items()
              if k.split(".")[-1] in LABEL_KEYS and not t.is_floating_point()]
    if not labels and isinstance(batch, (list, tuple)) and len(batch) >= 2 and isinstance(
            batch[-1], torch.Tensor) and not batch[-1].is_floating_point():
        labels = [(str(len(batch) - 1), batch[-1])]
    for name, t in labels:
        d = t.detach()
        bad = (d < 0) & (d != IGNORE_INDEX)
        if num_classes is not None:
            bad |= d >= num_classes
        if bool(bad.any()):
            rows = bad.reshape(bad.shape[0], -1).any(dim=1).nonzero().reshape(-1) \
                if bad.dim() else torch.zeros(1, dtype=torch.long)
            out["labels_out_of_range"][name] = {
                "values": sorted({int(v) for v in d[bad].reshape(-1)[:32].tolist()}),
                "rows": rows[:32].tolist(), "num_classes": num_classes}
    out["bad"] = bool(out["nonfinite_inputs"] or out["labels_out_of_range"])
    return out


def _save_rng(path: Path) -> None:
    import pickle

    state: dict[str, Any] = {"torch": torch.get_rng_state(), "python": random.getstate()}
    if torch.cuda.is_available():
        state["cuda"] = torch.cuda.get_rng_state_all()
    with contextlib.suppress(ImportError):
        import numpy as np

        state["numpy"] = np.random.get_state()
    torch.save(state, path, pickle_protocol=pickle.HIGHEST_PROTOCOL)


def _save_position(loader: Any, path: Path) -> dict[str, Any] | None:
    """Where the data stood: the loader's own state when it keeps one, else the sampler's
    epoch (None: nothing known)."""
    if loader is None:
        return None
    state_dict = getattr(loader, "state_dict", None)
    if callable(state_dict):
        try:
            torch.save(state_dict(), path)
            return {"saved": path.name, "from": type(loader).__name__}
        except Exception as exc:  # a loader that cannot say: recorded, never fatal
            return {"error": f"{type(exc).__name__}: {exc}"}
    sampler = getattr(loader, "sampler", None)
    epoch = getattr(sampler, "epoch", None)
    return {"epoch": epoch, "from": type(sampler).__name__} if isinstance(epoch, int) else None


def _save_batch(batch: Any, path: Path, cap: int) -> bool:
    tensors = dict(named_tensors(batch)) if batch is not None else {}
    size = sum(t.numel() * t.element_size() for t in tensors.values())
    if not tensors or size > cap:
        return False
    torch.save({k: t.detach().cpu() for k, t in tensors.items()}, path)
    return True


def _tensor_stats(value: Any) -> dict[str, Any] | None:
    ts = [t for _, t in named_tensors(value)] if not isinstance(value, torch.Tensor) else [value]
    ts = [t for t in ts if t.is_floating_point() and t.numel()]
    if not ts:
        return None
    t = ts[0].detach().float()
    fin = torch.isfinite(t)
    safe = t[fin]
    rows = (~fin).reshape(fin.shape[0], -1).any(dim=1).nonzero().reshape(-1)[:32].tolist() \
        if fin.dim() else []
    return {"shape": list(ts[0].shape), "dtype": str(ts[0].dtype).replace("torch.", ""),
            "nonfinite": int((~fin).sum()), "nonfinite_rows": rows,
            "min": float(safe.min()) if safe.numel() else None,
            "max": float(safe.max()) if safe.numel() else None,
            "absmax": float(safe.abs().max()) if safe.numel() else None}


def _nonfinite(value: Any) -> bool:
    return any(t.is_floating_point() and t.numel() and not bool(torch.isfinite(t).all())
               for t in ([value] if isinstance(value, torch.Tensor) else
                         [t for _, t in named_tensors(value)]))


def _run_forward(model: torch.nn.Module, batch: Any, forward: Callable[[Any], Any] | None) -> Any:
    if forward is not None:
        return forward(batch)
    if isinstance(batch, dict) or hasattr(batch, "items"):
        return model(**batch)
    if isinstance(batch, (list, tuple)):
        return model(batch[0])
    return model(batch)


def _loss_of(output: Any, batch: Any, loss_fn: Callable[[Any, Any], Any] | None) -> Any:
    if loss_fn is not None:
        return loss_fn(output, batch)
    loss = getattr(output, "loss", None)
    if loss is None and isinstance(output, dict):
        loss = output.get("loss")
    if loss is None and isinstance(output, torch.Tensor) and output.numel() == 1:
        loss = output
    return loss


def probe(model: torch.nn.Module, batch: Any, forward: Callable[[Any], Any] | None = None,
          loss_fn: Callable[[Any, Any], Any] | None = None) -> dict[str, Any]:
    """Run ``batch`` once more with hooks: the first module whose output is not finite, else
    (after backward) the module nearest the output with non-finite parameter gradients. The
    gradients, RNG states and the model's mode are as before when it returns."""
    order: list[tuple[str, torch.nn.Module]] = []
    found: dict[str, Any] = {}
    with torch.no_grad():
        spoiled = [n for n, p in model.named_parameters() if not bool(torch.isfinite(p).all())]
    if spoiled:  # the update of the bad step was applied before the check (check_every > 1)
        return {"module": None, "weights_nonfinite": spoiled[:16],
                "error": "the weights were already non-finite when the batch was re-run (the "
                         "bad step's update was applied before the check): check every step "
                         "to find the module"}

    def hook(name: str) -> Callable[..., None]:
        def run(module: torch.nn.Module, inputs: Any, output: Any) -> None:
            order.append((name, module))
            if "forward" not in found and _nonfinite(output):
                found["forward"] = {
                    "module": name, "type": type(module).__name__,
                    "input_nonfinite": _nonfinite(inputs), "input": _tensor_stats(inputs),
                    "output": _tensor_stats(output)}
        return run

    saved = {p: (p.grad.detach().clone() if p.grad is not None else None)
             for p in model.parameters()}
    rng = torch.get_rng_state()
    cuda_rng = torch.cuda.get_rng_state_all() if torch.cuda.is_available() else None
    handles = [m.register_forward_hook(hook(n or "<model>")) for n, m in model.named_modules()]
    result: dict[str, Any] = {}
    try:
        with torch.enable_grad():
            output = _run_forward(model, batch, forward)
            loss = _loss_of(output, batch, loss_fn)
            result["loss"] = _scalar(loss) if isinstance(loss, torch.Tensor) else None
            if "forward" in found:
                result.update(found["forward"], where="forward")
            elif isinstance(loss, torch.Tensor) and loss.requires_grad:
                for p in model.parameters():
                    p.grad = None
                loss.backward()
                seen: set[int] = set()
                for name, module in reversed(order):  # backward runs from the output
                    if id(module) in seen:
                        continue
                    seen.add(id(module))
                    bad = [p.grad for p in module.parameters(recurse=False)
                           if p.grad is not None and not bool(torch.isfinite(p.grad).all())]
                    if bad:
                        result.update(module=name, type=type(module).__name__,
                                      where="backward", grad=_tensor_stats(bad[0]))
                        break
    finally:
        for h in handles:
            h.remove()
        for p, g in saved.items():
            p.grad = g
        torch.set_rng_state(rng)
        if cuda_rng is not None:
            torch.cuda.set_rng_state_all(cuda_rng)
    if "module" not in result:
        result["module"] = None
    return result


def enable_flight_recorder(out_dir: str | os.PathLike[str], buffer_size: int = 2000) -> Path:
    """Turn on PyTorch's Flight Recorder with its dumps in ``<out_dir>/autopsy-capture/``
    (``nccl_trace_rank_<N>``, where ``autopsy ranks`` reads them). Call it before
    ``init_process_group``: torch reads the environment when the group is made. Values the
    environment already has are kept. Returns the dump prefix's folder."""
    folder = Path(out_dir) / BUNDLE_DIR
    folder.mkdir(parents=True, exist_ok=True)
    os.environ.setdefault("TORCH_FR_BUFFER_SIZE", str(buffer_size))
    os.environ.setdefault("TORCH_NCCL_TRACE_BUFFER_SIZE", str(buffer_size))  # torch < 2.5
    os.environ.setdefault("TORCH_NCCL_DUMP_ON_TIMEOUT", "1")
    os.environ.setdefault("TORCH_FR_DUMP_TEMP_FILE", str(folder / "nccl_trace_rank_"))
    os.environ.setdefault("TORCH_NCCL_DEBUG_INFO_TEMP_FILE", str(folder / "nccl_trace_rank_"))
    return folder
