"""The public real-world corpus (``sample_runs/public/``): well-formed labels, and autopsy
reading every case without a traceback, a hang, a rule error, or an exit 2 on a case whose
format it supports. Accuracy is a figure (``bench/accuracy.py``, ``docs/accuracy.md``), not an
assertion here.
"""

from __future__ import annotations

import json
import re
import signal
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from corpus_labels import (
    LABEL_KEYS,
    PUBLIC,
    case_dirs,
    guide_causes,
    guide_families,
    guide_formats,
    split_of,
)

from autopsy.cli import cli
from autopsy.readers.registry import supported_slugs

CASES = case_dirs()
#: Test-half cases that autopsy cannot read yet (exit 2 on a supported format). Six listed
#: earlier are read since the stepless-lines layout and the tutorial adapters (2026-11-26,
#: sixth session): the strict marks said so, without the cases being opened. Per the
#: corpus protocol their files were not looked at to fix the readers: a dev case (or a
#: fixture) of the same kind is to be found or made and the reader fixed from that. Strict:
#: the test fails as soon as one is read, so the list cannot go stale.
KNOWN_UNREAD_TEST_CASES = frozenset({
    "hf_tinyllama_fp16_finetune_eval_loss_nan",
    # collected 2026-11-26 (third batch): "nothing readable" in the test half
    "deepspeed_zero3_cpu_adam_optimizer_step_22_9s_vs_fwd_bwd_1_2s_issue_1635",
    "paddleseg_batch_cost_0_6s_steady_reader_cost_zero_healthy_pr_792",
    # collected 2026-11-26 (fourth batch): "nothing readable" in the test half
    "deepspeed_fp16_loss_scale_8192_steady_state_overflow_every_2min_healthy_issue_1",
    "generic_log_dcrnn_train_mae_creeps_up_val_mae_still_improving_healthy_issue_60",
    "megatron_t5_pretrain_mbs_gt1_forward_backward_time_grows_each_log_issue_184",
    "tf_insightface_weight_decay_loss_1_91_to_1_6e13_total_loss_diverges_issue_59",
    # collected 2026-11-26 (fifth batch): "nothing readable" in the test half
    "csv_metrics_speech_digit_cnn_val_loss_best_epoch6_then_noisy_higher_overfitting",
    "generic_log_animateanyone_load_data_time_19s_stall_every_few_steps_slow_issue_101",
    "generic_log_torch_imagenet_err_6_907_ln1000_top1_zero_epoch_11_issue_70",
    "generic_log_vindlu_pretrain_data_38s_of_40s_per_step_eta_20_days_slow_issue_10",
    # collected 2026-11-26 (sixth batch): "nothing readable" in the test half
    # collected 2026-11-26 (seventh batch): "nothing readable" in the test half
    "csv_metrics_tacotron2_step_loss_noisy_0_62_to_0_76_avg_steady_healthy_issue_11",
    "generic_log_yolov6_iou_dfl_loss_0_map_0_labels_not_used_not_decreasing_issue_614",
    # collected 2026-11-26 (eighth batch): "nothing readable" in the test half
    "generic_log_ddp_cnn_47_epochs_ce_loss_flat_0_95_accuracy_94_to_98_rendezvous_warnings_healthy",
    "generic_log_deepfacelab_avatar_2400ms_iter_but_15s_between_iters_slow_issue_401",
    "generic_log_stylegan3_sec_per_kimg_235_to_265_low_gpu_usage_slow_issue_213",
    "nccl_log_megatron_gpt_4_ranks_destroy_process_group_warning_at_exit_healthy_issue_1541",
    "nccl_log_pytorch_2_4_pg_not_destroyed_warning_wall_normal_exit_healthy_issue_126275",
    # collected 2026-11-26 (tenth batch): "nothing readable" in the test half
    "generic_log_dagmm_train_loss_flat_401_7_for_20_epochs_not_decreasing_issue_10",
})
#: Dev-half cases not read yet, each with the reason (a dev case is read or listed here).
KNOWN_UNREAD_DEV_CASES: dict[str, str] = {
    "tf_log_bert_textsim_estimator_0_3_global_step_per_sec_2_5_examples_per_sec_slow_issue_2": (
        "TPUEstimator's 'global_step/sec' and 'examples/sec' lines only: a pace with no step "
        "and no loss, which is no curve to judge"),
    "deepspeed_log_init_distributed_hangs_main_process_port_0_issue_11": (
        "three 'init_distributed' lines and nothing after: no metric and no event; that the "
        "job hung there is the thread's word, not the log's"),
    "generic_log_fashion_mnist_cnn_test_loss_rises_after_epoch_13_overfitting": (
        "the log is a string inside a Python source file (logs/log.py); a run directory's "
        ".py files are its code, never read as logs"),
    "generic_log_equinox_step_8ms_spike_50ms_at_gc_gen2_collection_periodic_stall_slow_"
    "issue_1145": (
        "'Iteration duration: 0.0080 gc.get_count(): (11, 0, 17)' lines: a duration with no "
        "step and no loss on any line, which no reader takes for a training log"),
    "generic_log_musegan_wgan_losses_swing_sign_maintainer_reasonable_healthy_issue_66": (
        "a table of unnamed columns ('   1  |  104/ 180 |  67.79 |  60.750362 | -16.181793') "
        "whose header the excerpt left off: no column says which number is a loss"),
    "keras_stdout_kanji_cnn_three_fit_stages_val_spike_recovers_early_stop_healthy": (
        "the Keras output is a string inside a Python source file (*_training_log.py); a run "
        "directory's .py files are its code, never read as logs"),
    "generic_log_medsynthesis_gan_generator_loss_rising_discriminator_exploding_diverging_issue_14":
        "a GAN's hand-written report blocks ('average running loss for generator between iter "
        "[201, 300] is: 559.8'): two windows of running averages, no per-step lines",
}


def _reads_params() -> list[Any]:
    out = []
    for case in CASES:
        marks = []
        if case.name in KNOWN_UNREAD_TEST_CASES:
            assert split_of(case.name) == "test"
            marks.append(pytest.mark.xfail(strict=True, reason="a known reader gap (test half)"))
        if case.name in KNOWN_UNREAD_DEV_CASES:
            assert split_of(case.name) == "dev"
            marks.append(pytest.mark.xfail(strict=True,
                                           reason=KNOWN_UNREAD_DEV_CASES[case.name]))
        out.append(pytest.param(case, id=case.name, marks=marks))
    return out
#: The whole corpus stays under this (the issue's bound).
MAX_CORPUS_BYTES = 50 << 20
#: A case over this needs the reason in its label's notes.
MAX_CASE_BYTES = 2 << 20
#: Seconds one case may take before it counts as a hang.
CASE_TIMEOUT_S = 60
_SOURCE = re.compile(r"^(?:[\w.-]+/[\w.-]+:\S+@[0-9a-f]{7,40}|https://github\.com/[\w.-]+/"
                     r"[\w.-]+/(?:issues|pull|discussions)/\d+\S*)$")
_VALUE_EVIDENCE = re.compile(r"^[\w/.\- ()]+@\s*[\w ]+=")


def _label(case: Path) -> dict[str, Any]:
    return json.loads((case / "label.json").read_text(encoding="utf-8"))


def _files(case: Path) -> list[Path]:
    return [p for p in case.rglob("*") if p.is_file() and p.name != "label.json"]


def test_corpus_is_there_and_within_size() -> None:
    assert len(CASES) >= 150, "the public corpus is missing"
    total = sum(p.stat().st_size for p in PUBLIC.rglob("*") if p.is_file())
    assert total < MAX_CORPUS_BYTES
    assert {split_of(c.name) for c in CASES} == {"dev", "test"}


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_label_follows_the_guide(case: Path) -> None:
    label = _label(case)
    missing = [k for k in LABEL_KEYS if k not in label]
    assert not missing, f"label lacks {missing}"
    assert label["family"] in guide_families()
    causes = label["cause"] if isinstance(label["cause"], list) else [label["cause"]]
    allowed = guide_causes()[label["family"]]
    assert all(c is None or c in allowed for c in causes), (causes, sorted(allowed))
    if label["family"] == "healthy":
        assert label["cause"] is None and label["first_bad_step"] is None
    assert label["format"] in guide_formats()
    assert label["command"] in ("analyze", "ranks")
    assert label["confidence"] in ("high", "medium", "low")
    assert _SOURCE.match(label["source"]), label["source"]
    for key in ("first_bad_step", "culprit_rank"):
        assert label[key] is None or (isinstance(label[key], int) and label[key] >= 0)
    files = _files(case)
    assert files, "a case holds the run's files"
    size = sum(p.stat().st_size for p in files)
    assert size <= MAX_CASE_BYTES or label.get("notes"), "a case over 2 MB says why"
    # the evidence is quoted from the data: a line found in the files, or tag@step=value
    text = " ".join(" ".join(p.read_text(encoding="utf-8", errors="replace").split())
                    for p in files)
    evidence = label["evidence"]
    assert isinstance(evidence, list) and evidence
    assert any(" ".join(e.split()) in text or _VALUE_EVIDENCE.match(e) for e in evidence)


class _Hang(Exception):
    pass


def _alarm(signum: int, frame: Any) -> None:
    raise _Hang(f"no answer within {CASE_TIMEOUT_S} s")


@pytest.mark.parametrize("case", _reads_params())
def test_autopsy_reads_case(case: Path) -> None:
    label = _label(case)
    command = "ranks" if label["command"] == "ranks" else "analyze"
    previous = signal.signal(signal.SIGALRM, _alarm)
    signal.alarm(CASE_TIMEOUT_S)
    try:
        result = CliRunner().invoke(cli, [command, str(case), "--format", "json"])
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise AssertionError(f"autopsy raised on {case.name}") from result.exception
    if label["format"] in supported_slugs():
        assert result.exit_code != 2, result.output[-400:]
    if result.exit_code == 2:
        return  # an unsupported format: one line on stderr, nothing else to check
    assert result.exit_code in (0, 1, 3), result.output[-400:]
    report = json.loads(result.stdout)
    failed = [s for s in report["skipped"] if str(s.get("reason", "")).startswith("rule failed")]
    assert not failed, failed
