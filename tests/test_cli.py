"""The CLI contract: formats, columns, exit codes, one-line errors, cheap start-up."""

from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
from click.testing import CliRunner

from autopsy.cli import cli
from autopsy.report.timeline import TIMELINE_COLUMNS


def invoke(*args: str):
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


def test_analyze_json_follows_the_report_contract(tb_run: Path) -> None:
    result = invoke("analyze", str(tb_run), "--format", "json")
    report = json.loads(result.output)
    # the fixture's trainer_state has a NaN loss at step 10: a failure, exit 1
    assert result.exit_code == 1, result.output
    assert report["verdict"]["family"] == "nan_inf"
    assert report["verdict"]["step"] == 10
    assert {"schema_version", "autopsy_version", "run", "verdict", "findings", "skipped",
            "problems"} <= set(report)
    verdict = report["verdict"]
    assert {"family", "cause", "code", "step", "ranks", "confidence", "title",
            "message"} <= set(verdict)
    run = report["run"]
    tags = {t["tag"]: t for t in run["tags"]}
    assert tags["loss"]["non_finite"] == 1
    assert run["segments"][0]["segment"] == 0
    assert "notes.txt" in run["unread"]


def test_analyze_text_is_plain_when_piped(tb_run: Path) -> None:
    result = invoke("analyze", str(tb_run))
    assert result.exit_code == 1
    assert "\x1b[" not in result.output
    assert result.output.splitlines()[1].startswith("VERDICT: nan_inf")
    verbose = invoke("analyze", str(tb_run), "--verbose")
    assert "Sources read" in verbose.output
    assert "trainer_state.json" in verbose.output


def test_analyze_writes_to_output_file_by_extension(tb_run: Path, tmp_path: Path) -> None:
    out = tmp_path / "report.json"
    result = invoke("analyze", str(tb_run), "-o", str(out))
    assert result.exit_code == 1
    assert json.loads(out.read_text())["schema_version"] == 1


@pytest.mark.parametrize("make", ["missing", "empty", "junk"])
def test_bad_paths_exit_2_with_one_line(tmp_path: Path, make: str) -> None:
    target = tmp_path / "target"
    if make != "missing":
        target.mkdir()
    if make == "junk":
        (target / "random.bin").write_bytes(bytes(range(256)) * 4)
    proc = subprocess.run([sys.executable, "-m", "autopsy", "analyze", str(target)],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2
    assert proc.stdout == ""
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("autopsy: error:"), proc.stderr
    assert "Traceback" not in proc.stderr


def test_timeline_csv_has_exact_columns_and_keeps_nan(tb_run: Path) -> None:
    result = invoke("timeline", str(tb_run))
    assert result.exit_code == 0
    assert result.output.splitlines()[0] == ",".join(TIMELINE_COLUMNS)
    df = pd.read_csv(io.StringIO(result.output))
    # 40 TensorBoard points + 8 trainer_state points, of which 3 repeat TensorBoard's (loss
    # and learning_rate at step 5, learning_rate at step 10) and are written once
    assert len(df) == 45
    state = df[df["source"] == "trainer_state.json"]
    assert state["value"].isna().sum() == 1
    assert (state["value"] == float("inf")).sum() == 1


def test_timeline_tag_filter_accepts_canonical_and_raw(tb_run: Path) -> None:
    canon = pd.read_csv(io.StringIO(invoke("timeline", str(tb_run), "--tag", "loss").output))
    raw = pd.read_csv(io.StringIO(invoke("timeline", str(tb_run), "--tag", "train/loss").output))
    assert set(canon["tag"]) == {"loss"} and len(canon) == 21  # step 5's is in both files
    assert set(raw["raw_tag"]) == {"train/loss"} and len(raw) == 20
    bad = CliRunner().invoke(cli, ["timeline", str(tb_run), "--tag", "nope"])
    assert bad.exit_code == 2


def test_timeline_json_keeps_non_finite_as_strings(tb_run: Path) -> None:
    rows = json.loads(invoke("timeline", str(tb_run), "--format", "json").output)
    assert list(rows[0]) == list(TIMELINE_COLUMNS)
    values = [r["value"] for r in rows if r["source"] == "trainer_state.json"]
    assert "NaN" in values and "Infinity" in values


def test_timeline_parquet_round_trips(tb_run: Path, tmp_path: Path) -> None:
    out = tmp_path / "t.parquet"
    assert invoke("timeline", str(tb_run), "-o", str(out)).exit_code == 0
    df = pd.read_parquet(out)
    assert list(df.columns) == list(TIMELINE_COLUMNS)
    assert len(df) == 45  # as the CSV: 3 points are in both files


def test_cli_does_not_write_into_the_run(tb_run: Path, snapshot) -> None:
    before = snapshot(tb_run)
    invoke("analyze", str(tb_run), "--format", "json")
    invoke("timeline", str(tb_run))
    assert snapshot(tb_run) == before


def test_help_imports_nothing_heavy() -> None:
    code = (
        "import sys\n"
        "from click.testing import CliRunner\n"
        "from autopsy.cli import cli\n"
        "for args in (['--help'], ['analyze', '--help'], ['timeline', '--help']):\n"
        "    r = CliRunner().invoke(cli, args)\n"
        "    assert r.exit_code == 0, r.output\n"
        "heavy = [m for m in ('pandas', 'numpy', 'torch', 'tensorboard', 'rich') "
        "if m in sys.modules]\n"
        "print(','.join(heavy))\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == ""


def test_help_documents_exit_codes() -> None:
    for args in (["--help"], ["analyze", "--help"], ["timeline", "--help"]):
        out = invoke(*args).output
        assert "Exit codes" in out and "3" in out


class _Payload:
    def __init__(self, cmd: str) -> None:
        self.cmd = cmd

    def __reduce__(self):
        import os

        return (os.system, (self.cmd,))


def test_hostile_training_args_is_reported_never_run(tb_run: Path, tmp_path: Path) -> None:
    import pickle

    marker = tmp_path / "pwned"
    (tb_run / "training_args.bin").write_bytes(pickle.dumps(_Payload(f"touch {marker}")))
    result = invoke("analyze", str(tb_run), "--format", "json")
    assert result.exit_code == 1
    assert not marker.exists()
    problems = json.loads(result.output)["problems"]
    unsafe = [p for p in problems if p["kind"] == "unsafe_pickle"]
    assert unsafe and unsafe[0]["source"] == "training_args.bin"
    assert "system" in unsafe[0]["what"]


def test_reading_a_run_imports_no_torch_or_tensorboard() -> None:
    code = (
        "import sys\n"
        "import autopsy\n"
        "run = autopsy.load_run('sample_runs/resumed_after_stop')\n"
        "assert len(run.scalars) > 0\n"
        "print(','.join(m for m in ('torch', 'transformers', 'tensorboard', 'tbparse') "
        "if m in sys.modules))\n"
    )
    from repo_paths import REPO

    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120, cwd=REPO)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == ""


def test_rules_and_explain_commands() -> None:
    listing = invoke("rules").output
    assert "HLT001" in listing and "loss-decreasing" in listing
    data = json.loads(invoke("rules", "--format", "json").output)
    assert {"code", "name", "family", "causes", "requires", "thresholds", "title"} <= set(data[0])
    text = invoke("explain", "hlt001").output
    assert "What happened:" in text and "How to fix:" in text and "min_points" in text
    bad = CliRunner().invoke(cli, ["explain", "NOPE999"])
    assert bad.exit_code == 2 and "unknown rule" in bad.output


def test_analyze_healthy_sample_exits_0_and_bad_set_exits_2() -> None:
    from repo_paths import SAMPLE_RUNS

    healthy = invoke("analyze", str(SAMPLE_RUNS / "healthy_hf_trainer"), "--format", "json")
    assert healthy.exit_code == 0
    assert json.loads(healthy.output)["verdict"]["family"] == "healthy"
    bad = CliRunner().invoke(cli, ["analyze", str(SAMPLE_RUNS / "healthy_hf_trainer"),
                                   "--set", "HLT001.nope=3"])
    assert bad.exit_code == 2
    assert "has no threshold" in bad.output
    strict = invoke("analyze", str(SAMPLE_RUNS / "healthy_hf_trainer"), "--format", "json",
                    "--set", "HLT001.min_points=1000")
    assert strict.exit_code == 3


def _slow005_reason(args: list[str]) -> str:
    from click.testing import CliRunner
    from repo_paths import SAMPLE_RUNS

    from autopsy.cli import cli

    res = CliRunner().invoke(cli, ["analyze", str(SAMPLE_RUNS / "slow_dataloader_starved"),
                                   "--format", "json", *args])
    assert res.exit_code in (0, 1, 3), res.output
    skipped = {s["code"]: s["reason"] for s in json.loads(res.output)["skipped"]}
    return skipped["SLOW005"]


def test_gpu_and_peak_flops_feed_slow005() -> None:
    assert "--gpu" in _slow005_reason([])
    for args in (["--gpu", "h100"], ["--peak-flops", "989T"], ["--peak-flops", "9.89e14"],
                 ["--set", "SLOW005.peak_flops=1e15"]):
        reason = _slow005_reason(args)
        assert "--gpu" not in reason and "model size" in reason, args


def test_a_bad_peak_flops_is_a_usage_error() -> None:
    from click.testing import CliRunner

    from autopsy.cli import cli

    res = CliRunner().invoke(cli, ["analyze", ".", "--peak-flops", "lots"])
    assert res.exit_code == 2 and "989T" in res.output


def test_timeline_source_filter(tb_run: Path) -> None:
    state = pd.read_csv(io.StringIO(invoke("timeline", str(tb_run), "--source",
                                           "trainer_state.json").output))
    assert set(state["source"]) == {"trainer_state.json"} and len(state) == 5
    tb = pd.read_csv(io.StringIO(invoke("timeline", str(tb_run), "--source", "runs/*").output))
    assert set(tb["source"].map(lambda s: s.split("/")[0])) == {"runs"} and len(tb) == 40
    bad = CliRunner().invoke(cli, ["timeline", str(tb_run), "--source", "nope*"])
    assert bad.exit_code == 2 and "sources:" in bad.output


def test_nothing_readable_names_what_was_found_on_one_line(tmp_path: Path) -> None:
    (tmp_path / "notes\nsecond.md").write_text("hello")
    (tmp_path / "train.log").write_text("nothing to see here\n")
    result = CliRunner().invoke(cli, ["analyze", str(tmp_path)])
    assert result.exit_code == 2
    lines = result.output.strip().splitlines()
    assert len(lines) == 1
    assert "2 file(s) found" in lines[0] and "train.log (ranklogs file, 20 B" in lines[0]
    assert "notes\\x0asecond.md (.md, 5 B, no reader recognises it)" in lines[0]
    assert lines[0].endswith("`autopsy formats` lists what autopsy reads")


def test_formats_command_lists_the_registry() -> None:
    from autopsy.readers.registry import formats

    rows = json.loads(invoke("formats", "--format", "json").output)
    assert [r["slug"] for r in rows] == [f.slug for _, f in formats()]
    assert {"lightning_csv", "keras_csv", "mmengine_log", "hf_trainer_state"} <= {
        r["slug"] for r in rows}
    text = invoke("formats").output
    assert all(r["slug"] in text for r in rows)
