"""End to end: `autopsy timeline` equals tensorboard's own parse, value for value.

The run has old-style and tensor-style scalars, NaN/Inf values, and a restart
(a second writer going back in steps), all written by torch's SummaryWriter.
"""

from __future__ import annotations

import io
import math
from pathlib import Path

import numpy as np
import pandas as pd
from click.testing import CliRunner

from autopsy.cli import cli


def _write_run(logdir: Path) -> None:
    from torch.utils.tensorboard import SummaryWriter

    first = SummaryWriter(log_dir=str(logdir))
    for step in range(1, 31):
        first.add_scalar("train/loss", 3.0 / step, step)
        first.add_scalar("train/grad_norm", float("nan") if step == 30 else 0.1 * step, step,
                         new_style=True)
        first.add_scalar("train/learning_rate", float("inf") if step == 29 else 1e-4, step)
    first.close()
    second = SummaryWriter(log_dir=str(logdir))  # the relaunch: steps go back to 21
    for step in range(21, 41):
        second.add_scalar("train/loss", 1.0 / step, step)
        second.add_scalar("train/grad_norm", -float("inf") if step == 40 else 0.2, step,
                          new_style=True)
    second.close()


def _tensorboard_parse(logdir: Path) -> pd.DataFrame:
    from tensorboard.backend.event_processing.event_file_loader import EventFileLoader
    from tensorboard.util import tensor_util

    rows = []
    for path in sorted(logdir.glob("events.out.tfevents.*")):
        for event in EventFileLoader(str(path)).Load():
            for value in event.summary.value:
                kind = value.WhichOneof("value")
                if kind == "simple_value":
                    v = float(value.simple_value)
                elif kind == "tensor":
                    v = float(tensor_util.make_ndarray(value.tensor).item())
                else:
                    continue
                rows.append((path.name, event.step, value.tag, v, event.wall_time))
    return pd.DataFrame(rows, columns=["file", "step", "raw_tag", "value", "wall_time"])


def test_timeline_equals_tensorboard_parse(tmp_path: Path) -> None:
    logdir = tmp_path / "run"
    _write_run(logdir)
    result = CliRunner().invoke(cli, ["timeline", str(logdir)], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    ours = pd.read_csv(io.StringIO(result.output))
    ours["file"] = ours["source"].map(lambda s: Path(s).name)
    theirs = _tensorboard_parse(logdir)
    assert len(ours) == len(theirs) == 130

    key = ["file", "step", "raw_tag"]
    merged = theirs.merge(ours, on=key, how="outer", suffixes=("_tb", "_ours"), indicator=True)
    assert (merged["_merge"] == "both").all()
    for tb, mine in zip(merged["value_tb"], merged["value_ours"], strict=True):
        assert (math.isnan(tb) and math.isnan(mine)) or tb == mine, (tb, mine)
    np.testing.assert_allclose(merged["wall_time_ours"], merged["wall_time_tb"], rtol=0,
                               atol=1e-6)
    assert np.isinf(ours["value"]).sum() == 2

    # the relaunch is segment 1, and the pre-restart tail (steps 21..30) is kept in segment 0
    seg = ours.groupby("segment")["step"].agg(["min", "max"])
    assert seg.loc[0].tolist() == [1, 30]
    assert seg.loc[1].tolist() == [21, 40]
    canon = set(ours["tag"])
    assert canon == {"loss", "grad_norm", "learning_rate"}
