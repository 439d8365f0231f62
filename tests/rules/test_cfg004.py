"""CFG004 batch-and-steps: an info note with the effective batch size and step budget."""

from __future__ import annotations

from flat_cases import codes, falling, sample
from runs import synthetic_run

from autopsy.api import diagnose
from autopsy.model import Family, Severity


def test_fires_as_an_info_note_with_the_effective_batch_size() -> None:
    run = synthetic_run({"loss": falling(3.0, 1.0, 40)},
                        config={"per_device_train_batch_size": 8,
                                "gradient_accumulation_steps": 4, "world_size": 2,
                                "max_steps": 1000})
    f = codes(run)["CFG004"]
    assert f.severity is Severity.INFO and f.cause is None
    assert "Effective batch size 64 = 8 per device × 4 accumulation × 2 ranks" in f.message
    assert "Expected optimizer steps: 1000" in f.message
    assert "assumed" not in f.message
    assert diagnose(run).verdict.family is Family.HEALTHY


def test_fires_and_says_world_size_is_assumed() -> None:
    run = synthetic_run({"loss": falling(3.0, 1.0, 40)},
                        config={"per_device_train_batch_size": 16})
    f = codes(run)["CFG004"]
    assert "16 = 16 per device × 1 accumulation × 1 rank" in f.message
    assert "gradient_accumulation_steps and world_size not in the config: 1 assumed" in f.message
    assert "Expected optimizer steps unknown" in f.message


def test_fires_with_steps_from_epochs_and_the_logged_epoch() -> None:
    epochs = [i / 25 for i in range(1, 51)]  # 25 steps per epoch
    run = synthetic_run({"loss": falling(3.0, 1.0, 50), "epoch": epochs},
                        config={"per_device_train_batch_size": 4, "num_train_epochs": 3,
                                "max_steps": -1})
    f = codes(run)["CFG004"]
    assert "Expected optimizer steps: 75" in f.message
    assert "About 100 training examples per epoch" in f.message


def test_fires_and_says_when_the_dataset_size_is_unknown() -> None:
    run = synthetic_run({"loss": falling(3.0, 1.0, 40)},
                        config={"per_device_train_batch_size": 4, "num_train_epochs": 3})
    assert "dataset size is unknown" in codes(run)["CFG004"].message


def test_near_miss_no_batch_or_step_config_passes() -> None:
    run = synthetic_run({"loss": falling(3.0, 1.0, 40)}, config={"learning_rate": 1e-4})
    assert "CFG004" not in codes(run)


def test_healthy_hf_trainer_gets_only_info_notes_from_config_lint() -> None:
    d = diagnose(sample("healthy_hf_trainer"))
    cfg = [f for f in d.findings if f.code.startswith("CFG")]
    assert cfg and all(f.severity is Severity.INFO for f in cfg)
    assert d.verdict.family is Family.HEALTHY
