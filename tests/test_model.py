"""The run model: the scalars frame, series, config provenance, verdict."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np

from autopsy.model import (
    SCALAR_COLUMNS,
    ConfigValue,
    Family,
    Run,
    RunConfig,
    Verdict,
    concat_scalars,
    empty_events,
    empty_scalars,
    make_scalars,
)


def test_make_scalars_has_contract_columns_and_dtypes() -> None:
    df = make_scalars([1, 2], ["train/loss", "lr"], [0.5, float("nan")], source="a/b")
    assert list(df.columns) == list(SCALAR_COLUMNS)
    assert str(df["step"].dtype) == "int64"
    assert str(df["rank"].dtype) == "Int64"
    assert df["tag"].astype(str).tolist() == ["loss", "learning_rate"]
    assert df["raw_tag"].astype(str).tolist() == ["train/loss", "lr"]
    assert math.isnan(df["value"].iloc[1])
    assert df["wall_time"].isna().all()
    assert df["rank"].isna().all()
    assert df["source"].astype(str).tolist() == ["a/b", "a/b"]


def test_concat_keeps_categoricals_and_rows() -> None:
    a = make_scalars([1], ["loss"], [1.0], source="x")
    b = make_scalars([2], ["eval/loss"], [2.0], source="y", segment=1, rank=3)
    both = concat_scalars([a, b])
    assert len(both) == 2
    assert str(both["tag"].dtype) == "category"
    assert both["tag"].astype(str).tolist() == ["loss", "eval_loss"]
    assert both["rank"].tolist()[1] == 3
    assert both["segment"].tolist() == [0, 1]
    assert concat_scalars([]).empty


def _run(frame) -> Run:
    return Run(root=Path("."), scalars=frame, events=empty_events())


def test_series_prefers_latest_segment_at_a_step() -> None:
    seg0 = make_scalars([1, 2, 3], "loss", [3.0, 2.0, 9.0], segment=0)
    seg1 = make_scalars([3, 4], "loss", [1.5, 1.0], segment=1)
    run = _run(concat_scalars([seg0, seg1]))
    s = run.series("loss")
    assert s.index.tolist() == [1, 2, 3, 4]
    assert s.tolist() == [3.0, 2.0, 1.5, 1.0]
    assert run.series("loss", segment=0).tolist() == [3.0, 2.0, 9.0]
    assert run.segments() == [
        {"segment": 0, "first_step": 1, "last_step": 3, "points": 3},
        {"segment": 1, "first_step": 3, "last_step": 4, "points": 2},
    ]


def test_series_of_missing_tag_is_empty() -> None:
    run = _run(empty_scalars())
    assert run.series("loss").empty
    assert not run.has("loss")
    assert run.tags == []


def test_wide_view_aligns_tags_on_step() -> None:
    run = _run(concat_scalars([
        make_scalars([1, 2], "loss", [1.0, 0.5]),
        make_scalars([2], "lr", [1e-3]),
    ]))
    wide = run.wide()
    assert list(wide.columns) == ["learning_rate", "loss"]
    assert np.isnan(wide.loc[1, "learning_rate"])
    assert wide.loc[2, "learning_rate"] == 1e-3


def test_config_first_source_wins_and_all_are_kept() -> None:
    cfg = RunConfig([
        ConfigValue("learning_rate", 1e-4, "training_args.bin"),
        ConfigValue("learning_rate", 5e-4, "events.out.tfevents.1"),
    ])
    assert cfg["learning_rate"] == 1e-4
    assert cfg.get_entry("learning_rate").source == "training_args.bin"
    assert len(cfg.all_entries()) == 2
    assert cfg.to_dict() == {"learning_rate": {"value": 1e-4, "source": "training_args.bin"}}
    assert cfg.get("missing", 7) == 7


def test_unknown_verdict_is_not_healthy() -> None:
    v = Verdict.unknown("no rules ran")
    assert v.family is Family.UNKNOWN
    assert v.to_dict()["family"] == "unknown"
    assert v.to_dict()["message"] == "no rules ran"


def test_series_prefers_an_exact_source_over_a_rounded_text_log() -> None:
    from autopsy.model import SourceInfo

    frame = concat_scalars([
        make_scalars([1, 2], "loss", [2.34567, 1.23456], source="trainer_state.json"),
        make_scalars([1, 2, 3], "loss", [2.346, 1.235, 0.5], source="train.log"),
    ])
    for order in (frame, frame.iloc[::-1].reset_index(drop=True)):
        run = Run(root=Path("."), scalars=order, events=empty_events(),
                  sources=[SourceInfo("trainer_state.json", "trainer_state"),
                           SourceInfo("train.log", "ranklogs")])
        assert run.series("loss").tolist() == [2.34567, 1.23456, 0.5]


def test_verdict_headline() -> None:
    from autopsy.model import Family, Verdict

    v = Verdict(family=Family.NAN_INF, title="t", message="m", cause="lr_too_high", code="NAN001",
                step=31, ranks=(1, 3))
    assert v.headline() == "nan_inf · cause lr_too_high · step 31 · rank 1,3 · NAN001"
    assert Verdict.unknown("why").headline() == "unknown"


def _tags_frame(*tags: str) -> Any:
    """A scalars frame of two points per tag."""
    from autopsy.model.scalars import concat_scalars, make_scalars

    return concat_scalars([make_scalars([1, 2], t, [2.0, 1.0]) for t in tags])


def test_the_only_training_loss_series_is_the_loss() -> None:
    """A run whose only training-side ``*loss`` series is ``ctc_loss`` has it as ``loss``
    (raw tag kept); two parts with no total, an existing ``loss`` or an eval loss alone
    change nothing."""
    from autopsy.model.scalars import name_sole_series

    named = name_sole_series(_tags_frame("ctc_loss", "val_ctc_loss", "lr"))
    assert sorted(set(named["tag"].astype(str))) == ["learning_rate", "loss", "val_ctc_loss"]
    assert set(named.loc[named["tag"] == "loss", "raw_tag"].astype(str)) == {"ctc_loss"}
    for unchanged in (("box_loss", "cls_loss"), ("loss", "aux_loss"), ("val_loss",)):
        frame = _tags_frame(*unchanged)
        assert name_sole_series(frame) is frame
    # an MXNet custom metric printed as ``lossvalue=`` is the objective too
    named = name_sole_series(_tags_frame("lossvalue", "throughput"))
    assert set(named.loc[named["tag"] == "loss", "raw_tag"].astype(str)) == {"lossvalue"}


def test_a_leftover_empty_category_does_not_block_the_name() -> None:
    """A ``loss`` category with no rows left (rows filtered away) is no ``loss`` series."""
    from autopsy.model.scalars import name_sole_series

    frame = _tags_frame("ctc_loss", "loss")
    frame = frame[frame["tag"] != "loss"]
    assert set(name_sole_series(frame)["tag"].astype(str)) == {"loss"}


def test_a_keras_multi_output_models_only_accuracies_are_its_accuracies() -> None:
    """Keras names a multi-output model's metrics after the output (``out_caps_acc``,
    ``val_out_caps_acc``): the only training-side and the only eval-side accuracy are the
    run's accuracy and eval accuracy; two (top-1 and top-5) stay as they are."""
    from autopsy.model.scalars import name_sole_series

    named = name_sole_series(_tags_frame("loss", "out_caps_acc", "val_out_caps_acc",
                                         "val_loss"))
    assert sorted(set(named["tag"].astype(str))) == ["accuracy", "eval_accuracy",
                                                     "eval_loss", "loss"]
    two = _tags_frame("loss", "top1_acc", "top5_acc")
    assert name_sole_series(two) is two


def test_a_best_so_far_series_is_never_the_runs_accuracy_or_loss() -> None:
    """``best_test_acc`` or ``best_loss`` is a running extreme: it flattens what the run did,
    so it never stands in for the accuracy or the loss."""
    from autopsy.model.scalars import name_sole_series

    for tags in (("loss", "best_acc"), ("best_loss", "acc_top"), ("loss", "best_val_acc")):
        frame = _tags_frame(*tags)
        assert name_sole_series(frame) is frame
