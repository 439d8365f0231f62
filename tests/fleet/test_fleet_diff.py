"""``autopsy fleet diff GOOD BAD``: config differences and where the loss curves part."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from click.testing import CliRunner
from repo_paths import SAMPLE_RUNS

from autopsy.cli import cli
from autopsy.fleet.diff import PART_POINTS, diff_runs


def _pair(tmp_path: Path) -> tuple[Path, Path]:
    """The healthy HF sample's trainer_state.json, and a copy with a larger batch size whose
    loss doubles from step 40 on."""
    src = SAMPLE_RUNS / "healthy_hf_trainer" / "trainer_state.json"
    assert src.is_file(), f"missing fixture {src}"
    good, bad = tmp_path / "good", tmp_path / "bad"
    for folder in (good, bad):
        folder.mkdir()
    shutil.copy(src, good / "trainer_state.json")
    state = json.loads(src.read_text())
    state["train_batch_size"] = 64
    for entry in state["log_history"]:
        if "loss" in entry and entry["step"] >= 40:
            entry["loss"] *= 2
    (bad / "trainer_state.json").write_text(json.dumps(state))
    return good, bad


def test_config_and_the_step_where_the_curves_part(tmp_path: Path) -> None:
    good, bad = _pair(tmp_path)
    d = diff_runs(good, bad)
    changed = {item["key"]: (item["good"], item["bad"]) for item in d["config"]}
    assert (16, 64) in changed.values()
    assert d["loss_parts"]["step"] == 40
    same = diff_runs(good, good)
    assert same["config"] == [] and same["environment"] == []
    assert same["loss_parts"]["step"] is None
    assert same["loss_parts"]["common_steps"] > PART_POINTS


def test_the_cli_prints_the_diff(tmp_path: Path) -> None:
    good, bad = _pair(tmp_path)
    runner = CliRunner()
    text = runner.invoke(cli, ["fleet", "diff", str(good), str(bad)])
    assert text.exit_code == 0, text.output
    assert "Loss curves part at step 40" in text.output and "16 -> 64" in text.output
    as_json = runner.invoke(cli, ["fleet", "diff", str(good), str(bad), "--format", "json"])
    assert json.loads(as_json.stdout)["loss_parts"]["step"] == 40
    wrong = runner.invoke(cli, ["fleet", "diff", str(good)])
    assert wrong.exit_code == 2 and "two runs" in wrong.stderr
