"""The alias table maps the spellings the issue names to canonical tags."""

from __future__ import annotations

import pytest

from autopsy.model.aliases import TAG_ALIASES, canonical_tag


@pytest.mark.parametrize(
    ("raw", "canonical"),
    [
        ("train/loss", "loss"),
        ("loss", "loss"),
        ("train_loss", "loss"),
        ("lr", "learning_rate"),
        ("learning_rate", "learning_rate"),
        ("train/learning_rate", "learning_rate"),
        ("grad_norm", "grad_norm"),
        ("train/grad_norm", "grad_norm"),
        ("gradient_norm", "grad_norm"),
        ("eval/loss", "eval_loss"),
        ("eval_loss", "eval_loss"),
        ("loss scale", "loss_scale"),
        ("train/epoch", "epoch"),
        ("eval/accuracy", "eval_accuracy"),
        ("Train/Loss", "loss"),
    ],
)
def test_known_spellings_map_to_canonical(raw: str, canonical: str) -> None:
    assert canonical_tag(raw) == canonical


def test_unknown_tag_is_kept_normalised() -> None:
    assert canonical_tag("my/Custom-Metric") == "my/custom_metric"
    assert canonical_tag("train/some_new_thing") == "train/some_new_thing"


def test_no_raw_spelling_means_two_things() -> None:
    seen: dict[str, str] = {}
    for canon, raws in TAG_ALIASES.items():
        for raw in raws:
            assert seen.setdefault(raw, canon) == canon, raw


@pytest.mark.parametrize(
    ("raw", "canonical"),
    [
        ("train/train_loss", "train_loss_mean"),
        ("train/train_runtime", "train_runtime"),
        ("train/train_samples_per_second", "train_samples_per_second"),
        ("train/total_flos", "total_flos"),
    ],
)
def test_hf_end_of_training_summary_is_not_a_series_point(raw: str, canonical: str) -> None:
    assert canonical_tag(raw) == canonical


@pytest.mark.parametrize(
    ("raw", "canonical"),
    [
        ("Train-CrossEntropy", "loss"),       # MXNet's Speedometer and epoch lines
        ("Train-accuracy", "accuracy"),
        ("Validation-accuracy", "eval_accuracy"),
        ("val_CrossEntropy", "eval_loss"),
        ("train_perplexity", "perplexity"),
        ("val_perplexity", "eval_perplexity"),
        ("valid_accuracy", "eval_accuracy"),
        ("val_check_interval", "val_check_interval"),   # the rest is no known tag: kept
        ("Train-SmoothL1", "train_smoothl1"),
        ("val_eval_loss", "val_eval_loss"),             # no eval twin of an eval tag
    ],
)
def test_a_phase_joined_by_an_underscore_maps_only_onto_a_known_tag(raw: str,
                                                                    canonical: str) -> None:
    assert canonical_tag(raw) == canonical
