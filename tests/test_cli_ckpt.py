"""``autopsy ckpt``: exit codes 0/1/2, the JSON keys, -o, explain, and a light import."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from autopsy.cli import cli

SAMPLES = Path(__file__).resolve().parent.parent / "sample_runs"
GOOD = SAMPLES / "ckpt_hf_good"
OPT_MISSING = SAMPLES / "ckpt_hf_optimizer_missing"
TOP_KEYS = {"schema_version", "autopsy_version", "path", "resumable", "resume_level",
            "checkpoint", "layout", "step", "world_size", "requested_world_size",
            "scanned_values", "losses", "loss_effects", "newest_resumable", "components",
            "findings", "checkpoints", "problems"}
FINDING_KEYS = {"code", "name", "family", "cause", "severity", "confidence", "title",
                "message", "step", "ranks", "evidence", "advice"}


def _need(path: Path) -> Path:
    if not path.exists():
        pytest.fail(f"{path.name} is not there")
    return path


def _run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, ["ckpt", *args])
    return result.exit_code, result.stdout, result.stderr


def test_exit_0_and_text_verdict_for_a_resumable_run() -> None:
    code, out, _ = _run(str(_need(GOOD)))
    assert code == 0
    assert out.startswith("RESUMABLE: checkpoint-8")
    assert "optimizer" in out and "Other checkpoints" in out


def test_exit_1_names_the_loss_and_the_newest_resumable() -> None:
    code, out, _ = _run(str(_need(OPT_MISSING)))
    assert code == 1
    first = out.splitlines()[0]
    assert first.startswith("NOT RESUMABLE: checkpoint-8") and "optimizer (missing)" in first
    assert "newest resumable: checkpoint-4" in out
    assert "resume from checkpoint-4, the newest complete one" in out
    assert "CKPT002" in out


def test_json_report_keys_and_values() -> None:
    code, out, _ = _run(str(_need(OPT_MISSING)), "--format", "json")
    assert code == 1
    report = json.loads(out)
    assert TOP_KEYS <= set(report)
    assert report["resumable"] is False and report["schema_version"] == 1
    assert Path(report["checkpoint"]).name == "checkpoint-8"
    assert Path(report["newest_resumable"]).name == "checkpoint-4"
    comps = {c["name"]: c for c in report["components"]}
    assert comps["optimizer"]["status"] == "missing" and comps["optimizer"]["effect"]
    assert set(comps["optimizer"]) == {"name", "status", "required", "files", "evidence",
                                       "effect"}
    assert all(FINDING_KEYS <= set(f) for f in report["findings"])
    assert report["findings"][0]["family"] == "resume"
    assert [Path(c["path"]).name for c in report["checkpoints"]] == ["checkpoint-4",
                                                                     "checkpoint-8"]
    assert [c["resumable"] for c in report["checkpoints"]] == [True, False]


def test_output_file_and_format_from_extension(tmp_path: Path) -> None:
    target = tmp_path / "audit.json"
    code, out, _ = _run(str(_need(GOOD)), "-o", str(target))
    assert code == 0 and out == ""
    assert json.loads(target.read_text())["resumable"] is True


def test_world_size_option_mismatch_exits_1() -> None:
    code, out, _ = _run(str(_need(GOOD)), "--world-size", "4", "--format", "json")
    assert code == 1
    codes = {f["code"] for f in json.loads(out)["findings"]}
    assert "CKPT016" in codes


@pytest.mark.parametrize("args", [("--world-size", "0"), ("--format", "xml")])
def test_usage_errors_exit_2(args: tuple[str, ...]) -> None:
    code, _, _ = _run(str(_need(GOOD)), *args)
    assert code == 2


def test_nothing_readable_exits_2_with_one_line(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("no checkpoint here")
    code, out, err = _run(str(tmp_path))
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and err.startswith("autopsy: error: no checkpoint found")
    code, _, err = _run(str(tmp_path / "absent"))
    assert code == 2 and "Traceback" not in err
    # a checkpoint found but unreadable is a verdict, not "nothing here" (exit 2 is kept for
    # a path with no checkpoint at all)
    garbage = tmp_path / "model.pt"
    garbage.write_bytes(b"\x80\x04this is not a pickle at all")
    code, out, err = _run(str(garbage))
    assert code == 1 and out.startswith("NOT RESUMABLE: ") and "Traceback" not in err
    assert "could be read" in out and "CKPT020" in out


def test_explain_documents_check_codes() -> None:
    result = CliRunner().invoke(cli, ["explain", "CKPT002"])
    assert result.exit_code == 0
    assert result.stdout.startswith("CKPT002 optimizer-missing")
    assert "missing_optimizer_state" in result.stdout
    assert CliRunner().invoke(cli, ["explain", "nonfinite-state"]).exit_code == 0
    assert CliRunner().invoke(cli, ["explain", "RES001"]).exit_code == 0


@pytest.mark.parametrize(("flags", "allowed"), [
    (("--no-scan",), []),          # metadata only: nothing heavy
    ((), ["numpy"]),               # the default value scan streams tensors with numpy
])
def test_ckpt_imports_neither_pandas_nor_torch(flags: tuple[str, ...],
                                               allowed: list[str]) -> None:
    code = (
        "import sys, runpy\n"
        f"sys.argv = ['autopsy', 'ckpt', {str(_need(GOOD))!r}, '--format', 'json', "
        f"*{list(flags)!r}]\n"
        "try:\n"
        "    runpy.run_module('autopsy', run_name='__main__')\n"
        "except SystemExit as exc:\n"
        "    assert exc.code == 0, exc.code\n"
        "heavy = [m for m in ('pandas', 'torch', 'numpy', 'scipy', 'transformers')\n"
        "         if m in sys.modules]\n"
        "print('HEAVY', heavy, file=sys.stderr)\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr
    assert f"HEAVY {allowed}" in proc.stderr


NAN_MOMENTS = SAMPLES / "ckpt_hf_nan_moments"


def test_values_are_scanned_by_default_within_a_budget() -> None:
    # NaN in exp_avg_sq: found without --scan-values now
    code, out, _ = _run(str(_need(NAN_MOMENTS)))
    assert code == 1 and out.startswith("NOT RESUMABLE: checkpoint-8")
    assert "CKPT031" in out
    code, out, _ = _run(str(NAN_MOMENTS), "--no-scan")
    assert code == 0 and out.startswith("RESUMABLE: ")  # what --no-scan cannot see
    # a budget smaller than the tensors: nothing is vouched for, so no exact resume
    code, out, _ = _run(str(GOOD), "--scan-budget", "1K", "--format", "json")
    report = json.loads(out)
    assert code == 1 and report["resume_level"] == "with_losses"
    assert any("values not scanned" in loss for loss in report["losses"])
    code, out, _ = _run(str(GOOD), "--scan-budget", "1G")
    assert code == 0 and out.startswith("RESUMABLE: checkpoint-8")
    code, _, err = _run(str(GOOD), "--no-scan", "--scan-values")
    assert code == 2 and "--no-scan" in err


def test_one_file_of_a_checkpoint_folder_audits_the_folder() -> None:
    code, out, _ = _run(str(_need(GOOD) / "checkpoint-8" / "optimizer.pt"))
    assert code == 0 and out.startswith("RESUMABLE: ")
    assert "optimizer.pt is one file of the checkpoint checkpoint-8" in out


def test_text_report_shows_control_characters_escaped(tmp_path: Path) -> None:
    import shutil

    run = tmp_path / "run"
    shutil.copytree(_need(OPT_MISSING), run)
    (run / "checkpoint-8").rename(run / "checkpoint-8\x1b]0;title\x07")
    code, out, _ = _run(str(run), "-v")
    assert code in (0, 1)
    assert "\x1b" not in out and "\x07" not in out
    assert "checkpoint-8\\x1b]0;title\\x07" in out


def test_error_line_shows_control_characters_escaped(tmp_path: Path) -> None:
    (tmp_path / "x\x1b]0;t\x07.safetensors").write_bytes(b"\x00\x01garbage")
    result = CliRunner().invoke(cli, ["ckpt", str(tmp_path)])
    assert result.exit_code == 1  # found, unreadable: not resumable
    assert "\x1b" not in result.stdout and "x\\x1b]0;t\\x07.safetensors" in result.stdout


DCP = SAMPLES / "ckpt_dcp_good"


def test_three_levels_first_and_exit_0_only_for_an_exact_resume() -> None:
    # a DCP checkpoint written by torch.distributed.checkpoint.save: weights, optimizer and
    # scheduler, but no RNG and no data position (the format holds what the caller gives)
    code, out, _ = _run(str(_need(DCP)))
    first = out.splitlines()[0]
    assert code == 1 and first.startswith("RESUMABLE WITH LOSSES: step_12")
    assert "rng (missing)" in first and "data_position (missing)" in first
    assert "the loader restarts the epoch" in out  # what the loss does, said
    code, _, _ = _run(str(DCP), "--allow-losses")
    assert code == 0
    code, out, _ = _run(str(DCP), "--format", "json")
    report = json.loads(out)
    assert report["resumable"] is True and report["resume_level"] == "with_losses"
    assert report["losses"] == ["rng (missing)", "data_position (missing)"]
    assert len(report["loss_effects"]) == 2
    code, out, _ = _run(str(GOOD), "--format", "json")
    report = json.loads(out)
    assert code == 0 and report["resume_level"] == "exact" and report["losses"] == []
    code, out, _ = _run(str(OPT_MISSING), "--format", "json", "--allow-losses")
    report = json.loads(out)
    assert code == 1 and report["resume_level"] == "not_resumable"
    assert report["resumable"] is False
