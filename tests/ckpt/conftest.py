"""Session fixtures: good checkpoints made once by the real writers (see ``builders.py``).

Each fixture returns a :class:`builders.Built`; a test that damages one copies it first
(``builders.copy_built(built, tmp_path / "x")``), so the session's copy stays good.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

import builders  # tests/ckpt is on sys.path (pytest's rootdir-relative import)


@pytest.fixture(scope="session")
def ckpt_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A session folder holding every good checkpoint."""
    return tmp_path_factory.mktemp("good_ckpts")


@pytest.fixture(scope="session")
def hf_run(ckpt_root: Path) -> builders.Built:
    """A real HF Trainer output dir: 4 steps, checkpoint-2 and checkpoint-4 (the newest)."""
    return builders.hf_trainer_run(ckpt_root / "hf_run", max_steps=4, save_steps=2)


@pytest.fixture(scope="session")
def hf_multirank(hf_run: builders.Built, tmp_path_factory: pytest.TempPathFactory
                 ) -> builders.Built:
    """``hf_run`` with ``rng_state_0.pth`` .. ``rng_state_3.pth`` in checkpoint-4."""
    dest = tmp_path_factory.mktemp("hf_multirank") / "run"
    return builders.hf_rank_rng_files(builders.copy_built(hf_run, dest), world_size=4)


@pytest.fixture(scope="session")
def accelerate_ckpt(ckpt_root: Path) -> builders.Built:
    """``Accelerator().save_state`` with a stateful dataloader (dl_state_dict.bin)."""
    return builders.accelerate_state(ckpt_root / "accelerate")


@pytest.fixture(scope="session")
def plain_stateful(ckpt_root: Path) -> builders.Built:
    """``torch.save`` dict with a StatefulDataLoader state and a GradScaler state."""
    return builders.plain_checkpoint(ckpt_root / "plain_stateful")


@pytest.fixture(scope="session")
def plain_no_data(ckpt_root: Path) -> builders.Built:
    """``torch.save`` dict without any data position, ``state_dict``/``lr_scheduler`` keys."""
    return builders.plain_checkpoint(ckpt_root / "plain_no_data", data_state=None,
                                     model_key="state_dict", scheduler_key="lr_scheduler")


@pytest.fixture(scope="session")
def deepspeed_ckpt(ckpt_root: Path) -> builders.Built:
    """A DeepSpeed ZeRO-2 folder (``latest`` + ``global_step4/``), 2 ranks."""
    return builders.deepspeed_checkpoint(ckpt_root / "deepspeed")


@pytest.fixture(scope="session")
def dcp_ckpt(ckpt_root: Path) -> builders.Built:
    """A torch.distributed.checkpoint folder saved in one process."""
    return builders.dcp_checkpoint(ckpt_root / "dcp")


@pytest.fixture(scope="session")
def lightning_ckpt(ckpt_root: Path) -> builders.Built:
    """A Lightning-layout ``.ckpt``."""
    return builders.lightning_checkpoint(ckpt_root / "lightning")
