"""Flight Recorder dumps of hung torchrun jobs (``autopsy.readers.flight_recorder``).

The fixtures in ``tests/fixtures/flight_recorder/`` are real dumps: torch 2.13 on CPU
records gloo collectives, and ``tests/fixtures/flight_recorder/make.py`` (kept) ran three
3-rank jobs under torchrun, each hung in its sixth collective, and had every rank dump its
ring with ``_dump_fr_trace`` (and ``_dump_fr_trace_json`` for the first); the torchrun output
is beside them as ``job.log``. The hang verdicts name the culprit from the dumps alone, from
the dumps with the log, and (less well: gloo's log does not say who is missing) from the log.
"""

from __future__ import annotations

import json
import pickle
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from repo_paths import REPO

import autopsy
from autopsy.api import diagnose
from autopsy.model import Family

FIXTURES = REPO / "tests" / "fixtures" / "flight_recorder"
NEVER = "rank1_never_enters"
BIGGER = "rank2_bigger_tensor"
BROADCAST = "rank2_broadcast_others_all_reduce"


def _case(tmp_path: Path, name: str, *, pickles: bool = True, jsons: bool = False,
          log: bool = False) -> Path:
    src = FIXTURES / name
    assert src.is_dir(), f"missing fixture {src}"
    out = tmp_path / name
    out.mkdir()
    for f in sorted(src.iterdir()):
        if (f.name == "job.log" and log) or (f.suffix == ".json" and jsons) or (
                f.name.startswith("nccl_trace_rank_") and not f.suffix and pickles):
            shutil.copy(f, out / f.name)
    return out


def _verdict(path: Path) -> tuple[Family, str | None, tuple[int, ...], autopsy.Run]:
    run = autopsy.load_run(path)
    v = diagnose(run).verdict
    return v.family, v.cause, tuple(v.ranks), run


@pytest.mark.parametrize("log", [False, True])
def test_the_rank_that_never_entered_is_the_culprit(tmp_path: Path, log: bool) -> None:
    family, cause, ranks, run = _verdict(_case(tmp_path, NEVER, log=log))
    assert (family, cause, ranks) == (Family.HANG, "dead_rank", (1,))
    # rank 1 wrote nothing (gloo's lines are the others'): not "stopped logging"
    assert "rank(s) [1] wrote nothing in these files" in diagnose(run).verdict.message
    desync = run.events[run.events["kind"] == "desync_report"]
    (d,) = [x for x in desync["details"] if x.get("from") == "flight_recorder"]
    assert d["lagging_ranks"] == [1] and d["collective"] == 6 and d["last_enqueued"] == {1: 5}
    waits = run.events[run.events["kind"] == "collective_timeout"]
    fr = waits[waits["details"].map(lambda x: x.get("from") == "flight_recorder")]
    assert sorted(fr["rank"].astype(int)) == [0, 2]
    first = fr["details"].iloc[0]
    assert first["OpType"] == "all_reduce" and first["NumelIn"] == 10
    assert first["user_frame"]["file"].endswith("job.py")


def test_the_json_form_gives_the_same_verdict(tmp_path: Path) -> None:
    family, cause, ranks, _ = _verdict(_case(tmp_path, NEVER, pickles=False, jsons=True))
    assert (family, cause, ranks) == (Family.HANG, "dead_rank", (1,))


@pytest.mark.parametrize(("name", "what"), [(BIGGER, "TensorShape [[12]] instead of [[10]]"),
                                            (BROADCAST, "OpType broadcast instead of all_reduce")])
@pytest.mark.parametrize("log", [False, True])
def test_a_mismatched_collective_names_the_odd_rank(tmp_path: Path, name: str, what: str,
                                                    log: bool) -> None:
    path = _case(tmp_path, name, log=log)
    run = autopsy.load_run(path)
    v = diagnose(run).verdict
    assert (v.family, v.cause, tuple(v.ranks), v.code) == (
        Family.HANG, "collective_mismatch", (2,), "HANG003")
    assert what in v.message and "#6" in v.message


def test_the_log_alone_cannot_name_who_never_entered(tmp_path: Path) -> None:
    family, _, ranks, _ = _verdict(_case(tmp_path, NEVER, pickles=False, log=True))
    assert family is Family.HANG and 1 not in ranks  # what the dumps add


def test_a_missing_dump_is_named_and_the_rest_used(tmp_path: Path) -> None:
    path = _case(tmp_path, NEVER)
    (path / "nccl_trace_rank_0").unlink()
    run = autopsy.load_run(path)
    (p,) = [p for p in run.problems if p.kind == "missing_dump"]
    assert "rank(s) [0]" in p.what and "3 ranks" in p.what
    v = diagnose(run).verdict
    assert v.family is Family.HANG and tuple(v.ranks) == (1,)


def test_truncated_unsafe_and_mixed_version_dumps_are_problems(tmp_path: Path) -> None:
    path = _case(tmp_path, NEVER, pickles=False, jsons=True)
    doc = json.loads((path / "nccl_trace_rank_2.json").read_text())
    doc["version"] = "2.4"
    (path / "nccl_trace_rank_2.json").write_text(json.dumps(doc))
    whole = (FIXTURES / NEVER / "nccl_trace_rank_0").read_bytes()
    (path / "nccl_trace_rank_3").write_bytes(whole[: len(whole) // 2])
    # a pickle that names a global: refused, never run (the global would be called on load)
    (path / "nccl_trace_rank_4").write_bytes(pickle.dumps(
        {"version": "2.10", "entries": [], "hook": shutil.rmtree}, protocol=2))
    run = autopsy.load_run(path)
    kinds = {p.kind: p for p in run.problems}
    assert {"mixed_versions", "truncated", "unsafe_pickle"} <= set(kinds)
    assert "2.4: 1 rank(s)" in kinds["mixed_versions"].what
    assert "shutil.rmtree" in kinds["unsafe_pickle"].what
    assert diagnose(run).verdict.ranks == (1,)


def test_the_fixture_script_still_makes_the_situation(tmp_path: Path) -> None:
    # the real writer, again: torch 2.13 under torchrun, three ranks, a gloo timeout of 5 s
    done = subprocess.run(
        [sys.executable, "-c",
         "import sys; sys.argv = ['make.py']; "
         f"sys.path.insert(0, {str(FIXTURES)!r}); import make; "
         f"make.make({NEVER!r}, __import__('pathlib').Path({str(tmp_path / NEVER)!r}), 29651)"],
        capture_output=True, text=True, timeout=180)
    assert done.returncode == 0, done.stderr[-2000:]
    family, cause, ranks, _ = _verdict(tmp_path / NEVER)
    assert (family, cause, ranks) == (Family.HANG, "dead_rank", (1,))
