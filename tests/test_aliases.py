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


@pytest.mark.parametrize(
    ("raw", "canonical"),
    [
        # Keras metrics named for their kind, and their val_ twins
        ("sparse_categorical_accuracy", "accuracy"),
        ("val_sparse_categorical_accuracy", "eval_accuracy"),
        ("binary_accuracy", "accuracy"),
        ("val_categorical_accuracy", "eval_accuracy"),
        # top-1 accuracy as ImageNet scripts spell it
        ("Prec@1", "accuracy"),
        ("acc1", "accuracy"),
        ("accuracy_top-1", "accuracy"),
        ("eval_top1", "eval_accuracy"),
        ("val_top1", "eval_accuracy"),
        # a held-out split called test or dev is the eval split, as test_loss already was
        ("test_acc", "eval_accuracy"),
        ("test_accuracy", "eval_accuracy"),
        ("test_sparse_categorical_accuracy", "eval_accuracy"),
        ("dev_loss", "eval_loss"),
        ("dev_acc", "eval_accuracy"),
        # a phase prefix rewrites only a known tag
        ("test_time", "test_time"),
        ("dev_set_size", "dev_set_size"),
    ],
)
def test_accuracy_and_held_out_spellings(raw: str, canonical: str) -> None:
    assert canonical_tag(raw) == canonical


def _tags(frame) -> dict[str, list[float]]:
    return {str(t): frame[frame["tag"] == t]["value"].tolist()
            for t in frame["tag"].cat.categories}


def test_two_names_of_one_quantity_on_one_step_stay_apart() -> None:
    """A line that prints ``loss`` and ``total_loss`` (or ``avg_loss``) gives two series: the
    more direct name is the training loss, the other keeps its own name."""
    from autopsy.model.scalars import make_scalars

    frame = make_scalars([1, 1, 2, 2], ["total_loss", "loss", "total_loss", "loss"],
                         [9.1, 2.0, 9.2, 1.0], source="train.log")
    assert _tags(frame) == {"total_loss": [9.1, 9.2], "loss": [2.0, 1.0]}


def test_the_name_written_on_every_step_keeps_the_series() -> None:
    """Megatron's ``lm loss`` on every iteration and one stray ``loss`` on an eval line: the
    series logged throughout is the training loss."""
    from autopsy.model.scalars import make_scalars

    steps = [100, 200, 300, 300]
    frame = make_scalars(steps, ["lm loss", "lm loss", "lm loss", "loss"],
                         [6.7, 6.2, 5.7, 4.5], source="train.log")
    assert _tags(frame)["loss"] == [6.7, 6.2, 5.7]
    assert _tags(frame)["loss"] != [4.5]


def test_two_names_that_never_meet_are_one_series() -> None:
    """``loss`` in one file and ``train_loss`` in another (or on other steps) are still one
    training loss."""
    from autopsy.model.scalars import make_scalars

    frame = make_scalars([1, 2, 3, 4], ["loss", "loss", "train_loss", "train_loss"],
                         [4.0, 3.0, 2.0, 1.0], source=["a.log", "a.log", "b.log", "b.log"])
    assert _tags(frame) == {"loss": [4.0, 3.0, 2.0, 1.0]}
