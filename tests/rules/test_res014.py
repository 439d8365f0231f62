"""RES014 world-size-changed: a launch on another number of ranks."""

from __future__ import annotations

from resume_runs import audit, finding, loss_curve, segmented_run

from autopsy.model import ConfigValue

BEFORE, AFTER = range(1, 56), range(51, 121)


def test_fires_when_the_ranks_in_the_scalars_change() -> None:
    run = segmented_run([{"loss": loss_curve(BEFORE)}, {"loss": loss_curve(AFTER)}],
                        ranks=[[0, 1, 2, 3], [0, 1]])
    f = finding(run, "RES014")
    assert f is not None and f.cause == "world_size_changed" and f.step == 51
    assert [e.numbers["world_size"] for e in f.evidence] == [4, 2]


def test_fires_against_the_checkpoints_saved_world_size() -> None:
    run = segmented_run([{"loss": loss_curve(BEFORE)}, {"loss": loss_curve(AFTER)}],
                        ranks=[[0, 1], [0, 1, 2, 3, 4, 5, 6, 7]],
                        checkpoints=[audit(50, world_size=2, missing=["rng"])])
    f = finding(run, "RES014")
    assert f is not None and "on 8 rank(s) after running on 2" in f.message
    assert any(e.key == "rng" for e in f.evidence)


def test_near_miss_passes_on_the_same_ranks() -> None:
    run = segmented_run([{"loss": loss_curve(BEFORE)}, {"loss": loss_curve(AFTER)}],
                        ranks=[[0, 1, 2, 3], [0, 1, 2, 3]])
    assert finding(run, "RES014") is None


def test_near_miss_passes_on_single_process_launches() -> None:
    run = segmented_run([{"loss": loss_curve(BEFORE)}, {"loss": loss_curve(AFTER)}],
                        config={"world_size": 1})
    assert finding(run, "RES014") is None


def test_fires_on_the_world_size_each_launch_logged() -> None:
    run = segmented_run([{"loss": loss_curve(BEFORE)}, {"loss": loss_curve(AFTER)}])
    run.config.add(ConfigValue("world_size", 8, "runs/events.0"))  # each launch's args summary
    run.config.add(ConfigValue("world_size", 4, "runs/events.1"))
    f = finding(run, "RES014")
    assert f is not None and "on 4 rank(s) after running on 8" in f.message
    assert "runs/events.1" in f.evidence[1].summary
