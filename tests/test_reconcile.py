"""trainer_state points take the restart segments TensorBoard shows."""

from __future__ import annotations

from repo_paths import SAMPLE_RUNS

import autopsy
from autopsy.model import concat_scalars, make_scalars
from autopsy.readers import trainer_state
from autopsy.readers.reconcile import align_segments, merge_duplicates


def test_resumed_sample_run_history_follows_the_relaunch() -> None:
    run = autopsy.load_run(SAMPLE_RUNS / "resumed_after_stop")
    # trainer_state's points take TensorBoard's segments, then repeat TensorBoard's points
    # and are kept once: every loss point of the run follows the relaunch
    loss = run.scalars[run.scalars["tag"] == "loss"]
    by_seg = loss.groupby("segment")["step"].agg(["min", "max"])
    assert by_seg.loc[0].tolist() == [1, 25]  # TensorBoard keeps the pre-crash tail 21-25
    assert by_seg.loc[1].tolist() == [21, 40]
    state = trainer_state.read(SAMPLE_RUNS / "resumed_after_stop" / "trainer_state.json",
                               "trainer_state.json").scalars
    aligned = align_segments(concat_scalars([run.scalars, state]), ["trainer_state.json"],
                             [s.path for s in run.sources if s.reader == "tensorboard"])
    mine = aligned[aligned["source"] == "trainer_state.json"]
    seg = mine[mine["tag"] == "loss"].groupby("segment")["step"].agg(["min", "max"])
    assert seg.loc[0].tolist() == [1, 20] and seg.loc[1].tolist() == [21, 40]


def test_a_point_several_readers_hold_is_kept_once() -> None:
    tb = make_scalars([1, 2], "train/loss", [2.0, 1.0], source="runs/ev", wall_time=[5.0, 6.0])
    state = make_scalars([1, 2, 3], "loss", [2.0, 1.5, 0.5], source="trainer_state.json")
    log = make_scalars([1, 3], "loss", [2.00004, 0.5], source="train.log")
    other_rank_log = make_scalars([1], "loss", [2.0], source="rank1.log", rank=1)
    readers = {"runs/ev": "tensorboard", "trainer_state.json": "trainer_state",
               "train.log": "ranklogs", "rank1.log": "ranklogs"}
    out = merge_duplicates(concat_scalars([log, state, tb, other_rank_log]), readers)
    got = sorted(zip(out["step"], out["value"], out["source"].astype(str), strict=True))
    # step 1: TensorBoard's copy wins (its wall time); step 2: the values differ, both kept;
    # step 3: trainer_state's copy (full precision) wins over the log's; another rank's point
    # is its own
    assert got == [(1, 2.0, "rank1.log"), (1, 2.0, "runs/ev"), (2, 1.0, "runs/ev"),
                   (2, 1.5, "trainer_state.json"), (3, 0.5, "trainer_state.json")]
    same_reader = concat_scalars([make_scalars([1], "loss", [2.0], source="a.log"),
                                  make_scalars([1], "loss", [2.0], source="b.log")])
    assert len(merge_duplicates(same_reader, {"a.log": "ranklogs", "b.log": "ranklogs"})) == 2


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
