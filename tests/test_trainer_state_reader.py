"""trainer_state.json: real Trainer output, several copies merged, damaged files salvaged."""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path

import pandas as pd
import pytest
from hf_fixtures import RUN_ARGS, trainer_run

from autopsy.model.scalars import SCALAR_COLUMNS
from autopsy.readers import trainer_state
from autopsy.readers.base import RunPart

FIXTURES = Path(__file__).parent / "fixtures" / "trainer_state"


@pytest.fixture(scope="session")
def hf_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return trainer_run(tmp_path_factory)


def read_all(root: Path) -> RunPart:
    paths = sorted(root.rglob("trainer_state.json"))
    return trainer_state.read_group(paths, [p.relative_to(root).as_posix() for p in paths])


def config_of(part: RunPart) -> dict[str, object]:
    out: dict[str, object] = {}
    for entry in part.config:
        out.setdefault(entry.key, entry.value)
    return out


def test_sniff_by_name(tmp_path: Path) -> None:
    assert trainer_state.sniff(tmp_path / "checkpoint-3" / "trainer_state.json")
    assert not trainer_state.sniff(tmp_path / "trainer_state.json.bak")
    assert not trainer_state.sniff(tmp_path / "config.json")


def test_real_run_log_history_becomes_scalars(hf_run: Path) -> None:
    part = trainer_state.read(hf_run / "trainer_state.json", "trainer_state.json")
    scalars = part.scalars
    assert scalars is not None
    assert list(scalars.columns) == list(SCALAR_COLUMNS)
    assert {c: str(t) for c, t in scalars.dtypes.items()} == SCALAR_COLUMNS
    history = json.loads((hf_run / "trainer_state.json").read_text())["log_history"]
    train = [e for e in history if "loss" in e]
    loss = scalars[scalars["raw_tag"] == "loss"]
    assert loss["step"].tolist() == [e["step"] for e in train]
    assert loss["value"].tolist() == [e["loss"] for e in train]
    assert set(scalars["tag"]) >= {"loss", "grad_norm", "learning_rate", "epoch", "eval_loss"}
    assert "eval_runtime" in set(scalars["raw_tag"])
    assert scalars["wall_time"].isna().all()
    assert scalars["rank"].isna().all()
    assert (scalars["segment"] == 0).all()
    assert set(scalars["source"]) == {"trainer_state.json"}
    assert part.problems == []


def test_real_run_summary_and_fields_go_to_config(hf_run: Path) -> None:
    part = trainer_state.read(hf_run / "trainer_state.json", "trainer_state.json")
    config = config_of(part)
    assert config["global_step"] == RUN_ARGS["max_steps"]
    assert config["max_steps"] == RUN_ARGS["max_steps"]
    for key in ("logging_steps", "save_steps", "eval_steps"):
        assert config[key] == RUN_ARGS[key]
    assert config["train_batch_size"] == RUN_ARGS["per_device_train_batch_size"]
    assert isinstance(config["train_loss_mean"], float)
    assert config["train_runtime"] > 0
    assert "total_flos" in config and "train_samples_per_second" in config
    assert "train_loss" not in config
    assert "train_runtime" not in set(part.scalars["raw_tag"])
    assert {e.source for e in part.config} == {"trainer_state.json"}


def test_real_copies_are_merged_without_duplicates(hf_run: Path) -> None:
    alone = trainer_state.read(hf_run / "trainer_state.json", "trainer_state.json").scalars
    merged = read_all(hf_run).scalars
    assert len(read_all(hf_run / "checkpoint-3").scalars) > 0  # the copies do hold points
    # every copy's points are also in the root file: the merge is the root file alone
    pd.testing.assert_frame_equal(merged, alone)
    assert set(merged["source"]) == {"trainer_state.json"}  # the most complete copy


def test_without_the_root_file_points_come_from_the_latest_checkpoint(
    hf_run: Path, tmp_path: Path
) -> None:
    copy = tmp_path / "run"
    for ckpt in ("checkpoint-3", "checkpoint-6"):
        (copy / ckpt).mkdir(parents=True)
        shutil.copy(hf_run / ckpt / "trainer_state.json", copy / ckpt)
    part = read_all(copy)
    scalars = part.scalars
    latest = "checkpoint-6/trainer_state.json"
    alone = trainer_state.read(copy / latest, latest).scalars
    pd.testing.assert_frame_equal(scalars, alone)
    assert set(scalars["source"]) == {latest}
    assert scalars["step"].max() == 6
    assert config_of(part)["global_step"] == 6
    assert part.config[0].source == "checkpoint-6/trainer_state.json"


def test_differing_copies_keep_both_values_in_later_segments() -> None:
    root = FIXTURES / "resumed_with_different_values"
    part = read_all(root)
    s = part.scalars
    assert len(s) == 12 + 2
    redone = s[s["source"] == "checkpoint-4/trainer_state.json"]
    assert redone["raw_tag"].tolist() == ["loss", "loss"]
    assert redone["step"].tolist() == [3, 4]
    assert redone["value"].iloc[0] == 9.5 and math.isnan(redone["value"].iloc[1])
    assert (redone["segment"] == 1).all()
    assert (s.loc[s["source"] == "trainer_state.json", "segment"] == 0).all()
    assert "checkpoint-2/trainer_state.json" not in set(s["source"])
    loss3 = s[(s["raw_tag"] == "loss") & (s["step"] == 3)].sort_values("segment")
    assert loss3["value"].tolist() == [1.6, 9.5]
    config = config_of(part)
    assert config["global_step"] == 6
    assert config["train_loss_mean"] == 1.6


def test_nan_equal_points_are_merged(tmp_path: Path) -> None:
    doc = {"global_step": 1, "log_history": [{"loss": float("nan"), "step": 1}]}
    for name in ("a", "b"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "trainer_state.json").write_text(json.dumps(doc))
    part = read_all(tmp_path)
    assert len(part.scalars) == 1
    assert part.scalars["source"].iloc[0] == "a/trainer_state.json"


def test_nan_infinity_and_numeric_strings() -> None:
    path = FIXTURES / "nan_inf_and_numeric_strings.json"
    part = trainer_state.read(path, "trainer_state.json")
    s = part.scalars

    def values(tag: str) -> list[float]:
        return s[s["raw_tag"] == tag].sort_values("step")["value"].tolist()

    grad = values("grad_norm")
    assert math.isnan(grad[0]) and grad[1:] == [math.inf, -math.inf, math.inf]
    assert values("learning_rate") == [1e-05, 2e-05, 3e-05, 0.5]
    loss = values("loss")
    assert loss[0] == 2.5 and math.isnan(loss[1]) and math.isnan(loss[2]) and len(loss) == 3
    assert "note" not in set(s["raw_tag"])
    assert "step" not in set(s["raw_tag"])  # a float step (4.0) is the step, not a value
    assert sorted(set(s["step"])) == [1, 2, 3, 4]
    kinds = {p.kind: p for p in part.problems}
    assert kinds["non_numeric"].count == 3  # "not a number", "oops", [1, 2]
    assert "not a number" in kinds["non_numeric"].what
    assert kinds["malformed_entry"].count == 1  # the entry without a step
    config = config_of(part)
    assert math.isnan(config["train_loss_mean"])
    assert config["train_runtime"] == 1.5
    assert "best_metric" not in config  # null: unknown


def test_truncated_file_keeps_complete_entries_and_fields() -> None:
    part = trainer_state.read(FIXTURES / "truncated_in_log_history.json", "trainer_state.json")
    assert [p.kind for p in part.problems] == ["invalid_json"]
    assert "truncated" in part.problems[0].what
    assert "2 complete log_history entries" in part.problems[0].used
    s = part.scalars
    assert sorted(set(s["step"])) == [1, 2]
    assert s[s["raw_tag"] == "loss"]["value"].tolist() == [2.25, 2.0]
    config = config_of(part)
    assert config["global_step"] == 3 and config["eval_steps"] == 500


def test_truncated_before_the_history_keeps_the_fields() -> None:
    part = trainer_state.read(FIXTURES / "truncated_before_log_history.json", "t.json")
    assert part.problems[0].kind == "invalid_json"
    assert len(part.scalars) == 0
    assert config_of(part) == {"eval_steps": 500}


def test_invalid_json_in_the_middle_is_salvaged_up_to_the_damage() -> None:
    part = trainer_state.read(FIXTURES / "invalid_in_the_middle.json", "trainer_state.json")
    problem = part.problems[0]
    assert problem.kind == "invalid_json"
    assert "line 6" in problem.what
    assert part.scalars[part.scalars["raw_tag"] == "loss"]["value"].tolist() == [2.25, 2.0]
    assert config_of(part) == {"global_step": 3}


@pytest.mark.parametrize("name", ["empty.json", "top_level_is_a_list.json"])
def test_unusable_files_are_problems(name: str) -> None:
    part = trainer_state.read(FIXTURES / name, name)
    assert [p.kind for p in part.problems] == ["invalid_json"]
    assert part.scalars is not None and len(part.scalars) == 0
    assert part.config == []


def test_unreadable_file_is_a_problem(tmp_path: Path) -> None:
    part = trainer_state.read(tmp_path / "trainer_state.json", "trainer_state.json")
    assert part.problems[0].kind == "unreadable"


def test_large_history_is_read_in_full(tmp_path: Path) -> None:
    n = 50_000
    history = [{"loss": 1.0 / (i + 1), "learning_rate": 1e-3, "step": i + 1} for i in range(n)]
    text = json.dumps({"global_step": n, "log_history": history})
    (tmp_path / "trainer_state.json").write_text(text)
    (tmp_path / "cut").mkdir()
    (tmp_path / "cut" / "trainer_state.json").write_text(text[: len(text) // 2])
    part = read_all(tmp_path)
    assert len(part.scalars) == 2 * n
    assert isinstance(part.scalars["tag"].dtype, pd.CategoricalDtype)
    assert set(part.scalars["source"]) == {"trainer_state.json"}
    assert [p.kind for p in part.problems] == ["invalid_json"]
