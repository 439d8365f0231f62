"""The checkpoint sample runs: real training runs whose checkpoints show one resume situation.

Each run trains a tiny model for real and saves checkpoints with the real writer (the HF
``Trainer``, accelerate's ``save_state``, ``torch.save``); the defect runs then break the
newest checkpoint the way it happens in practice (a file lost in a partial copy, a torn
write, a hostile pickle), or, for the NaN moments, a callback plants the NaN in the live
optimizer just before the Trainer saves. The writers and defects are the ones the tests use,
:mod:`tests/ckpt/builders.py <builders>` (loaded from its path).

The HF runs (``ckpt_hf_*``) are ordinary output dirs: ``train.log``, TensorBoard events,
``trainer_state.json``, the final model, and ``checkpoint-4/`` (good) and ``checkpoint-8/``
(the newest, which a resume picks, broken in the defect runs). ``ckpt_hf_rng_missing_one_rank``
is a real 4-rank job (``torchrun --nproc_per_node 4``, gloo on CPU), so each checkpoint has
``rng_state_0.pth`` .. ``rng_state_3.pth`` as the Trainer writes them; rank 2's file of the
newest checkpoint is then lost.

The self-checks read what is on disk (safetensors, ``torch.load(weights_only=True)``,
``pickletools`` for the hostile file: never loaded) and compute the label from it: ``family``
(``resume``, or ``healthy`` when the picked checkpoint is complete), ``cause``,
``first_bad_step`` (the picked checkpoint's step for a defect), ``culprit_rank`` (the rank
whose RNG file is missing), ``resumable``, ``checkpoint`` (the path a resume picks, relative to
the run), ``newest_resumable``, ``components`` ({component: expected status}),
``checkpoint_world_size``, ``scan_values`` (true when only a value scan shows the defect) and
``training_log`` (the run logged its loss). ``make.py`` registers :data:`SPECS`.
"""

from __future__ import annotations

import importlib.util
import json
import math
import os
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from spec import Spec  # the SPECS record (beside this file)

HERE = Path(__file__).resolve().parent
BUILDERS = HERE.parent / "tests" / "ckpt" / "builders.py"
WIDTH = 16  # tiny GPT-2 width: ~3k parameters, two checkpoints well under 300 KB
MAX_STEPS = 8
SAVE_STEPS = 4
WORLD = 4  # ranks of the multi-rank run
MISSING_RANK = 2
LAUNCH_TIMEOUT = 300  # seconds for the torchrun launch
#: where the hostile pickle's payload would write if it ever ran (outside the sample)
HOSTILE_MARKER = "/tmp/autopsy_sample_hostile_pickle_ran"
PLAIN_STEPS = 12
PLAIN_FILE = "checkpoint.pt"
ACCELERATE_DIR = "step_8"

DANGEROUS_GLOBALS = ("posix.system", "os.system", "nt.system", "builtins.exec", "builtins.eval")


class CkptCheckError(AssertionError):
    """A checkpoint run did not show the situation it was made for."""


def _require(cond: bool, what: str) -> None:
    """Fail loudly (whatever ``python -O`` says) when ``cond`` is false."""
    if not cond:
        raise CkptCheckError(what)


def builders() -> Any:
    """``tests/ckpt/builders.py``, loaded from its path (it is not an installed module)."""
    if "ckpt_builders" not in sys.modules:
        spec = importlib.util.spec_from_file_location("ckpt_builders", BUILDERS)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules["ckpt_builders"] = module
        spec.loader.exec_module(module)
    return sys.modules["ckpt_builders"]


# --------------------------------------------------------------------------------------------
# Training (runs in make.py's child process, whose stdout/stderr is <run>/train.log)
# --------------------------------------------------------------------------------------------


def _hf_run(output_dir: str, callbacks: list[Any] | None = None, **args: Any) -> Any:
    """The HF recipe every ``ckpt_hf_*`` run shares: 8 steps, checkpoints 4 and 8, with the
    builders' usual settings (AdamW 5e-3, warm-up 2, linear, clip 1.0, logging every step).

    The learning rate is the builders' own: it was once raised to 3e-2 only so that the loss
    fell far enough within the 8 steps for autopsy's HLT001 to call the run healthy.
    """
    return builders().hf_trainer_run(
        Path(output_dir), max_steps=MAX_STEPS, save_steps=SAVE_STEPS, width=WIDTH,
        report_to=["tensorboard"], callbacks=callbacks, **args,
    )


def _newest(output_dir: str) -> Any:
    """The newest checkpoint of an HF output dir, as a builders ``Built``."""
    b = builders()
    run = Path(output_dir)
    path = run / f"checkpoint-{MAX_STEPS}"
    return b.Built(path=path, layout="hf_trainer", global_step=MAX_STEPS, run_dir=run)


def _train_hf_good(output_dir: str, launch: int, p: Any) -> None:
    """A good HF Trainer run."""
    del launch, p
    _hf_run(output_dir)


def _hf_then(defect: Callable[[Any], Any]) -> Callable[[str, int, Any], None]:
    """An HF run, then ``defect`` applied to its newest checkpoint."""

    def train(output_dir: str, launch: int, p: Any) -> None:
        del launch, p
        _hf_run(output_dir)
        built = defect(_newest(output_dir))
        print(f"defect applied to {built.path.name}: {built.defect}", flush=True)

    return train


def _train_hf_nan(output_dir: str, launch: int, p: Any) -> None:
    """A callback sets one exp_avg_sq element to NaN just before the last save."""
    from transformers import TrainerCallback

    del launch, p

    class PlantNaN(TrainerCallback):  # type: ignore[misc]
        """On the last step's end (before the save), NaN into the first Adam second moment."""

        def on_step_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
            if state.global_step != MAX_STEPS:
                return
            optimizer = kwargs["optimizer"]
            first = optimizer.param_groups[0]["params"][0]
            optimizer.state[first]["exp_avg_sq"].view(-1)[0] = math.nan
            print(f"step {state.global_step}: exp_avg_sq[0] of the first parameter set to NaN",
                  flush=True)

    _hf_run(output_dir, callbacks=[PlantNaN()])


def _train_hf_multirank(output_dir: str, launch: int, p: Any) -> None:
    """torchrun 4 ranks of the HF recipe (gloo, CPU); then rank 2's newest RNG file is lost."""
    del launch, p
    cmd = [
        sys.executable, "-m", "torch.distributed.run", "--standalone",
        "--nproc_per_node", str(WORLD), os.path.relpath(__file__), "--rank-worker", output_dir,
    ]
    sys.stdout.flush()
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    rc = subprocess.run(cmd, env=env, timeout=LAUNCH_TIMEOUT, check=False).returncode
    if rc:
        raise SystemExit(rc)
    built = builders().remove_rank_rng(_newest(output_dir), MISSING_RANK)
    print(f"defect applied to {built.path.name}: {built.defect}", flush=True)


def _rank_worker(output_dir: str) -> None:
    """One rank of :func:`_train_hf_multirank` (run by torchrun)."""
    _hf_run(output_dir, ddp_backend="gloo", per_device_train_batch_size=2)


def _plain_logger(output_dir: str, config: dict[str, Any]) -> Any:
    """make.py's plain-loop logger (TensorBoard ``train/*`` + a line per step)."""
    import make  # the sample maker beside this file (imported lazily: it imports us)

    return make._PlainLogger(output_dir, make._plain_config(**config))


def _train_plain(output_dir: str, data_state: str | None, legacy: bool = False) -> Any:
    """Plain loop + torch.save of its state, logging every step."""
    logger = _plain_logger(output_dir, {
        "learning_rate": 1e-2, "warmup_steps": 2, "lr_scheduler_type": "linear",
        "max_grad_norm": 1.0, "max_steps": PLAIN_STEPS, "per_device_train_batch_size": 8,
        "optimizer": "AdamW", "grad_scaler": True,
    })
    built = builders().plain_checkpoint(
        Path(output_dir), steps=PLAIN_STEPS, data_state=data_state, name=PLAIN_FILE,
        log=lambda step, scalars: logger.step(step, **scalars), counters=data_state is not None,
        legacy=legacy,
    )
    logger.close()
    print(f"saved {built.path.name}: keys {built.detail['keys']}", flush=True)
    return built


def _train_plain_stateful(output_dir: str, launch: int, p: Any) -> None:
    """Plain loop with a StatefulDataLoader, saved with its state."""
    del launch, p
    _train_plain(output_dir, "stateful")


def _train_plain_no_data(output_dir: str, launch: int, p: Any) -> None:
    """Plain loop, saved without any data position (no loader state, step or epoch)."""
    del launch, p
    _train_plain(output_dir, None)


def _train_plain_hostile_legacy(output_dir: str, launch: int, p: Any) -> None:
    """Plain loop saved in torch's legacy format; a payload in its first (magic) pickle."""
    del launch, p
    built = _train_plain(output_dir, "stateful", legacy=True)
    built = builders().hostile_pickle(built, PLAIN_FILE, marker=Path(HOSTILE_MARKER))
    print(f"defect applied to {built.path.name}: {built.defect}", flush=True)


def _train_accelerate(output_dir: str, launch: int, p: Any) -> None:
    """accelerate loop (stateful dataloader) and ``save_state``."""
    del launch, p
    logger = _plain_logger(output_dir, {
        "learning_rate": 1e-2, "warmup_steps": 2, "lr_scheduler_type": "linear",
        "max_grad_norm": 1.0, "max_steps": MAX_STEPS, "per_device_train_batch_size": 8,
        "framework": "accelerate",
    })
    built = builders().accelerate_state(
        Path(output_dir) / ACCELERATE_DIR, steps=MAX_STEPS,
        log=lambda step, scalars: logger.step(step, **scalars),
    )
    logger.close()
    print(f"saved {ACCELERATE_DIR}: {', '.join(built.files)}", flush=True)


DCP_DIR = f"step_{PLAIN_STEPS}"


def _train_layout(kind: str) -> Callable[[str, int, Any], None]:
    """A plain loop saved in another framework's layout (DeepSpeed, DCP, Lightning)."""

    def train(output_dir: str, launch: int, p: Any) -> None:
        del launch, p
        logger = _plain_logger(output_dir, {
            "learning_rate": 1e-2, "warmup_steps": 2, "lr_scheduler_type": "linear",
            "max_grad_norm": 1.0, "max_steps": PLAIN_STEPS, "per_device_train_batch_size": 8,
            "framework": kind,
        })
        b, out = builders(), Path(output_dir)
        log = lambda step, scalars: logger.step(step, **scalars)  # noqa: E731
        if kind == "deepspeed":
            built = b.deepspeed_checkpoint(out, steps=PLAIN_STEPS, log=log)
        elif kind == "dcp":
            built = b.dcp_checkpoint(out / DCP_DIR, steps=PLAIN_STEPS, log=log)
        else:
            built = b.lightning_checkpoint(out, steps=PLAIN_STEPS, log=log)
        logger.close()
        print(f"saved {built.layout}: {', '.join(built.files)}", flush=True)

    return train


def _train_hf_torn(output_dir: str, launch: int, p: Any) -> None:
    """An HF run whose last save was cut before trainer_state.json (written last)."""
    del launch, p
    _hf_run(output_dir)
    built = builders().drop_trainer_state(_newest(output_dir))
    print(f"defect applied to {built.path.name}: {built.defect}", flush=True)


# --------------------------------------------------------------------------------------------
# Self-checks: what is really on disk
# --------------------------------------------------------------------------------------------


def _safetensors_ok(path: Path) -> bool:
    """Every tensor of a safetensors file reads back."""
    from safetensors import safe_open

    try:
        with safe_open(str(path), framework="pt") as f:
            for key in f.keys():
                f.get_tensor(key)
    except Exception:
        return False
    return True


def _nonfinite(obj: Any) -> int:
    """How many NaN/Inf elements the floating tensors in ``obj`` hold (recursively)."""
    import torch

    if isinstance(obj, torch.Tensor):
        return int((~torch.isfinite(obj)).sum()) if obj.is_floating_point() else 0
    if isinstance(obj, dict):
        return sum(_nonfinite(v) for v in obj.values())
    if isinstance(obj, list | tuple):
        return sum(_nonfinite(v) for v in obj)
    return 0


def _pickle_status(path: Path, weights_only_ok: bool = True) -> tuple[str, Any]:
    """(``missing`` / ``unsafe`` / ``corrupt`` / ``ok``, the object or the bad global)."""
    import torch

    if not path.is_file():
        return "missing", None
    bad = [g for g in builders().pickle_globals(path) if g in DANGEROUS_GLOBALS]
    if bad:
        return "unsafe", bad[0]
    try:
        obj = torch.load(path, weights_only=weights_only_ok, map_location="cpu")
    except Exception:
        return "corrupt", None
    return ("corrupt" if _nonfinite(obj) else "ok"), obj


def _hf_components(ckpt: Path, world_size: int) -> dict[str, str]:
    """Status of each component of an HF checkpoint folder, from its files."""
    comps: dict[str, str] = {}
    weights = ckpt / "model.safetensors"
    comps["weights"] = ("ok" if _safetensors_ok(weights) else "corrupt") if weights.is_file() \
        else "missing"
    comps["optimizer"], _ = _pickle_status(ckpt / "optimizer.pt")
    comps["scheduler"], _ = _pickle_status(ckpt / "scheduler.pt")
    names = ["rng_state.pth"] if world_size == 1 else [
        f"rng_state_{r}.pth" for r in range(world_size)]
    rng = [_pickle_status(ckpt / n, weights_only_ok=False)[0] for n in names]
    comps["rng"] = next((s for s in ("unsafe", "corrupt", "missing") if s in rng), "ok")
    state = ckpt / "trainer_state.json"
    if not state.is_file():
        comps["trainer_state"] = "missing"
    else:
        step = json.loads(state.read_text(encoding="utf-8"))["global_step"]
        comps["trainer_state"] = "ok" if step == int(ckpt.name.split("-")[1]) else "inconsistent"
    comps["training_args"], _ = _pickle_status(ckpt / "training_args.bin",
                                               weights_only_ok=False)
    comps["grad_scaler"] = "ok" if (ckpt / "scaler.pt").is_file() else "not_applicable"
    return comps


#: (component, status) -> cause, in the order a verdict names them
CAUSES = (
    (("weights", "corrupt"), "torn_checkpoint"),
    (("trainer_state", "missing"), "torn_checkpoint"),
    (("training_args", "unsafe"), "unsafe_pickle"),
    (("rng", "unsafe"), "unsafe_pickle"),
    (("weights", "unsafe"), "unsafe_pickle"),
    (("optimizer", "missing"), "missing_optimizer_state"),
    (("optimizer", "corrupt"), "nonfinite_state"),
    (("scheduler", "missing"), "scheduler_not_restored"),
    (("rng", "missing"), "rng_not_restored"),
    (("data_position", "missing"), "sampler_not_restored"),
)
GOOD = ("ok", "not_applicable")


def _resumable(comps: dict[str, str]) -> bool:
    """Every component ok or not applicable."""
    return all(s in GOOD for s in comps.values())


def _label(run_dir: Path, picked: str, step: int, comps: dict[str, str], *,
           newest_resumable: str | None, world_size: int = 1, culprit_rank: int | None = None,
           scan_values: bool = False, **facts: Any) -> dict[str, Any]:
    """The label of a checkpoint run, from the picked checkpoint's component statuses."""
    bad = [(c, s) for c, s in comps.items() if s not in GOOD]
    causes = [cause for key, cause in CAUSES if key in bad]
    _require(bool(causes) == bool(bad), f"no cause for {bad}")
    log = (run_dir / "train.log").read_text(encoding="utf-8", errors="replace")
    return {
        "family": "resume" if bad else "healthy",
        "cause": causes[0] if causes else None,
        "first_bad_step": step if bad else None,
        "culprit_rank": culprit_rank,
        "resumable": not bad,
        "checkpoint": picked,
        "newest_resumable": newest_resumable,
        "components": comps,
        "broken": [c for c, _ in bad],
        "checkpoint_world_size": world_size,
        "scan_values": scan_values,
        "training_log": "{'loss':" in log or "step 1: loss=" in log,
        **facts,
    }


def _hf_checkpoints(run_dir: Path) -> list[Path]:
    """The ``checkpoint-N`` folders, newest first."""
    return sorted(run_dir.glob("checkpoint-*"), key=lambda p: -int(p.name.split("-")[1]))


def _check_hf(run_dir: Path, world_size: int = 1) -> tuple[dict[str, Any], dict[str, Any]]:
    """Common HF checks; (kwargs for :func:`_label`, the picked checkpoint's components)."""
    ckpts = _hf_checkpoints(run_dir)
    _require([c.name for c in ckpts] == [f"checkpoint-{MAX_STEPS}", f"checkpoint-{SAVE_STEPS}"],
             f"checkpoints {[c.name for c in ckpts]}")
    _require((run_dir / "trainer_state.json").is_file(), "no root trainer_state.json")
    state = json.loads((run_dir / "trainer_state.json").read_text(encoding="utf-8"))
    _require(state["global_step"] == MAX_STEPS, f"global_step {state['global_step']}")
    statuses = {c.name: _hf_components(c, world_size) for c in ckpts}
    older = statuses[f"checkpoint-{SAVE_STEPS}"]
    _require(_resumable(older), f"the older checkpoint is not good: {older}")
    newest_ok = next((name for name, comps in statuses.items() if _resumable(comps)), None)
    picked = ckpts[0].name
    return ({"newest_resumable": newest_ok, "world_size": world_size},
            statuses[picked])


def _expect_broken(comps: dict[str, str], component: str, status: str) -> None:
    """Exactly ``component`` is bad, with ``status``."""
    bad = {c: s for c, s in comps.items() if s not in GOOD}
    _require(bad == {component: status}, f"expected {component}={status}, got {bad}")


def _check_hf_good(run_dir: Path, p: Any) -> dict[str, Any]:
    """Both checkpoints complete."""
    del p
    kw, comps = _check_hf(run_dir)
    _require(_resumable(comps), f"the good run's newest checkpoint: {comps}")
    return _label(run_dir, f"checkpoint-{MAX_STEPS}", MAX_STEPS, comps, **kw)


def _hf_defect_check(component: str, status: str, **extra: Any
                     ) -> Callable[[Path, Any], dict[str, Any]]:
    """Self-check of an HF defect run: only ``component`` of the newest is ``status``."""

    def check(run_dir: Path, p: Any) -> dict[str, Any]:
        del p
        kw, comps = _check_hf(run_dir)
        _expect_broken(comps, component, status)
        return _label(run_dir, f"checkpoint-{MAX_STEPS}", MAX_STEPS, comps, **kw, **extra)

    return check


def _check_hf_nan(run_dir: Path, p: Any) -> dict[str, Any]:
    """The NaN the callback planted is in the saved optimizer.pt, nowhere else."""
    import torch

    del p
    kw, comps = _check_hf(run_dir)
    _expect_broken(comps, "optimizer", "corrupt")
    optim = torch.load(run_dir / f"checkpoint-{MAX_STEPS}" / "optimizer.pt", weights_only=True)
    bad = {
        f"state.{i}.{k}": int(torch.isnan(v).sum())
        for i, entry in optim["state"].items() for k, v in entry.items()
        if isinstance(v, torch.Tensor) and v.is_floating_point() and torch.isnan(v).any()
    }
    _require(bad == {"state.0.exp_avg_sq": 1}, f"NaN elements {bad}")
    return _label(run_dir, f"checkpoint-{MAX_STEPS}", MAX_STEPS, comps, **kw, scan_values=True,
                  nonfinite_tensors=bad)


def _check_hf_hostile(run_dir: Path, p: Any) -> dict[str, Any]:
    """training_args.bin calls os.system (by name: posix.system) before building the args."""
    del p
    kw, comps = _check_hf(run_dir)
    _expect_broken(comps, "training_args", "unsafe")
    path = run_dir / f"checkpoint-{MAX_STEPS}" / "training_args.bin"
    found = builders().pickle_globals(path)
    _require(found[0] == "posix.system", f"globals {found[:3]}")
    _require(not Path(HOSTILE_MARKER).exists(), "the payload ran")
    return _label(run_dir, f"checkpoint-{MAX_STEPS}", MAX_STEPS, comps, **kw,
                  unsafe_global="posix.system", unsafe_file=f"checkpoint-{MAX_STEPS}/"
                  "training_args.bin")


def _check_hf_multirank(run_dir: Path, p: Any) -> dict[str, Any]:
    """4 ranks really ran; the newest checkpoint lacks rank 2's RNG file only."""
    del p
    state = json.loads((run_dir / "trainer_state.json").read_text(encoding="utf-8"))
    # 64 examples, 2 per rank and step: one epoch in 8 steps only with 4 ranks
    _require(state["log_history"][-1]["epoch"] == 1.0, "the job did not run on 4 ranks")
    older = run_dir / f"checkpoint-{SAVE_STEPS}"
    _require(sorted(f.name for f in older.glob("rng_state*")) ==
             [f"rng_state_{r}.pth" for r in range(WORLD)], "the Trainer's per-rank RNG files")
    kw, comps = _check_hf(run_dir, world_size=WORLD)
    _expect_broken(comps, "rng", "missing")
    present = sorted(int(re.findall(r"\d+", f.name)[0]) for f in
                     (run_dir / f"checkpoint-{MAX_STEPS}").glob("rng_state_*.pth"))
    missing = sorted(set(range(WORLD)) - set(present))
    _require(missing == [MISSING_RANK], f"missing ranks {missing}")
    return _label(run_dir, f"checkpoint-{MAX_STEPS}", MAX_STEPS, comps, **kw,
                  culprit_rank=MISSING_RANK, rng_files_present=present)


def _plain_components(obj: dict[str, Any]) -> dict[str, str]:
    """Components of a plain ``torch.save`` dict, from its keys and values."""
    def has(*keys: str) -> str:
        return "ok" if any(k in obj for k in keys) else "missing"

    comps = {
        "weights": has("model", "state_dict"), "optimizer": has("optimizer"),
        "scheduler": has("scheduler", "lr_scheduler"), "grad_scaler": has("scaler"),
        "rng": has("rng"), "data_position": has("dataloader", "sampler", "step", "epoch"),
    }
    if "optimizer" in obj and _nonfinite(obj["optimizer"]):
        comps["optimizer"] = "corrupt"
    return comps


def _check_plain(run_dir: Path, data: bool) -> dict[str, Any]:
    """The plain loop's checkpoint, read with weights_only (numpy RNG allowed by name)."""
    import numpy as np
    import torch

    path = run_dir / PLAIN_FILE
    allowed = [np.ndarray, np.dtype, np._core.multiarray._reconstruct, type(np.dtype(np.uint32))]
    with torch.serialization.safe_globals(allowed):  # the numpy RNG state, nothing else
        obj = torch.load(path, weights_only=True)
    sched = obj.get("scheduler", obj.get("lr_scheduler"))
    _require(sched["last_epoch"] == PLAIN_STEPS, f"scheduler at {sched['last_epoch']}")
    comps = _plain_components(obj)
    if data:
        _require(comps["data_position"] == "ok", "no data position")
        _require(obj["dataloader"]["_num_yielded"] == PLAIN_STEPS % 8, "dataloader position")
    else:
        _expect_broken(comps, "data_position", "missing")
    resumable = _resumable(comps)
    return _label(run_dir, PLAIN_FILE, PLAIN_STEPS, comps,
                  newest_resumable=PLAIN_FILE if resumable else None, keys=sorted(obj))


def _check_plain_hostile_legacy(run_dir: Path, p: Any) -> dict[str, Any]:
    """A legacy (non-zip) torch file whose magic-number pickle calls os.system first."""
    import zipfile

    del p
    path = run_dir / PLAIN_FILE
    _require(not zipfile.is_zipfile(path), "not a legacy torch file")
    found = builders().pickle_globals(path)
    _require(found[0] == "posix.system", f"globals {found[:3]}")
    _require("torch._utils._rebuild_tensor_v2" in found, "the checkpoint's own pickle")
    _require(not Path(HOSTILE_MARKER).exists(), "the payload ran")
    comps = {"weights": "unsafe"}  # one file holds everything: the whole of it is unsafe
    return _label(run_dir, PLAIN_FILE, PLAIN_STEPS, comps, newest_resumable=None,
                  unsafe_global="posix.system", unsafe_file=PLAIN_FILE,
                  note="the payload is in the first of the legacy format's pickles (the magic "
                  "number), which torch.load(weights_only=False) unpickles before anything "
                  "else")


def _check_accelerate(run_dir: Path, p: Any) -> dict[str, Any]:
    """model, optimizer, scheduler, RNG and the dataloader state all there and loadable."""
    del p
    folder = run_dir / ACCELERATE_DIR
    comps = {
        "weights": "ok" if _safetensors_ok(folder / "model.safetensors") else "corrupt",
        "optimizer": _pickle_status(folder / "optimizer.bin")[0],
        "scheduler": _pickle_status(folder / "scheduler.bin")[0],
        "rng": "ok" if (folder / "random_states_0.pkl").is_file() and not any(
            g in DANGEROUS_GLOBALS
            for g in builders().pickle_globals(folder / "random_states_0.pkl")) else "missing",
        "data_position": _pickle_status(folder / "dl_state_dict.bin", weights_only_ok=False)[0],
    }
    _require(_resumable(comps), f"accelerate state {comps}")
    optim = _pickle_status(folder / "optimizer.bin")[1]
    steps = {int(s["step"]) for s in optim["state"].values()}
    _require(steps == {MAX_STEPS}, f"optimizer steps {steps}")
    return _label(run_dir, ACCELERATE_DIR, MAX_STEPS, comps, newest_resumable=ACCELERATE_DIR)


def _check_deepspeed(run_dir: Path, p: Any) -> dict[str, Any]:
    """``latest`` names the step folder; the model states and every rank's ZeRO partition."""
    import torch

    del p
    b = builders()
    tag = (run_dir / "latest").read_text(encoding="utf-8").strip()
    _require(tag == f"global_step{PLAIN_STEPS}", f"latest = {tag}")
    folder = run_dir / tag
    model = torch.load(folder / "mp_rank_00_model_states.pt", weights_only=False)
    _require(model["global_steps"] == PLAIN_STEPS and not _nonfinite(model["module"]), "model")
    ranks = sorted(folder.glob("zero_pp_rank_*_mp_rank_00_optim_states.pt"))
    _require(len(ranks) == model["dp_world_size"], f"{len(ranks)} optimizer partitions")
    with b._fake_module("deepspeed.runtime.fp16.loss_scaler",
                        LossScaler=type("LossScaler", (), {})):
        optims = [torch.load(f, weights_only=False)["optimizer_state_dict"] for f in ranks]
    _require(all(o["partition_count"] == [len(ranks)] for o in optims), "partition counts")
    comps = {
        "weights": "ok",
        "optimizer": "corrupt" if any(_nonfinite(o["base_optimizer_state"]) for o in optims)
        else "ok",
        "scheduler": "ok" if model["lr_scheduler"]["last_epoch"] == PLAIN_STEPS else "missing",
    }
    return _label(run_dir, tag, PLAIN_STEPS, comps, newest_resumable=tag,
                  world_size=len(ranks), zero_stage=optims[0]["zero_stage"])


def _check_dcp(run_dir: Path, p: Any) -> dict[str, Any]:
    """The DCP folder loads back (``dcp.load`` into a template) with its step and scheduler."""
    import warnings

    import torch.distributed.checkpoint as dcp

    del p
    folder = run_dir / DCP_DIR
    _require(sorted(f.name for f in folder.iterdir()) == [".metadata", "__0_0.distcp"],
             "DCP files")
    model = builders().tiny_mlp()
    state = {"model": model.state_dict(), "step": 0, "lr_scheduler": {"last_epoch": 0}}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        dcp.load(state, checkpoint_id=str(folder))
    _require(state["step"] == PLAIN_STEPS == state["lr_scheduler"]["last_epoch"], "step")
    comps = {"weights": "corrupt" if _nonfinite(state["model"]) else "ok", "scheduler": "ok"}
    return _label(run_dir, DCP_DIR, PLAIN_STEPS, comps, newest_resumable=DCP_DIR)


def _check_lightning(run_dir: Path, p: Any) -> dict[str, Any]:
    """One ``.ckpt`` with the keys Lightning writes, at step 12."""
    import torch

    del p
    ckpts = sorted(run_dir.glob("lightning_logs/version_0/checkpoints/*.ckpt"))
    _require(len(ckpts) == 1, f"checkpoints {ckpts}")
    obj = torch.load(ckpts[0], weights_only=False)
    _require(obj["global_step"] == PLAIN_STEPS, f"global_step {obj['global_step']}")
    comps = {
        "weights": "ok" if obj["state_dict"] else "missing",
        "optimizer": "corrupt" if _nonfinite(obj["optimizer_states"]) else "ok",
        "scheduler": "ok" if obj["lr_schedulers"] else "missing",
    }
    rel = str(ckpts[0].relative_to(run_dir))
    return _label(run_dir, rel, PLAIN_STEPS, comps, newest_resumable=rel,
                  lightning_keys=sorted(obj))


# --------------------------------------------------------------------------------------------
# The registry
# --------------------------------------------------------------------------------------------




def _verdict(lb: dict[str, Any]) -> str:
    """``resume / cause: <component> <status> in <checkpoint>; newest resumable ...``."""
    if lb["resumable"]:
        return f"resumable from `{lb['checkpoint']}` (every component ok)"
    broken = ", ".join(f"{c} {lb['components'][c]}" for c in lb["broken"])
    newest = lb["newest_resumable"]
    tail = f"; newest resumable: `{newest}`" if newest else "; nothing resumable"
    scan = " (found by the value scan, on by default)" if lb["scan_values"] else ""
    return f"not resumable{scan}: resume / {lb['cause']}: {broken} in `{lb['checkpoint']}`{tail}"


_HF = (f"tiny GPT-2 (width {WIDTH}), HF Trainer, AdamW 5e-3, linear schedule with 2 warm-up "
       f"steps, clip 1.0, {MAX_STEPS} steps, checkpoints {SAVE_STEPS} and {MAX_STEPS}")
_CK = f"checkpoint-{MAX_STEPS}"
_B = builders  # the builder functions are looked up when a run is made

SPECS: tuple[Spec, ...] = (
    Spec(
        name="ckpt_hf_good",
        situation="a complete HF Trainer checkpoint: an exact resume is possible",
        how=_HF,
        train=_train_hf_good, check=_check_hf_good, conclusion=_verdict,
    ),
    Spec(
        name="ckpt_hf_optimizer_missing",
        situation="the newest checkpoint lost optimizer.pt (the Trainer would silently "
        "restart AdamW's moments and skip the scheduler too)",
        how=_HF + f"; `{_CK}/optimizer.pt` deleted after the run",
        train=_hf_then(lambda b: _B().remove(b, "optimizer.pt")),
        check=_hf_defect_check("optimizer", "missing"), conclusion=_verdict,
    ),
    Spec(
        name="ckpt_hf_scheduler_missing",
        situation="the newest checkpoint lost scheduler.pt (the LR would restart its warm-up)",
        how=_HF + f"; `{_CK}/scheduler.pt` deleted after the run",
        train=_hf_then(lambda b: _B().remove(b, "scheduler.pt")),
        check=_hf_defect_check("scheduler", "missing"), conclusion=_verdict,
    ),
    Spec(
        name="ckpt_hf_rng_missing_one_rank",
        situation="a 4-rank job whose newest checkpoint lacks rank 2's rng_state_2.pth",
        how=_HF.replace("HF Trainer", "HF Trainer on 4 ranks (`torchrun --nproc_per_node 4`, "
                        "gloo, batch 2 per rank)")
        + f"; `{_CK}/rng_state_{MISSING_RANK}.pth` deleted after the run",
        train=_train_hf_multirank, check=_check_hf_multirank, conclusion=_verdict,
    ),
    Spec(
        name="ckpt_hf_truncated_weights",
        situation="the newest checkpoint's model.safetensors was cut in the middle (torn copy)",
        how=_HF + f"; `{_CK}/model.safetensors` truncated to half its size after the run",
        train=_hf_then(lambda b: _B().truncate(b, "model.safetensors")),
        check=_hf_defect_check("weights", "corrupt"), conclusion=_verdict,
    ),
    Spec(
        name="ckpt_hf_nan_moments",
        situation="a NaN in the saved Adam second moment (exp_avg_sq): every resume goes NaN",
        how=_HF + f"; a callback sets one element of the first parameter's exp_avg_sq to NaN "
        f"at the end of step {MAX_STEPS}, before the Trainer saves `{_CK}`",
        train=_train_hf_nan, check=_check_hf_nan, conclusion=_verdict,
    ),
    Spec(
        name="ckpt_hf_hostile_pickle",
        situation="the newest checkpoint's training_args.bin runs os.system when unpickled",
        how=_HF + f"; `{_CK}/training_args.bin`'s data.pkl gets GLOBAL posix.system + REDUCE "
        f"(`touch {HOSTILE_MARKER}`) spliced in before the real TrainingArguments",
        train=_hf_then(lambda b: _B().hostile_pickle(b, "training_args.bin",
                                                     marker=Path(HOSTILE_MARKER))),
        check=_check_hf_hostile, conclusion=_verdict,
    ),
    Spec(
        name="ckpt_hf_torn_save",
        situation="the newest checkpoint has no trainer_state.json: the save was cut before "
        "its last file (torn save)",
        how=_HF + f"; `{_CK}/trainer_state.json` deleted after the run",
        train=_train_hf_torn,
        check=_hf_defect_check("trainer_state", "missing"), conclusion=_verdict,
    ),
    Spec(
        name="ckpt_accelerate_good",
        situation="a complete accelerate save_state folder with the dataloader's position",
        how=f"MLP, accelerate (CPU, `use_stateful_dataloader=True`), AdamW 1e-2, warm-up + "
        f"linear, clip 1.0, {MAX_STEPS} steps, `save_state('{ACCELERATE_DIR}')`: "
        "model.safetensors, optimizer.bin, scheduler.bin, random_states_0.pkl, "
        "dl_state_dict.bin",
        train=_train_accelerate, check=_check_accelerate, conclusion=_verdict,
    ),
    Spec(
        name="ckpt_plain_dataloader_state",
        situation="a plain torch.save checkpoint with everything, the StatefulDataLoader "
        "position included",
        how=f"MLP, plain loop with torchdata's StatefulDataLoader, AdamW 1e-2, warm-up + "
        f"linear, clip 1.0, a real GradScaler('cpu'), {PLAIN_STEPS} steps; `torch.save` of "
        "{model, optimizer, scheduler, scaler, step, epoch, rng, dataloader}",
        train=_train_plain_stateful,
        check=lambda run_dir, p: _check_plain(run_dir, data=True), conclusion=_verdict,
    ),
    Spec(
        name="ckpt_plain_no_data_position",
        situation="a plain torch.save checkpoint without any sampler, dataloader state, step "
        "or epoch: a resume restarts the epoch from its first batch",
        how="as ckpt_plain_dataloader_state with a plain shuffled DataLoader; `torch.save` of "
        "{model, optimizer, scheduler, scaler, rng} only",
        train=_train_plain_no_data,
        check=lambda run_dir, p: _check_plain(run_dir, data=False), conclusion=_verdict,
    ),
    Spec(
        name="ckpt_plain_hostile_legacy",
        situation="a legacy (non-zip) torch.save file whose first pickle runs os.system "
        "when loaded",
        how="as ckpt_plain_dataloader_state saved with `_use_new_zipfile_serialization=False`; "
        f"GLOBAL posix.system + REDUCE (`touch {HOSTILE_MARKER}`) spliced into the magic-number "
        "pickle that torch.load reads first",
        train=_train_plain_hostile_legacy, check=_check_plain_hostile_legacy,
        conclusion=_verdict,
    ),
    Spec(
        name="ckpt_deepspeed_good",
        situation="a complete DeepSpeed ZeRO-2 checkpoint (2 ranks) with its `latest` file",
        how=f"MLP, plain loop, AdamW 1e-2, {PLAIN_STEPS} steps; saved in DeepSpeed's documented "
        "layout with torch.save (deepspeed does not install here): `latest`, "
        f"`global_step{PLAIN_STEPS}/mp_rank_00_model_states.pt` and one "
        "`zero_pp_rank_R_mp_rank_00_optim_states.pt` per rank (flat fp32 partitions + Adam "
        "state)",
        train=_train_layout("deepspeed"), check=_check_deepspeed, conclusion=_verdict,
    ),
    Spec(
        name="ckpt_dcp_good",
        situation="a torch.distributed.checkpoint folder (model, optimizer, lr_scheduler, step)",
        how=f"MLP, plain loop, AdamW 1e-2, {PLAIN_STEPS} steps; `dcp.save` in one process into "
        f"`{DCP_DIR}/` (`.metadata` + `__0_0.distcp`)",
        train=_train_layout("dcp"), check=_check_dcp, conclusion=_verdict,
    ),
    Spec(
        name="ckpt_lightning_good",
        situation="a Lightning-layout .ckpt (state_dict, optimizer_states, lr_schedulers, "
        "loops, callbacks, global_step)",
        how=f"MLP, plain loop, AdamW 1e-2, {PLAIN_STEPS} steps; torch.save of Lightning's "
        "documented checkpoint dict (lightning does not install here) as "
        "`lightning_logs/version_0/checkpoints/epoch=E-step=N.ckpt`",
        train=_train_layout("lightning"), check=_check_lightning, conclusion=_verdict,
    ),
)


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--rank-worker":
        from worker_exit import run_then_exit  # beside this file

        run_then_exit(lambda: _rank_worker(sys.argv[2]))
    else:
        sys.exit(f"usage: {sys.argv[0]} --rank-worker OUTPUT_DIR (run by torchrun)")
