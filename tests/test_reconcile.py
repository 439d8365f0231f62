"""trainer_state points take the restart segments TensorBoard shows."""

from __future__ import annotations

from repo_paths import SAMPLE_RUNS

import autopsy
from autopsy.model import concat_scalars, make_scalars
from autopsy.readers.reconcile import align_segments


def test_resumed_sample_run_history_follows_the_relaunch() -> None:
    run = autopsy.load_run(SAMPLE_RUNS / "resumed_after_stop")
    state = run.scalars[run.scalars["source"] == "trainer_state.json"]
    by_seg = state.groupby("segment")["step"].agg(["min", "max"])
    assert by_seg.loc[0].tolist() == [1, 20]
    assert by_seg.loc[1].tolist() == [21, 40]


def test_unique_match_latest_match_and_no_match() -> None:
    tb = concat_scalars([
        make_scalars([1, 2, 3], "train/loss", [3.0, 2.0, 1.0], segment=0, source="tb"),
        make_scalars([2, 3], "train/loss", [2.0, 1.5], segment=1, source="tb"),
    ])
    state = make_scalars([1, 2, 3, 4], "loss", [3.0, 2.0, 1.5, 0.5], source="state")
    out = align_segments(concat_scalars([tb, state]), ["state"], ["tb"])
    got = out[out["source"] == "state"]["segment"].tolist()
    assert got == [0, 1, 1, 0]  # unique; both match -> latest; unique; no match -> kept


def test_nothing_to_align_returns_the_frame() -> None:
    frame = make_scalars([1], "loss", [1.0], source="state")
    assert align_segments(frame, ["state"], ["tb"]) is frame
