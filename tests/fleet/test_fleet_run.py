"""``autopsy fleet`` over a fleet of ~300 runs: the table against per-run ``analyze``, the
signature clusters, the lemon host, the cache, the Dask path, and the CLI's outputs."""

from __future__ import annotations

import csv
import json
import os
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import COPIES, LEMON, LEMON_RUNS, REPEATED, Fleet

from autopsy.cli import cli
from autopsy.fleet.cache import Cache
from autopsy.fleet.driver import FleetResult, read_hosts, run_fleet
from autopsy.fleet.summary import summarize


@pytest.fixture(scope="module")
def first(fleet: Fleet, tmp_path_factory: pytest.TempPathFactory) -> tuple[FleetResult, Path]:
    cache = tmp_path_factory.mktemp("cache")
    return run_fleet([fleet.root], jobs=2, cache=Cache(cache)), cache


def test_every_run_is_found_and_diagnosed(fleet: Fleet,
                                          first: tuple[FleetResult, Path]) -> None:
    result, _ = first
    # each copied run is found once, at its folder or (files kept in a subfolder such as
    # detectron2's output/) below it
    assert ["/".join(r["path"].split("/")[:2]) for r in result.rows] == fleet.runs
    assert result.diagnosed == len(fleet.runs) and result.cached == 0
    # the only errors are the public cases autopsy cannot read (analyze exits 2 on them)
    unread = [r for r in result.rows if r["error"]]
    assert all(r["error"].startswith("nothing readable") for r in unread)
    assert all(r["path"].startswith("public/") for r in unread)
    got = CliRunner().invoke(cli, ["analyze", str(fleet.root / unread[0]["path"])])
    assert got.exit_code == 2 and "nothing readable" in got.stderr


def test_each_report_is_what_analyze_prints(fleet: Fleet,
                                            first: tuple[FleetResult, Path]) -> None:
    result, _ = first
    runner = CliRunner()
    picked = list(range(0, len(fleet.runs), max(1, len(fleet.runs) // 12)))
    for i in picked:
        path = fleet.root / result.rows[i]["path"]
        got = runner.invoke(cli, ["analyze", str(path), "--format", "json"])
        assert got.exit_code in (0, 1, 3), got.output
        assert json.loads(got.stdout) == result.reports[i], path
        verdict = result.reports[i]["verdict"]
        row = result.rows[i]
        assert (row["family"], row["code"], row["step"], row["ranks"]) == (
            verdict["family"], verdict["code"], verdict["step"], verdict["ranks"])


def test_copies_of_one_failure_are_one_cluster(fleet: Fleet,
                                               first: tuple[FleetResult, Path]) -> None:
    result, _ = first
    clusters = summarize(result.rows).clusters
    expected = {f"repeats/job{i}" for i in range(COPIES)} | {f"samples/{REPEATED}"}
    (cluster,) = [c for c in clusters if expected & set(c.runs)]
    assert set(cluster.runs) == expected and cluster.count == COPIES + 1
    assert cluster.family == "crash" and "<RANK>" in cluster.signature
    assert len({c.signature for c in clusters}) == len(clusters)


def test_the_host_that_fails_more_is_named(fleet: Fleet,
                                           first: tuple[FleetResult, Path]) -> None:
    result, cache = first
    # the lemon runs only software failures (a bad image, say): 25 of them in a fleet where
    # most runs fail is past chance, and only there
    failed = [r["path"] for r in result.rows
              if r["family"] not in ("healthy", "unknown", None) and not r["hardware"]]
    others = [r["path"] for r in result.rows if r["path"] not in failed[:LEMON_RUNS]]
    with open(fleet.hosts_csv, "w", encoding="utf-8", newline="") as fh:
        out = csv.writer(fh)
        out.writerow(["path", "host"])
        for path in failed[:LEMON_RUNS]:
            out.writerow([path, LEMON])
        for i, path in enumerate(others):
            out.writerow([path, f"node-{(i % 11) + 8:02d}"])
    again = run_fleet([fleet.root], jobs=2, cache=Cache(cache),
                      hosts=read_hosts(fleet.hosts_csv))
    assert again.cached == len(fleet.runs) and again.diagnosed == 0
    lemons = [h for h in summarize(again.rows).hosts if h.lemon]
    assert [h.host for h in lemons] == [LEMON]
    assert lemons[0].failures == lemons[0].runs == LEMON_RUNS


def test_a_changed_run_is_diagnosed_again(fleet: Fleet, first: tuple[FleetResult, Path],
                                          tmp_path: Path) -> None:
    result, cache = first
    copy = tmp_path / "cache"
    import shutil

    shutil.copytree(cache, copy)
    touched = fleet.root / "repeats" / "job0"
    some_file = next(p for p in sorted(touched.rglob("*")) if p.is_file())
    st = some_file.stat()
    os.utime(some_file, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000_000))
    again = run_fleet([fleet.root], jobs=2, cache=Cache(copy))
    assert again.diagnosed == 1 and again.cached == len(fleet.runs) - 1
    assert again.reports == result.reports


def test_the_dask_path_gives_the_same_rows(fleet: Fleet) -> None:
    import distributed  # noqa: F401  (the test extra has it: a missing one fails here)

    sub = fleet.root / "repeats"
    local = run_fleet([sub], jobs=1)
    on_dask = run_fleet([sub], jobs=2, dask="local")
    assert on_dask.reports == local.reports
    strip = [{k: v for k, v in r.items() if k != "elapsed_s"} for r in on_dask.rows]
    assert strip == [{k: v for k, v in r.items() if k != "elapsed_s"} for r in local.rows]
    # a run past its time limit on a Dask worker (a task thread, no signals) is a row; the
    # limit takes effect between bytecodes, so a run inside one long wait (its reader's own
    # process pool) may finish first: every row is a timeout or a full result, never another
    # error, and the fleet ends
    late = run_fleet([sub], jobs=2, dask="local", timeout=0.001)
    errors = [r["error"] for r in late.rows]
    assert set(errors) <= {"timed out after 0.001 s", None}
    assert "timed out after 0.001 s" in errors
    done = [r for r in late.rows if r["error"] is None]
    assert all(r["family"] == "crash" for r in done)


@pytest.mark.parametrize("suffix", [".csv", ".jsonl", ".parquet", ".html"])
def test_the_cli_writes_the_table(fleet: Fleet, tmp_path: Path, suffix: str) -> None:
    out = tmp_path / f"fleet{suffix}"
    got = CliRunner().invoke(cli, ["fleet", str(fleet.root / "repeats"), "-o", str(out),
                                   "--jobs", "1", "--cache", str(tmp_path / "c")])
    assert got.exit_code == 1, got.output  # the runs failed
    assert f"{COPIES} runs: crash {COPIES}" in got.output
    if suffix == ".jsonl":
        rows = [json.loads(line) for line in out.read_text().splitlines()]
        assert [r["path"] for r in rows] == [f"job{i}" for i in range(COPIES)]
        assert {r["code"] for r in rows} == {"CRASH001"}
    elif suffix == ".csv":
        rows = list(csv.DictReader(out.open()))
        assert len(rows) == COPIES and rows[0]["family"] == "crash"
    elif suffix == ".parquet":
        import pyarrow.parquet as pq

        table = pq.read_table(out)
        assert table.num_rows == COPIES and set(table.column("family").to_pylist()) == {"crash"}
    else:
        page = out.read_text()
        assert page.startswith("<!DOCTYPE html>") and "Failure signatures" in page
        assert "data:image/png;base64," in page


def test_cli_summary_as_json_and_errors(fleet: Fleet, tmp_path: Path) -> None:
    runner = CliRunner()
    got = runner.invoke(cli, ["fleet", str(fleet.root / "repeats"), "--format", "json",
                              "--no-cache", "--jobs", "1"])
    body = json.loads(got.stdout)
    assert body["runs"] == COPIES and body["families"] == {"crash": COPIES}
    assert body["clusters"][0]["count"] == COPIES
    missing = runner.invoke(cli, ["fleet", str(tmp_path / "nothing")])
    assert missing.exit_code == 2 and missing.stderr.startswith("autopsy: error: ")
    (tmp_path / "empty").mkdir()
    empty = runner.invoke(cli, ["fleet", str(tmp_path / "empty")])
    assert empty.exit_code == 2 and "no run found" in empty.stderr
    inside = runner.invoke(cli, ["fleet", str(fleet.root / "repeats"), "-o",
                                 str(fleet.root / "repeats" / "job0" / "t.csv")])
    assert inside.exit_code == 2


def test_reports_of_two_roots_do_not_overwrite_each_other(fleet: Fleet, tmp_path: Path) -> None:
    out = tmp_path / "reports"
    got = CliRunner().invoke(cli, ["fleet", str(fleet.root / "repeats"),
                                   str(fleet.root / "samples"), "--jobs", "2", "--no-cache",
                                   "--reports", str(out)])
    assert got.exit_code == 1, got.output
    written = sorted(p.name for p in out.iterdir())
    assert len(written) == COPIES + len(list((fleet.root / "samples").iterdir()))
    one = json.loads((out / written[0]).read_text())
    assert one["schema_version"] == 1 and "verdict" in one
