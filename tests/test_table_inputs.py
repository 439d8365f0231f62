"""Broken, huge and hostile metric tables: a recorded problem and the rest of the file, never
a traceback, and memory that follows what is kept (the files are read a line at a time)."""

from __future__ import annotations

from pathlib import Path

import pytest

from autopsy.readers import csvtable, epoch_csv, jsonl_metrics, log_history


def test_jsonl_over_long_line_and_garbage_cost_themselves(tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(csvtable, "MAX_LINE_BYTES", 1000)
    path = tmp_path / "metrics.json"
    path.write_bytes(b'{"iteration": 1, "total_loss": 2.0}\n' + b'{"x": "' + b"a" * 5000
                     + b'"}\n{not json\n{"iteration": 2, "total_loss": "nan"}\n')
    part = jsonl_metrics.read(path, "metrics.json")
    rows = part.scalars
    assert rows["step"].tolist() == [1, 2] and rows["value"].isna().tolist() == [False, True]
    assert [(p.kind, p.count) for p in part.problems] == [("bad_row", 2)]


def test_a_table_past_the_size_limit_keeps_its_first_part(tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(csvtable, "MAX_TABLE_BYTES", 200)
    path = tmp_path / "history.csv"
    path.write_text("epoch,loss\n" + "".join(f"{i},{1 / (i + 1):.4f}\n" for i in range(100)))
    part = epoch_csv.read(path, "history.csv")
    n = len(part.scalars)
    assert 10 < n < 30  # the rows of the first 200 bytes
    assert part.scalars["step"].tolist() == list(range(n))
    assert [p.kind for p in part.problems] == ["truncated"]


def test_nul_bytes_bad_cells_and_a_bom(tmp_path: Path) -> None:
    path = tmp_path / "training.log"
    path.write_bytes(b"\xef\xbb\xbfepoch,loss,val_loss\n0,1.5,\x00oops\n1,nan,1.2\n2,,1.1\n")
    part = epoch_csv.read(path, "training.log")
    got = sorted(zip(part.scalars["raw_tag"].astype(str), part.scalars["step"],
                     part.scalars["value"].fillna(-1), strict=True))
    assert got == [("loss", 0, 1.5), ("loss", 1, -1), ("val_loss", 1, 1.2), ("val_loss", 2, 1.1)]
    assert [(p.kind, p.count) for p in part.problems] == [("bad_value", 1)]


def test_a_huge_pasted_python_list_is_not_literal_parsed(tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(log_history, "MAX_LITERAL_CHARS", 100)
    path = tmp_path / "log_history.txt"
    path.write_text("[" + ", ".join(f"{{'loss': {i}.5, 'step': {i}}}" for i in range(50)) + "]")
    part = log_history.read(path, "log_history.txt")
    assert [p.kind for p in part.problems] == ["invalid_json"]  # recorded, not raised
    monkeypatch.setattr(log_history, "MAX_LITERAL_CHARS", 1 << 20)
    part = log_history.read(path, "log_history.txt")
    assert part.scalars["step"].tolist() == list(range(50)) and not part.problems


def test_steps_too_large_cost_their_row(tmp_path: Path) -> None:
    from autopsy.readers import trainer_state

    csv_path = tmp_path / "history.csv"
    csv_path.write_text("epoch,loss\n1e30,1.0\n2,0.5\n")
    part = epoch_csv.read(csv_path, "history.csv")
    assert part.scalars["step"].tolist() == [2]
    assert [(p.kind, p.count) for p in part.problems] == [("bad_row", 1)]
    jl = tmp_path / "metrics.json"
    jl.write_text('{"iteration": 1e300, "total_loss": 1}\n{"iteration": 2, "total_loss": 0.5}\n')
    part = jsonl_metrics.read(jl, "metrics.json")
    assert part.scalars["step"].tolist() == [2]
    assert [(p.kind, p.count) for p in part.problems] == [("bad_row", 1)]
    ts = tmp_path / "trainer_state.json"
    ts.write_text('{"log_history": [{"step": ' + "1" * 30 + ', "loss": 1.0}, '
                  '{"step": 2, "loss": 0.5}]}')
    part = trainer_state.read(ts, "trainer_state.json")
    assert part.scalars["step"].tolist() == [2]
    assert [p.kind for p in part.problems] == ["malformed_entry"]
