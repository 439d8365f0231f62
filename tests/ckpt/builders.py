"""Real checkpoints for the checkpoint tests, made with tiny models by the real writers.

Every builder writes into a folder it is given and returns a :class:`Built` record saying
what it made: the path to audit, the layout, the global step, the world size, the files, and
(for a defect) which component it broke. Nothing is downloaded: the models are a one-layer
GPT-2 built from a config and a small MLP.

Writers used for real: the Hugging Face ``Trainer`` (``checkpoint-N/``), ``save_pretrained``
with ``max_shard_size`` (sharded weights and their index), accelerate's
``Accelerator.save_state``, ``torch.save``, ``safetensors.torch.save_file``,
``torch.distributed.checkpoint.save`` and torchdata's ``StatefulDataLoader.state_dict()``.
Packages that do not install here (peft, DeepSpeed, Lightning) are replaced by files built
with ``torch.save`` / ``save_file`` from their documented layouts (each builder says which).

The defects (:func:`remove`, :func:`truncate`, :func:`nan_moments`, :func:`hostile_pickle`,
...) are applied to a good checkpoint in place; copy it first (:func:`copy_built`) to keep the
original. Hostile pickles are written by splicing pickle opcodes into a real file; they are
checked with :mod:`pickletools` and never loaded.
"""

from __future__ import annotations

import dataclasses
import io
import json
import math
import os
import random
import shutil
import sys
import types
import zipfile
from collections import OrderedDict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

VOCAB = 32
SEQ_LEN = 16
FEATURES = 8
CLASSES = 3


@dataclass(frozen=True)
class Built:
    """What a builder made.

    ``path`` is what an audit is pointed at (a checkpoint folder or file); ``run_dir`` the
    output/run directory holding it, when there is one. ``broken`` names the component a
    defect broke (``weights``, ``optimizer``, ``scheduler``, ``grad_scaler``, ``rng``,
    ``data_position``, ``trainer_state``, ``training_args``), ``defect`` what was done, and
    ``detail`` the facts a test may check (tensor key, flat index, missing rank, global...).
    """

    path: Path
    layout: str
    global_step: int | None
    world_size: int = 1
    files: tuple[str, ...] = ()
    run_dir: Path | None = None
    broken: str | None = None
    defect: str | None = None
    detail: dict[str, Any] = field(default_factory=dict, hash=False)

    def file(self, name: str) -> Path:
        """The path of one of the checkpoint's files (``path`` itself for a one-file layout)."""
        return self.path / name if self.path.is_dir() else self.path


def _listing(folder: Path) -> tuple[str, ...]:
    """Every file under ``folder``, relative, sorted."""
    return tuple(sorted(str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file()))


def _broken(built: Built, component: str, defect: str, **detail: Any) -> Built:
    """``built`` after a defect, its file list refreshed."""
    files = _listing(built.path) if built.path.is_dir() else built.files
    return dataclasses.replace(
        built, files=files, broken=component, defect=defect, detail={**built.detail, **detail}
    )


# --------------------------------------------------------------------------------------------
# Tiny models and data
# --------------------------------------------------------------------------------------------


def _seed(seed: int) -> None:
    """Seed python, numpy and torch; one thread."""
    import numpy as np
    import torch

    torch.set_num_threads(1)
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)


def tiny_gpt2(width: int = 32) -> Any:
    """``GPT2Config(n_layer=1, n_embd=width, n_head=2, vocab_size=32, n_positions=16)``."""
    from transformers import GPT2Config, GPT2LMHeadModel

    config = GPT2Config(
        vocab_size=VOCAB, n_positions=SEQ_LEN, n_embd=width, n_layer=1, n_head=2,
        n_inner=2 * width, resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0,
        bos_token_id=0, eos_token_id=0,
    )
    return GPT2LMHeadModel(config)


def progressions(n: int, seed: int) -> Any:
    """Next-token data: arithmetic progressions mod :data:`VOCAB` (``labels`` = inputs)."""
    import torch
    from torch.utils.data import Dataset

    class Progressions(Dataset):  # type: ignore[type-arg]
        """``{"input_ids", "labels"}`` rows."""

        def __init__(self) -> None:
            g = torch.Generator().manual_seed(seed)
            start = torch.randint(0, VOCAB, (n, 1), generator=g)
            step = torch.randint(1, 4, (n, 1), generator=g)
            self.ids = (start + step * torch.arange(SEQ_LEN)) % VOCAB

        def __len__(self) -> int:
            return len(self.ids)

        def __getitem__(self, i: int) -> dict[str, Any]:
            return {"input_ids": self.ids[i], "labels": self.ids[i]}

    return Progressions()


def tiny_mlp(width: int = 16) -> Any:
    """A two-layer MLP classifier, :data:`FEATURES` in, :data:`CLASSES` out."""
    import torch

    return torch.nn.Sequential(
        torch.nn.Linear(FEATURES, width), torch.nn.Tanh(), torch.nn.Linear(width, CLASSES)
    )


def _classes(n: int, seed: int) -> Any:
    """A learnable classification ``TensorDataset``."""
    import torch

    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, FEATURES, generator=g)
    y = (x @ torch.randn(FEATURES, CLASSES, generator=g)).argmax(1)
    return torch.utils.data.TensorDataset(x, y)


def _warmup_linear(optimizer: Any, warmup: int, total: int) -> Any:
    """``LambdaLR`` with linear warm-up then linear decay (what HF's linear schedule does)."""
    import torch

    def factor(step: int) -> float:
        if step < warmup:
            return (step + 1) / warmup
        return max(0.0, (total - step) / max(1, total - warmup))

    return torch.optim.lr_scheduler.LambdaLR(optimizer, factor)


def _rng_states() -> dict[str, Any]:
    """The process's RNG states, with the keys the HF Trainer uses."""
    import numpy as np
    import torch

    return {
        "python": random.getstate(),
        "numpy": np.random.get_state(),
        "cpu": torch.random.get_rng_state(),
    }


# --------------------------------------------------------------------------------------------
# HF Trainer
# --------------------------------------------------------------------------------------------


def hf_trainer_run(
    out: Path, *, max_steps: int = 4, save_steps: int = 2, width: int = 32, seed: int = 0,
    save_total_limit: int | None = None, callbacks: list[Any] | None = None,
    finish: bool = True, **args: Any,
) -> Built:
    """A real ``Trainer.train()`` into ``out``: AdamW, linear schedule with warm-up, clip 1.0.

    Saves ``checkpoint-{save_steps}``, ``checkpoint-{2*save_steps}``, ... (each with
    model.safetensors, optimizer.pt, scheduler.pt, rng_state.pth, trainer_state.json,
    training_args.bin); with ``finish`` also the root model and ``trainer_state.json``.
    Returns the newest checkpoint, ``run_dir`` = ``out``; ``detail["checkpoints"]`` lists
    every checkpoint folder name.
    """
    from transformers import Trainer, TrainingArguments

    _seed(seed)
    out.mkdir(parents=True, exist_ok=True)
    base: dict[str, Any] = {
        "output_dir": str(out), "seed": seed, "data_seed": seed, "use_cpu": True,
        "dataloader_num_workers": 0, "report_to": [], "disable_tqdm": True,
        "per_device_train_batch_size": 8, "max_steps": max_steps, "save_steps": save_steps,
        "save_strategy": "steps", "learning_rate": 5e-3, "warmup_steps": 2,
        "lr_scheduler_type": "linear", "max_grad_norm": 1.0, "weight_decay": 0.01,
        "logging_steps": 1, "save_total_limit": save_total_limit,
    }
    base.update(args)
    trainer = Trainer(
        model=tiny_gpt2(width), args=TrainingArguments(**base),
        train_dataset=progressions(64, seed + 1), callbacks=callbacks,
    )
    trainer.train()
    if finish:
        trainer.save_model()
        trainer.save_state()
    names = sorted((p.name for p in out.glob("checkpoint-*")), key=lambda n: int(n[11:]))
    newest = out / names[-1]
    return Built(
        path=newest, layout="hf_trainer", global_step=int(names[-1][11:]),
        files=_listing(newest), run_dir=out, detail={"checkpoints": names},
    )


def hf_rank_rng_files(built: Built, world_size: int = 4) -> Built:
    """Replace ``rng_state.pth`` by ``rng_state_0.pth`` .. ``rng_state_{W-1}.pth``.

    As the Trainer names them when ``world_size > 1``: one ``torch.save`` per rank of the
    dict it saves (``python``, ``numpy``, ``cpu``), each rank's generators seeded apart; and
    ``training_args.bin`` is made to say ``world_size`` processes, as rank 0 of such a job
    writes it. (A real 4-rank job takes ~25 s here: ``sample_runs/checkpoints.py`` runs one.)
    """
    import torch

    saved = _rng_states()
    try:
        for rank in range(world_size):
            _seed(1000 + rank)
            torch.save(_rng_states(), built.path / f"rng_state_{rank}.pth")
    finally:
        import numpy as np

        random.setstate(saved["python"])
        np.random.set_state(saved["numpy"])
        torch.random.set_rng_state(saved["cpu"])
    (built.path / "rng_state.pth").unlink(missing_ok=True)
    _set_args_world_size(built.path / "training_args.bin", world_size)
    return dataclasses.replace(built, world_size=world_size, files=_listing(built.path))


def _set_args_world_size(path: Path, world_size: int) -> None:
    """Make ``training_args.bin`` say what rank 0 of a ``world_size``-process job saves.

    Its ``distributed_state`` (accelerate's ``PartialState``, unpickled as a detached copy)
    gets ``num_processes`` = ``world_size``, the MULTI_CPU type and the gloo backend.
    """
    import torch
    from accelerate.utils import DistributedType

    if not path.is_file():
        return
    args = torch.load(path, weights_only=False)  # the Trainer's own file, just written
    state = args.__dict__.get("distributed_state")
    if state is not None:
        state.__dict__.update(num_processes=world_size, process_index=0, local_process_index=0,
                              distributed_type=DistributedType.MULTI_CPU, backend="gloo")
    torch.save(args, path)


def grad_scaler_state(steps: int = 4) -> dict[str, Any]:
    """A real ``torch.amp.GradScaler("cpu")``'s ``state_dict()`` after ``steps`` steps."""
    return dict(_train_plain(steps, scaler=True).scaler.state_dict())


def hf_fp16(built: Built, *, scaler: bool = True) -> Built:
    """Make an HF checkpoint an fp16 run's: ``training_args.bin`` says ``fp16=True`` and, with
    ``scaler``, ``scaler.pt`` holds a real GradScaler state (the Trainer saves it when it
    scales the loss; fp16 training needs a GPU, so the CPU run is relabelled). Without
    ``scaler`` the scaler file is missing: ``broken`` = ``grad_scaler``.
    """
    import torch

    path = built.path / "training_args.bin"
    args = torch.load(path, weights_only=False)  # the Trainer's own file
    args.fp16 = True
    torch.save(args, path)
    if scaler:
        torch.save(grad_scaler_state(), built.path / "scaler.pt")
        return dataclasses.replace(built, files=_listing(built.path),
                                   detail={**built.detail, "fp16": True})
    (built.path / "scaler.pt").unlink(missing_ok=True)
    return _broken(built, "grad_scaler", "fp16 run without scaler.pt", fp16=True)


def hf_sharded_weights(out: Path, *, max_shard_size: str = "20KB", width: int = 32) -> Built:
    """``save_pretrained(max_shard_size=...)``: ``model-0000k-of-0000n.safetensors`` + index."""
    _seed(0)
    out.mkdir(parents=True, exist_ok=True)
    tiny_gpt2(width).save_pretrained(out, max_shard_size=max_shard_size)
    index = json.loads((out / "model.safetensors.index.json").read_text(encoding="utf-8"))
    shards = sorted(set(index["weight_map"].values()))
    return Built(path=out, layout="safetensors_sharded", global_step=None,
                 files=_listing(out), detail={"shards": shards})


LORA_TARGETS = ("c_attn",)


def lora_adapter(out: Path, *, r: int = 4, width: int = 32) -> Built:
    """A LoRA adapter folder as peft's ``save_pretrained`` writes it (peft is not installed).

    Built from peft's documented layout: ``adapter_config.json`` (``peft_type`` LORA, ``r``,
    ``lora_alpha``, ``target_modules``, ``base_model_name_or_path``, ``task_type``...) and
    ``adapter_model.safetensors`` with ``base_model.model.<module>.lora_A.weight`` ``[r, in]``
    and ``lora_B.weight`` ``[out, r]`` (B zero at initialisation; here small and non-zero, as
    after training) for every targeted module of the tiny GPT-2.
    """
    import torch
    from safetensors.torch import save_file

    _seed(0)
    out.mkdir(parents=True, exist_ok=True)
    model = tiny_gpt2(width)
    tensors: dict[str, Any] = {}
    for name, module in model.named_modules():
        if name.rsplit(".", 1)[-1] not in LORA_TARGETS:
            continue
        fan_in, fan_out = module.weight.shape  # GPT-2 Conv1D: weight is [in, out]
        prefix = f"base_model.model.{name}"
        tensors[f"{prefix}.lora_A.weight"] = torch.randn(r, fan_in) * 0.01
        tensors[f"{prefix}.lora_B.weight"] = torch.randn(fan_out, r) * 0.01
    save_file(tensors, str(out / "adapter_model.safetensors"), metadata={"format": "pt"})
    config = {
        "peft_type": "LORA", "task_type": "CAUSAL_LM", "r": r, "lora_alpha": 2 * r,
        "lora_dropout": 0.0, "target_modules": list(LORA_TARGETS), "bias": "none",
        "fan_in_fan_out": True, "base_model_name_or_path": "tiny-gpt2",
        "inference_mode": True, "modules_to_save": None, "revision": None,
    }
    (out / "adapter_config.json").write_text(json.dumps(config, indent=2), encoding="utf-8")
    return Built(path=out, layout="lora_adapter", global_step=None, files=_listing(out),
                 detail={"tensors": sorted(tensors)})


# --------------------------------------------------------------------------------------------
# A plain training loop, and the formats that save its state
# --------------------------------------------------------------------------------------------


@dataclass
class _Loop:
    """The live objects of :func:`_train_plain` after ``steps`` steps."""

    model: Any
    optimizer: Any
    scheduler: Any
    scaler: Any
    loader: Any
    step: int
    epoch: int


def _stateful_loader(dataset: Any, batch_size: int, seed: int) -> Any | None:
    """torchdata's ``StatefulDataLoader`` (shuffled), or None when torchdata is missing."""
    try:
        from torchdata.stateful_dataloader import StatefulDataLoader
    except ImportError:
        return None
    import torch

    return StatefulDataLoader(dataset, batch_size=batch_size, shuffle=True,
                              generator=torch.Generator().manual_seed(seed))


#: called after every step with the 1-based step and its loss, grad_norm and learning_rate
StepLog = Callable[[int, dict[str, float]], None]


def _train_plain(steps: int, *, seed: int = 0, stateful: bool = False,
                 scaler: bool = True, log: StepLog | None = None) -> _Loop:
    """Train :func:`tiny_mlp` for ``steps`` steps: AdamW, warm-up + linear, clip 1.0.

    With ``scaler`` a real ``torch.amp.GradScaler("cpu")`` scales the loss (fp16 autocast is
    not available on CPU, so the forward runs in float32; the scaler's state is real).
    """
    import torch

    _seed(seed)
    model = tiny_mlp()
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2, weight_decay=0.01)
    scheduler = _warmup_linear(optimizer, warmup=2, total=20)
    grad_scaler = torch.amp.GradScaler("cpu") if scaler else None
    dataset = _classes(64, seed + 1)
    loader = _stateful_loader(dataset, 8, seed) if stateful else None
    if loader is None:
        loader = torch.utils.data.DataLoader(dataset, batch_size=8, shuffle=True,
                                             generator=torch.Generator().manual_seed(seed))
    step = epoch = 0
    while step < steps:
        for x, y in loader:
            loss = torch.nn.functional.cross_entropy(model(x), y)
            lr = optimizer.param_groups[0]["lr"]
            if grad_scaler is not None:
                grad_scaler.scale(loss).backward()
                grad_scaler.unscale_(optimizer)
                norm = torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
                grad_scaler.step(optimizer)
                grad_scaler.update()
            else:
                loss.backward()
                norm = torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
                optimizer.step()
            scheduler.step()
            optimizer.zero_grad()
            step += 1
            if log is not None:
                log(step, {"loss": float(loss), "grad_norm": float(norm), "learning_rate": lr})
            if step == steps:
                break
        else:
            epoch += 1
    return _Loop(model, optimizer, scheduler, grad_scaler, loader, step, epoch)


def stateful_loader_state(loop_steps: int = 3) -> dict[str, Any]:
    """The ``state_dict()`` of a shuffled ``StatefulDataLoader`` after ``loop_steps`` batches.

    From torchdata when it imports (``pip install torchdata --no-deps`` works here: 0.11 needs
    only torch, requests and urllib3); otherwise built from its documented layout
    (``_sampler_iter_state`` with ``samples_yielded``, ``_num_yielded``, ``_iterator_finished``,
    ``fetcher_state``, ``dataset_state``...).
    """
    import torch

    loader = _stateful_loader(list(range(64)), 8, 0)
    if loader is not None:
        it = iter(loader)
        for _ in range(loop_steps):
            next(it)
        return dict(loader.state_dict())
    return {
        "_index_sampler_state": None,
        "_sampler_iter_state": {
            "samples_yielded": 8 * loop_steps,
            "sampler_iter_state": {"yielded": 8 * loop_steps,
                                   "generator": torch.Generator().manual_seed(0).get_state()},
        },
        "_sampler_iter_yielded": loop_steps,
        "_num_yielded": loop_steps,
        "_IterableDataset_len_called": None,
        "_shared_seed": None,
        "fetcher_state": None,
        "dataset_state": None,
        "_iterator_finished": False,
    }


def plain_checkpoint(
    out: Path, *, steps: int = 4, data_state: str | None = "stateful",
    model_key: str = "model", scheduler_key: str = "scheduler", scaler: bool = True,
    name: str = "checkpoint.pt", log: StepLog | None = None, counters: bool = True,
    legacy: bool = False,
) -> Built:
    """``torch.save`` of a plain training loop's state into ``out/name``.

    Keys: ``model_key`` (``model`` or ``state_dict``), ``optimizer``, ``scheduler_key``
    (``scheduler`` or ``lr_scheduler``), ``scaler`` (a real GradScaler's state), ``step``,
    ``epoch``, ``rng`` (python / numpy / torch). ``data_state``: ``"stateful"`` adds
    ``dataloader`` = the StatefulDataLoader's ``state_dict()`` (the loader that trained),
    ``"sampler"`` adds ``sampler`` = ``{"epoch", "seed", "batches_seen"}``, None adds nothing
    (no data position: a resume restarts the epoch). ``counters=False`` leaves out ``step`` and
    ``epoch`` too (as scripts that save only the state dicts do; the step survives only in the
    scheduler's ``last_epoch``). ``legacy`` writes torch's old non-zip format (a sequence of
    pickles, then the raw storages: ``_use_new_zipfile_serialization=False``).
    """
    import numpy as np
    import torch

    loop = _train_plain(steps, stateful=data_state == "stateful", scaler=scaler, log=log)
    state: dict[str, Any] = {
        model_key: loop.model.state_dict(),
        "optimizer": loop.optimizer.state_dict(),
        scheduler_key: loop.scheduler.state_dict(),
        "step": loop.step,
        "epoch": loop.epoch,
        "rng": {"python": random.getstate(), "numpy": np.random.get_state(),
                "torch": torch.random.get_rng_state()},
    }
    if not counters:
        del state["step"], state["epoch"]
    if loop.scaler is not None:
        state["scaler"] = loop.scaler.state_dict()
    if data_state == "stateful":
        if hasattr(loop.loader, "state_dict"):
            state["dataloader"] = loop.loader.state_dict()
        else:
            state["dataloader"] = stateful_loader_state()
    elif data_state == "sampler":
        state["sampler"] = {"epoch": loop.epoch, "seed": 0, "batches_seen": loop.step % 8}
    out.mkdir(parents=True, exist_ok=True)
    path = out / name
    torch.save(state, path, _use_new_zipfile_serialization=not legacy)
    return Built(path=path, layout="plain_torch", global_step=loop.step, files=(name,),
                 detail={"keys": sorted(state)})


def safetensors_weights(out: Path, *, name: str = "model.safetensors") -> Built:
    """``safetensors.torch.save_file`` of the tiny GPT-2's weights (weights only)."""
    from safetensors.torch import save_file

    _seed(0)
    out.mkdir(parents=True, exist_ok=True)
    sd = {k: v.contiguous() for k, v in tiny_gpt2().state_dict().items()
          if k != "lm_head.weight"}  # tied to wte: save_file refuses shared storage
    save_file(sd, str(out / name), metadata={"format": "pt"})
    return Built(path=out / name, layout="safetensors", global_step=None, files=(name,),
                 detail={"tensors": sorted(sd)})


def accelerate_state(out: Path, *, steps: int = 4, stateful: bool = True,
                     log: StepLog | None = None) -> Built:
    """``Accelerator().save_state(out)`` after ``steps`` steps of a prepared loop.

    Writes model.safetensors, optimizer.bin, scheduler.bin, random_states_0.pkl and, with
    ``stateful`` (``DataLoaderConfiguration(use_stateful_dataloader=True)``, needs torchdata),
    dl_state_dict.bin. accelerate writes ``sampler.bin`` only for iterable-dataset shards, and
    no ``scaler.pt`` on CPU (it makes no GradScaler there); neither appears here.
    """
    import torch
    from accelerate import Accelerator
    from accelerate.utils import DataLoaderConfiguration

    _seed(0)
    if stateful and _stateful_loader([0], 1, 0) is None:
        stateful = False
    accelerator = Accelerator(
        cpu=True, dataloader_config=DataLoaderConfiguration(use_stateful_dataloader=stateful)
    )
    model = tiny_mlp()
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2)
    scheduler = _warmup_linear(optimizer, warmup=2, total=20)
    loader = torch.utils.data.DataLoader(_classes(64, 1), batch_size=8, shuffle=True)
    model, optimizer, loader, scheduler = accelerator.prepare(model, optimizer, loader, scheduler)
    step = 0
    for x, y in loader:
        loss = torch.nn.functional.cross_entropy(model(x), y)
        lr = optimizer.param_groups[0]["lr"]
        accelerator.backward(loss)
        norm = accelerator.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        scheduler.step()
        optimizer.zero_grad()
        step += 1
        if log is not None:
            log(step, {"loss": float(loss), "grad_norm": float(norm), "learning_rate": lr})
        if step == steps:
            break
    out.mkdir(parents=True, exist_ok=True)
    accelerator.save_state(str(out))
    accelerator.free_memory()
    _reset_accelerate()
    return Built(path=out, layout="accelerate", global_step=step, files=_listing(out),
                 detail={"stateful": stateful})


def _reset_accelerate() -> None:
    """Forget accelerate's process-wide singletons so another Accelerator can be made."""
    try:
        from accelerate.state import AcceleratorState, GradientState, PartialState

        AcceleratorState._reset_state(reset_partial_state=True)
        GradientState._reset_state()
        PartialState._reset_state()
    except (ImportError, AttributeError):
        pass


@contextmanager
def _fake_module(dotted: str, **attrs: Any) -> Iterator[types.ModuleType]:
    """Make ``dotted`` importable for pickling (parents included), then remove it."""
    parts = dotted.split(".")
    added = []
    for i in range(1, len(parts) + 1):
        name = ".".join(parts[:i])
        if name not in sys.modules:
            sys.modules[name] = types.ModuleType(name)
            added.append(name)
    module = sys.modules[dotted]
    for key, value in attrs.items():
        if isinstance(value, type):
            value.__module__ = dotted
            value.__qualname__ = key
        setattr(module, key, value)
    try:
        yield module
    finally:
        for name in reversed(added):
            del sys.modules[name]


DS_VERSION = "0.16.4"


def deepspeed_checkpoint(out: Path, *, steps: int = 4, world_size: int = 2,
                         zero_stage: int = 2, log: StepLog | None = None) -> Built:
    """A DeepSpeed ZeRO checkpoint folder (DeepSpeed does not install here).

    Built with ``torch.save`` from DeepSpeed's documented layout: ``out/latest`` holds
    ``global_step{N}``; ``global_step{N}/mp_rank_00_model_states.pt`` has ``module``,
    ``buffer_names``, ``optimizer`` (None under ZeRO), ``lr_scheduler``, ``global_steps``,
    ``global_samples``, ``skipped_steps``, ``dp_world_size``, ``mp_world_size``,
    ``param_shapes``, ``ds_config``, ``ds_version``; each
    ``zero_pp_rank_{R}_mp_rank_00_optim_states.pt`` has ``optimizer_state_dict`` with
    ``zero_stage``, ``partition_count``, ``loss_scaler`` (an instance of
    ``deepspeed.runtime.fp16.loss_scaler.LossScaler``, pickled by name), ``base_optimizer_state``
    (the Adam state of this rank's flat fp32 partition), ``single_partition_of_fp32_groups``,
    ``group_paddings``, ``ds_version``.
    """
    import torch

    loop = _train_plain(steps, scaler=False, log=log)
    params = list(loop.model.parameters())
    names = [n for n, _ in loop.model.named_parameters()]
    flat = torch.cat([p.detach().reshape(-1) for p in params])
    state = loop.optimizer.state_dict()["state"]
    flat_m = torch.cat([state[i]["exp_avg"].reshape(-1) for i in range(len(params))])
    flat_v = torch.cat([state[i]["exp_avg_sq"].reshape(-1) for i in range(len(params))])
    padding = (-flat.numel()) % world_size
    if padding:
        flat, flat_m, flat_v = (
            torch.cat([t, t.new_zeros(padding)]) for t in (flat, flat_m, flat_v)
        )
    part = flat.numel() // world_size
    tag = f"global_step{loop.step}"
    folder = out / tag
    folder.mkdir(parents=True, exist_ok=True)
    ds_config = {
        "train_micro_batch_size_per_gpu": 8, "gradient_accumulation_steps": 1,
        "zero_optimization": {"stage": zero_stage}, "optimizer": {"type": "AdamW"},
        "gradient_clipping": 1.0,
    }
    torch.save(
        {
            "module": loop.model.state_dict(), "buffer_names": [], "optimizer": None,
            "param_shapes": [OrderedDict((n, p.shape) for n, p in zip(names, params, strict=True))],
            "frozen_param_shapes": None, "shared_params": {}, "frozen_param_fragments": None,
            "lr_scheduler": loop.scheduler.state_dict(), "data_sampler": None,
            "random_ltd": None, "sparse_tensor_module_names": set(),
            "skipped_steps": 0, "global_steps": loop.step, "global_samples": 8 * loop.step,
            "dp_world_size": world_size, "mp_world_size": 1,
            "ds_config": ds_config, "ds_version": DS_VERSION,
        },
        folder / "mp_rank_00_model_states.pt",
    )

    class LossScaler:
        """Stands for deepspeed.runtime.fp16.loss_scaler.LossScaler (pickled by name)."""

        def __init__(self, scale: float) -> None:
            self.cur_scale = scale
            self.dynamic = False

    with _fake_module("deepspeed.runtime.fp16.loss_scaler", LossScaler=LossScaler):
        for rank in range(world_size):
            window = slice(rank * part, (rank + 1) * part)
            group = dict(loop.optimizer.state_dict()["param_groups"][0])
            group["params"] = [0]
            torch.save(
                {
                    "optimizer_state_dict": {
                        "loss_scaler": LossScaler(1.0), "dynamic_loss_scale": False,
                        "overflow": False, "clip_grad": 1.0,
                        "base_optimizer_state": {
                            "state": {0: {"step": torch.tensor(float(loop.step)),
                                          "exp_avg": flat_m[window].clone(),
                                          "exp_avg_sq": flat_v[window].clone()}},
                            "param_groups": [group],
                        },
                        "single_partition_of_fp32_groups": [flat[window].clone()],
                        "zero_stage": zero_stage, "group_paddings": [padding if rank ==
                                                                     world_size - 1 else 0],
                        "partition_count": [world_size], "ds_version": DS_VERSION,
                        "param_slice_mappings": [OrderedDict()],
                    },
                    "ds_config": ds_config, "ds_version": DS_VERSION,
                },
                folder / f"zero_pp_rank_{rank}_mp_rank_00_optim_states.pt",
            )
    (out / "latest").write_text(tag, encoding="utf-8")
    return Built(path=out, layout="deepspeed", global_step=loop.step, world_size=world_size,
                 files=_listing(out), detail={"tag": tag})


def dcp_checkpoint(out: Path, *, steps: int = 4, scheduler: bool = True,
                   log: StepLog | None = None) -> Built:
    """``torch.distributed.checkpoint.save`` in one process: ``.metadata`` + ``__0_0.distcp``.

    The state is ``{"model", "optimizer"}`` from ``get_state_dict`` (fully qualified names),
    ``lr_scheduler`` (the scheduler's state dict, as torchtitan saves it; left out with
    ``scheduler=False``) and ``step``.
    """
    import warnings

    import torch.distributed.checkpoint as dcp
    from torch.distributed.checkpoint.state_dict import get_state_dict

    loop = _train_plain(steps, scaler=False, log=log)
    model_sd, optim_sd = get_state_dict(loop.model, loop.optimizer)
    state: dict[str, Any] = {"model": model_sd, "optimizer": optim_sd, "step": loop.step}
    if scheduler:
        state["lr_scheduler"] = loop.scheduler.state_dict()
    out.mkdir(parents=True, exist_ok=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "assuming the intent is to save in a single process"
        dcp.save(state, checkpoint_id=str(out))
    return Built(path=out, layout="dcp", global_step=loop.step, files=_listing(out))


LIGHTNING_VERSION = "2.5.1"


def lightning_checkpoint(out: Path, *, steps: int = 4, log: StepLog | None = None) -> Built:
    """A Lightning ``.ckpt`` (lightning does not install here), by ``torch.save``.

    From Lightning's documented checkpoint contents: ``epoch``, ``global_step``,
    ``pytorch-lightning_version``, ``state_dict`` (LightningModule names: ``model.0.weight``),
    ``loops`` (fit_loop progress), ``callbacks`` (ModelCheckpoint state), ``optimizer_states``
    (a list of optimizer state dicts), ``lr_schedulers`` (a list of scheduler state dicts),
    ``hparams_name``, ``hyper_parameters``. Written as
    ``lightning_logs/version_0/checkpoints/epoch={e}-step={N}.ckpt``.
    """
    import torch

    loop = _train_plain(steps, scaler=False, log=log)
    progress = {"total": {"ready": loop.step, "completed": loop.step},
                "current": {"ready": loop.step, "completed": loop.step}}
    ckpt = {
        "epoch": loop.epoch,
        "global_step": loop.step,
        "pytorch-lightning_version": LIGHTNING_VERSION,
        "state_dict": OrderedDict(
            (f"model.{k}", v) for k, v in loop.model.state_dict().items()
        ),
        "loops": {
            "fit_loop": {
                "state_dict": {}, "epoch_progress": progress,
                "epoch_loop.batch_progress": progress,
                "epoch_loop.state_dict": {"_batches_that_stepped": loop.step},
            },
        },
        "callbacks": {
            "ModelCheckpoint{'monitor': None, 'mode': 'min', 'every_n_train_steps': 0, "
            "'every_n_epochs': 1, 'train_time_interval': None}": {
                "monitor": None, "best_model_score": None, "best_model_path": "",
                "current_score": None, "dirpath": str(out), "best_k_models": {},
                "kth_best_model_path": "", "kth_value": torch.tensor(float("inf")),
                "last_model_path": "",
            },
        },
        "optimizer_states": [loop.optimizer.state_dict()],
        "lr_schedulers": [loop.scheduler.state_dict()],
        "hparams_name": "kwargs",
        "hyper_parameters": {"lr": 1e-2, "width": 16},
    }
    folder = out / "lightning_logs" / "version_0" / "checkpoints"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"epoch={loop.epoch}-step={loop.step}.ckpt"
    torch.save(ckpt, path)
    return Built(path=path, layout="lightning", global_step=loop.step, files=(path.name,))


# --------------------------------------------------------------------------------------------
# Defects (in place; copy the good checkpoint first)
# --------------------------------------------------------------------------------------------


def copy_built(built: Built, dest: Path) -> Built:
    """A copy of ``built`` under ``dest`` (its run directory when it has one)."""
    if built.run_dir is not None:
        shutil.copytree(built.run_dir, dest)
        return dataclasses.replace(built, run_dir=dest,
                                   path=dest / built.path.relative_to(built.run_dir))
    if built.path.is_dir():
        shutil.copytree(built.path, dest)
        return dataclasses.replace(built, path=dest)
    dest.mkdir(parents=True, exist_ok=True)
    shutil.copy2(built.path, dest / built.path.name)
    return dataclasses.replace(built, path=dest / built.path.name)


COMPONENT_OF_FILE = {
    "optimizer.pt": "optimizer", "optimizer.bin": "optimizer",
    "scheduler.pt": "scheduler", "scheduler.bin": "scheduler",
    "scaler.pt": "grad_scaler", "rng_state.pth": "rng",
    "trainer_state.json": "trainer_state", "training_args.bin": "training_args",
    "model.safetensors": "weights", "pytorch_model.bin": "weights",
    "dl_state_dict.bin": "data_position", "sampler.bin": "data_position",
}


def component_of(name: str) -> str:
    """The component a checkpoint file holds (``rng_state_2.pth`` -> ``rng``)."""
    if name in COMPONENT_OF_FILE:
        return COMPONENT_OF_FILE[name]
    if name.startswith(("rng_state_", "random_states_")):
        return "rng"
    if name.endswith((".safetensors", ".index.json")):
        return "weights"
    return "unknown"


def remove(built: Built, name: str) -> Built:
    """Delete one file of a checkpoint folder (optimizer missing, scheduler missing...)."""
    (built.path / name).unlink()
    detail: dict[str, Any] = {"removed": name}
    rank = _rank_of(name)
    if rank is not None:
        detail["rank"] = rank
    return _broken(built, component_of(name), f"{name} missing", **detail)


def _rank_of(name: str) -> int | None:
    """The rank in ``rng_state_R.pth`` / ``random_states_R.pkl``, else None."""
    stem = name.rsplit(".", 1)[0]
    tail = stem.rsplit("_", 1)[-1]
    return int(tail) if stem.startswith(("rng_state_", "random_states_")) and tail.isdigit() \
        else None


def remove_rank_rng(built: Built, rank: int) -> Built:
    """Delete one rank's RNG file (``rng_state_R.pth``; accelerate: ``random_states_R.pkl``)."""
    for name in (f"rng_state_{rank}.pth", f"random_states_{rank}.pkl"):
        if (built.path / name).exists():
            return remove(built, name)
    raise FileNotFoundError(f"no RNG file for rank {rank} in {built.path}")


def truncate(built: Built, name: str | None = None, *, fraction: float = 0.5) -> Built:
    """Cut a file to ``fraction`` of its size (a torn copy): weights by default.

    ``name`` is the file in a checkpoint folder (default ``model.safetensors``); ignored for a
    one-file checkpoint.
    """
    path = built.file(name or "model.safetensors")
    size = path.stat().st_size
    keep = int(size * fraction)
    with open(path, "r+b") as f:
        f.truncate(keep)
    component = component_of(path.name) if built.path.is_dir() else "weights"
    return _broken(built, component, f"{path.name} truncated", file=path.name,
                   size=size, kept=keep)


def zero_length(built: Built, name: str) -> Built:
    """Empty one file (zero bytes), as a crashed copy leaves it."""
    path = built.file(name)
    path.write_bytes(b"")
    return _broken(built, component_of(path.name), f"{path.name} zero-length", file=path.name)


def _optimizer_holder(obj: dict[str, Any]) -> tuple[dict[str, Any], str]:
    """The optimizer state dict inside a saved object, and its key path prefix."""
    if "state" in obj and "param_groups" in obj:
        return obj, ""
    if "optimizer" in obj:
        return obj["optimizer"], "optimizer."
    if "optimizer_states" in obj:
        return obj["optimizer_states"][0], "optimizer_states.0."
    raise KeyError("no optimizer state in this object")


def nan_moments(built: Built, name: str | None = None, *, param: int = 0,
                index: int = 0, value: float = math.nan) -> Built:
    """Set ``exp_avg_sq.flat[index]`` of parameter ``param`` to NaN, then ``torch.save`` back.

    ``name``: the optimizer file in a folder (``optimizer.pt``, or ``optimizer.bin`` for
    accelerate); a one-file checkpoint is used as is (``optimizer`` / ``optimizer_states``).
    ``detail`` gets ``key`` (``state.0.exp_avg_sq`` with the prefix of the file) and ``index``.
    """
    import torch

    if name is None and built.path.is_dir():
        name = "optimizer.pt" if (built.path / "optimizer.pt").exists() else "optimizer.bin"
    path = built.file(name or "")
    obj = torch.load(path, weights_only=False)  # our own file, written by the builders
    holder, prefix = _optimizer_holder(obj)
    holder["state"][param]["exp_avg_sq"].view(-1)[index] = value
    torch.save(obj, path)
    return _broken(built, "optimizer", "NaN in exp_avg_sq", file=path.name,
                   key=f"{prefix}state.{param}.exp_avg_sq", index=index)


DANGEROUS = {
    "os.system": ("posix", "system"),
    "builtins.exec": ("builtins", "exec"),
    # os.system reached as an attribute of a trusted module: find_class resolves the dotted
    # name with getattr (protocol 4), so torch.load(weights_only=False) calls os.system
    "torch.os.system": ("torch", "os.system"),
    # a standard-library function that runs the command it is given (no denylist names it)
    "uuid._get_command_stdout": ("uuid", "_get_command_stdout"),
}

#: What follows the call in a masked payload, so that the pickle fails to parse *after* the
#: call has run (under torch.load): nothing (a POP, then the file's own object), an opcode
#: that does not exist, a BUILD of the call's result into a list, or into an OrderedDict.
MASKS = ("none", "bad_opcode", "build_on_list", "ordered_dict_build")


def marker_command(target: str, marker: Path) -> str:
    """The payload argument: creates ``marker`` if it ever runs."""
    if target == "builtins.exec":
        return f"open({str(marker)!r}, 'w').close()"
    return f"touch {marker}"


#: how the payload calls its target: the opcodes a restricted unpickler must all catch
OPCODES = ("reduce", "inst", "obj", "stack_global")


def _opcode_prefix(target: str, marker: Path, opcode: str = "reduce") -> bytes:
    """Pickle opcodes that call ``target(payload)`` and discard the result (then POP).

    ``reduce``: GLOBAL, the argument, TUPLE1, REDUCE. ``inst``: MARK, the argument,
    INST module/name. ``obj``: MARK, GLOBAL, the argument, OBJ. ``stack_global``: the module
    and name as strings, STACK_GLOBAL (protocol 4), the argument, TUPLE1, REDUCE.
    """
    module, name = DANGEROUS[target]

    def text(value: bytes) -> bytes:
        return b"X" + len(value).to_bytes(4, "little") + value  # BINUNICODE

    if target == "uuid._get_command_stdout":  # (command, *args): "touch", the marker
        args, tuple_op = text(b"touch") + text(str(marker).encode()), b"\x86"  # TUPLE2
    else:
        args, tuple_op = text(marker_command(target, marker).encode("utf-8")), b"\x85"
    glob = b"c" + module.encode() + b"\n" + name.encode() + b"\n"  # GLOBAL
    calls = {
        "reduce": glob + args + tuple_op + b"R",
        "inst": b"(" + args + b"i" + module.encode() + b"\n" + name.encode() + b"\n",
        "obj": b"(" + glob + args + b"o",
        "stack_global": text(module.encode()) + text(name.encode()) + b"\x93" + args
        + tuple_op + b"R",
    }
    return calls[opcode] + b"0"  # POP: the file's own object follows, untouched


def masked_payload(target: str, marker: Path, mask: str, opcode: str = "reduce") -> bytes:
    """The call of ``target`` followed by ``mask`` (:data:`MASKS`): the bytes torch.load
    would run before it fails on what follows."""
    call = _opcode_prefix(target, marker, opcode)[:-1]  # without its POP
    if mask == "none":
        return call + b"0"
    if mask == "bad_opcode":
        return call + b"\xff"
    if mask == "build_on_list":
        return b"]" + call + b"b"
    if mask == "ordered_dict_build":
        return b"ccollections\nOrderedDict\n)R" + call + b"b"
    raise ValueError(mask)


def splice_payload(data: bytes, target: str, marker: Path, opcode: str = "reduce",
                   mask: str = "none") -> bytes:
    """``data`` (a pickle) with a call of ``target`` run before its own object is built
    (``mask``: what follows the call, :data:`MASKS`)."""
    head = b""
    if data[:1] == b"\x80":  # PROTO n stays first
        head, data = data[:2], data[2:]
    if "." in DANGEROUS[target][1]:  # a dotted name is resolved from protocol 4 on only
        head = b"\x80\x04"
    return head + masked_payload(target, marker, mask, opcode) + data


def _splice_zip(path: Path, target: str, marker: Path, opcode: str, mask: str = "none") -> str:
    """Rewrite a torch zip with the payload spliced into its ``data.pkl``; returns its name."""
    with zipfile.ZipFile(path) as zin:
        members = [(info, zin.read(info)) for info in zin.infolist()]
    pkl = next(info.filename for info, _ in members if info.filename.endswith("/data.pkl"))
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compression=zipfile.ZIP_STORED) as zout:
        for info, data in members:
            if info.filename == pkl:
                data = splice_payload(data, target, marker, opcode, mask)
            zout.writestr(info.filename, data)
    path.write_bytes(buf.getvalue())
    return pkl


def hostile_pickle(built: Built, name: str = "training_args.bin", *,
                   target: str = "os.system", marker: Path | None = None,
                   opcode: str = "reduce", mask: str = "none") -> Built:
    """Make one pickle file of a checkpoint call ``target`` (``os.system``/``builtins.exec``).

    The payload (a call by ``opcode``, one of :data:`OPCODES`: REDUCE by default, INST, OBJ,
    or STACK_GLOBAL + REDUCE; then POP) is spliced in front of the file's own pickle, so the
    file still yields its real object (``TrainingArguments``, the RNG dict) after the call:
    inside ``data.pkl`` for a torch zip, at the start for a raw pickle (accelerate's
    ``random_states_0.pkl``) or a legacy torch file (its first, magic-number pickle). The call
    would create ``marker`` (default: ``<checkpoint>.PWNED`` beside the checkpoint, outside
    it). Check with :func:`pickle_globals`, never by loading.
    """
    path = built.file(name)
    marker = marker or built.path.with_name(built.path.name + ".PWNED")
    if zipfile.is_zipfile(path):
        member = _splice_zip(path, target, marker, opcode, mask)
    else:
        path.write_bytes(splice_payload(path.read_bytes(), target, marker, opcode, mask))
        member = None
    dotted = ".".join(DANGEROUS[target])
    component = component_of(path.name) if built.path.is_dir() else "weights"
    return _broken(built, component, f"{path.name} calls {dotted}",
                   file=path.name, member=member, global_name=dotted, marker=str(marker),
                   opcode=opcode, mask=mask)


def pickle_globals(path: Path) -> list[str]:
    """Every ``module.name`` a pickle file (or a torch zip's ``data.pkl``) imports.

    Read with :func:`pickletools.genops` (nothing is executed). STACK_GLOBAL's operands are
    taken from the two strings pushed before it. A legacy (non-zip) torch file is a sequence
    of pickles before its raw storages: the first five pickles are read.
    """
    import pickletools

    if zipfile.is_zipfile(path):
        with zipfile.ZipFile(path) as z:
            name = next(n for n in z.namelist() if n.endswith("data.pkl"))
            data = z.read(name)
    else:
        data = path.read_bytes()
    found: list[str] = []
    stream = io.BytesIO(data)
    for _ in range(LEGACY_PICKLES):
        strings: list[str] = []
        for op, arg, _pos in pickletools.genops(stream):
            if op.name in ("GLOBAL", "INST"):
                found.append(str(arg).replace(" ", "."))
            elif op.name == "STACK_GLOBAL" and len(strings) >= 2:
                found.append(f"{strings[-2]}.{strings[-1]}")
            if isinstance(arg, str) and op.name.endswith("UNICODE"):
                strings.append(arg)
        if data[stream.tell():stream.tell() + 1] != b"\x80":  # no further pickle (PROTO)
            break
    return found


#: pickles at the start of a legacy torch file: magic number, protocol, sys info, object,
#: storage keys
LEGACY_PICKLES = 5


def drop_trainer_state(built: Built) -> Built:
    """Delete ``trainer_state.json`` (written last by the Trainer: a torn save)."""
    (built.path / "trainer_state.json").unlink()
    return _broken(built, "trainer_state", "trainer_state.json missing (torn save)")


def shift_trainer_state_step(built: Built, delta: int = 1) -> Built:
    """Make ``trainer_state.json``'s ``global_step`` disagree with the folder's N."""
    path = built.path / "trainer_state.json"
    state = json.loads(path.read_text(encoding="utf-8"))
    state["global_step"] = int(state["global_step"]) + delta
    path.write_text(json.dumps(state, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    return _broken(built, "trainer_state", "global_step != folder N",
                   global_step_in_file=state["global_step"])
