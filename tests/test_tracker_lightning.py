"""Lightning's own tracker loggers: a run that goes NaN at a known step, found from each
tracker's files alone (WandbLogger in offline mode, MLFlowLogger on a file store)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import autopsy
from autopsy.api import diagnose
from autopsy.model import Family

_SCRIPT = textwrap.dedent("""
    import os, sys, torch, lightning as L
    from lightning.pytorch.loggers import MLFlowLogger, WandbLogger
    out = sys.argv[1]

    class Model(L.LightningModule):
        def __init__(self):
            super().__init__()
            self.layer = torch.nn.Linear(4, 1)

        def training_step(self, batch, i):
            x, y = batch
            loss = torch.nn.functional.mse_loss(self.layer(x), y)
            if self.global_step >= 12:
                loss = loss * float("nan")
            self.log("train_loss", loss)
            return loss

        def configure_optimizers(self):
            return torch.optim.SGD(self.parameters(), lr=0.1)

    torch.manual_seed(0)
    data = torch.utils.data.TensorDataset(torch.randn(64, 4), torch.randn(64, 1))
    loggers = [WandbLogger(project="autopsy-tests", offline=True, save_dir=out),
               MLFlowLogger(experiment_name="autopsy-tests",
                            tracking_uri="file:" + os.path.join(out, "mlruns"))]
    L.Trainer(max_epochs=1, logger=loggers, log_every_n_steps=1, enable_checkpointing=False,
              enable_progress_bar=False, enable_model_summary=False).fit(
        Model(), torch.utils.data.DataLoader(data, batch_size=4))
""")


def test_a_nan_at_step_12_is_found_from_each_trackers_files(tmp_path: Path) -> None:
    env = {**os.environ, "WANDB_SILENT": "true", "MLFLOW_ALLOW_FILE_STORE": "true"}
    done = subprocess.run([sys.executable, "-c", _SCRIPT, str(tmp_path)], capture_output=True,
                          text=True, timeout=300, env=env)
    assert done.returncode == 0, done.stderr[-3000:]
    for store in ("wandb", "mlruns"):
        run = autopsy.load_run(tmp_path / store)
        v = diagnose(run).verdict
        assert v.family is Family.NAN_INF and v.step == 12, (store, v)
        assert list(run.series("loss").index) == list(range(16)), store  # 64 rows / 4
