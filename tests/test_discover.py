"""Discovery: recognise files, list the rest, survive loops, write nothing."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from autopsy.api import load_run
from autopsy.errors import RunNotFound


def test_load_run_reads_event_files_and_trainer_state(tb_run: Path) -> None:
    run = load_run(tb_run)
    readers = {s.reader for s in run.sources}
    assert {"tensorboard", "trainer_state"} <= readers
    assert "notes.txt" in run.unread
    assert {"loss", "learning_rate", "grad_norm", "epoch"} <= set(run.tags)
    tb = run.scalars[run.scalars["source"].astype(str).str.contains("tfevents")]
    assert len(tb) == 40
    assert tb["wall_time"].notna().all()
    counts = {s.path: s.scalars for s in run.sources}
    assert counts["trainer_state.json"] == 8


def test_symlink_loop_is_walked_once(tb_run: Path) -> None:
    os.symlink(tb_run, tb_run / "runs" / "loop")
    run = load_run(tb_run)
    event_sources = [s for s in run.sources if s.reader == "tensorboard"]
    assert len(event_sources) == 1


def test_symlinked_directory_is_followed_inside_the_run_only(tb_run: Path,
                                                            tmp_path: Path) -> None:
    inside = tb_run / "stored" / "runs"
    inside.parent.mkdir()
    (tb_run / "runs").rename(inside)
    os.symlink(inside, tb_run / "runs")
    run = load_run(tb_run)
    assert any(s.reader == "tensorboard" for s in run.sources)
    # a folder linked from outside the run is not walked (a link to / would walk the
    # system): a problem names it
    elsewhere = tmp_path / "elsewhere"
    inside.rename(elsewhere)
    (tb_run / "runs").unlink()
    os.symlink(elsewhere, tb_run / "runs")
    run = load_run(tb_run)
    assert not any(s.reader == "tensorboard" for s in run.sources)
    assert [p.source for p in run.problems if p.kind == "outside_link"] == ["runs"]
    assert any(s.reader == "tensorboard" for s in load_run(tb_run / "runs").sources)


def test_nothing_is_written_into_the_run(tb_run: Path, snapshot) -> None:
    before = snapshot(tb_run)
    load_run(tb_run)
    assert snapshot(tb_run) == before


def test_missing_path_raises_typed_error(tmp_path: Path) -> None:
    with pytest.raises(RunNotFound):
        load_run(tmp_path / "nope")


def test_single_file_can_be_loaded(tb_run: Path) -> None:
    event_file = next((tb_run / "runs" / "exp").glob("events.out.tfevents.*"))
    run = load_run(event_file)
    assert len(run.scalars) == 40
    assert run.sources[0].path == event_file.name


def test_broken_reader_input_is_a_problem_not_a_crash(tmp_path: Path) -> None:
    (tmp_path / "events.out.tfevents.123.host").write_bytes(b"this is not an event file\n")
    (tmp_path / "trainer_state.json").write_text('{"log_history": [{"step": 1, "loss": 0.5}, {"st')
    run = load_run(tmp_path)
    kinds = {p.kind for p in run.problems}
    assert "invalid_json" in kinds
    assert run.series("loss").tolist() == [0.5]
    assert any("tfevents" in p.source for p in run.problems)


def test_a_deeply_nested_json_copy_does_not_take_the_good_copies_down(tmp_path: Path) -> None:
    (tmp_path / "trainer_state.json").write_text("[" * 200_000)
    (tmp_path / "config.json").write_text('{"model_type": ' + "[" * 200_000)
    ckpt = tmp_path / "checkpoint-2"
    ckpt.mkdir()
    (ckpt / "trainer_state.json").write_text(
        '{"global_step": 2, "log_history": [{"step": 1, "loss": 0.9}, {"step": 2, "loss": 0.7}]}')
    run = load_run(tmp_path)
    assert run.series("loss").tolist() == [0.9, 0.7]
    nested = [p for p in run.problems if "nested too deeply" in p.what or "recursion" in p.what]
    assert {p.source for p in nested} == {"trainer_state.json", "config.json"}
    assert all(p.kind == "invalid_json" for p in nested)


def test_a_file_name_that_is_not_utf8_is_read_and_labelled_printably(tmp_path) -> None:
    import os

    from autopsy.api import load_run

    run_dir = os.fsencode(tmp_path) + b"/run"
    os.makedirs(run_dir)
    with open(run_dir + b"/rank0-\xff.log", "w", encoding="utf-8") as fh:
        fh.write("step 1 loss 1.0\nstep 2 loss 0.9\n")
    run = load_run(os.fsdecode(run_dir))
    assert not run.problems
    assert set(run.scalars["source"].astype(str)) == {"rank0-\\xff.log"}
    assert [s.path for s in run.sources] == ["rank0-\\xff.log"]


_WLM = ("| epoch   1 |   200/ 2983 batches | lr 20.00 | ms/batch  7.54 | loss  7.63 | "
        "ppl  2064.38\n"
        "| epoch   1 |   400/ 2983 batches | lr 20.00 | ms/batch  7.44 | loss  6.90 | "
        "ppl   992.27\n")


def test_a_log_under_a_name_no_log_has_is_read_when_nothing_else_is(tmp_path: Path) -> None:
    """A training log saved as ``notes.md`` (or with no extension) in a folder where no
    reader took anything: the text files are tried as logs; a config or script is not."""
    (tmp_path / "model_RNN_RELU_notes.md").write_text(_WLM, encoding="utf-8")
    (tmp_path / "config.yaml").write_text("lr: 20\n", encoding="utf-8")
    run = load_run(tmp_path)
    assert list(run.series("loss").index) == [200, 400]
    assert [s.path for s in run.sources] == ["model_RNN_RELU_notes.md"]
    assert run.unread == ["config.yaml"]


def test_a_log_named_as_one_leaves_other_text_files_unread(tmp_path: Path) -> None:
    (tmp_path / "train.log").write_text(_WLM, encoding="utf-8")
    (tmp_path / "notes.md").write_text(_WLM.replace("7.63", "9.99"), encoding="utf-8")
    run = load_run(tmp_path)
    assert list(run.series("loss")) == [7.63, 6.90]
    assert "notes.md" in run.unread
