"""NAN006 non-finite-in-logs: the framework says the loss went NaN or the fp16 loss scale
collapsed. Fixtures: public runs of the corpus's dev half (published logs, kept as
published)."""

from __future__ import annotations

from pathlib import Path

from repo_paths import public_run

import autopsy
from autopsy.api import diagnose
from autopsy.model import Family
from autopsy.rules.engine import Diagnosis


def _diagnose(name: str) -> Diagnosis:
    return diagnose(autopsy.load_run(public_run(name)))


def test_fires_on_fairseq_minimum_loss_scale() -> None:
    d = _diagnose("fairseq_min_loss_scale_backtranslation_issue_1895")
    assert (d.verdict.code, d.verdict.family, d.verdict.cause) == (
        "NAN006", Family.NAN_INF, "fp16_overflow")


def test_fires_on_detectron2_loss_became_nan_at_its_iteration() -> None:
    d = _diagnose("detectron2_mask_rcnn_nan_iter_2137_small_batch_issue_838")
    assert (d.verdict.code, d.verdict.family, d.verdict.step) == ("NAN006", Family.NAN_INF,
                                                                   2137)
    assert not [f for f in d.findings if f.family is Family.CRASH]


def test_fires_on_a_deepspeed_scale_that_reaches_one(tmp_path: Path) -> None:
    lines = [f"[2023-03-01 10:00:{i:02d},000] [INFO] [stage_1_and_2.py:1769:step] "
             f"[deepspeed] OVERFLOW! Rank 0 Skipping step. Attempted loss scale: "
             f"{2.0 ** (16 - i):g}, reducing to {2.0 ** (15 - i):g}\n" for i in range(16)]
    (tmp_path / "train.log").write_text("".join(lines))
    d = diagnose(autopsy.load_run(tmp_path))
    assert (d.verdict.code, d.verdict.cause) == ("NAN006", "fp16_overflow")


def test_near_miss_passes_on_an_early_loss_scale_search() -> None:
    d = _diagnose("deepspeed_fp16_overflow_first_steps_hysteresis_issue_931")
    assert not [f for f in d.findings if f.code == "NAN006"]


def test_near_miss_passes_when_the_scalars_show_the_nan() -> None:
    # the scalar rules (NAN001..NAN005) own a NaN the logged loss shows
    d = _diagnose("yolo_txt_nan_all_losses_gtx1650_epoch0")
    assert d.verdict.family is Family.NAN_INF
    assert not [f for f in d.findings if f.code == "NAN006"]
