"""FLAT004 chance-level: a flat loss at ln(num_labels) or ln(vocab_size)."""

from __future__ import annotations

import math

from flat_cases import assert_verdict_matches_label, codes, falling, noisy
from runs import synthetic_run

from autopsy.api import diagnose
from autopsy.model import Family


def test_fires_at_ln_num_labels() -> None:
    run = synthetic_run({"loss": noisy(math.log(4), 60, noise=0.01),
                         "grad_norm": noisy(0.4, 60, noise=0.3)},
                        config={"num_labels": 4, "learning_rate": 3e-5})
    d = diagnose(run)
    assert d.verdict.family is Family.NOT_DECREASING
    assert d.verdict.cause == "chance_level"
    assert d.verdict.code == "FLAT004"
    assert "ln(4)" in d.verdict.message


def test_fires_at_ln_vocab_size() -> None:
    run = synthetic_run({"loss": noisy(math.log(32000) * 1.01, 80, noise=0.005),
                         "grad_norm": noisy(2.0, 80, noise=0.3)},
                        config={"vocab_size": 32000, "learning_rate": 1e-4})
    f = codes(run)["FLAT004"]
    assert f.cause == "chance_level" and "32000" in f.message


def test_fires_with_hf_default_two_labels_for_a_classifier_head() -> None:
    run = synthetic_run({"loss": noisy(0.70, 40, noise=0.01), "grad_norm": noisy(0.2, 40)},
                        config={"architectures": ["BertForSequenceClassification"],
                                "vocab_size": 30522, "learning_rate": 2e-5})
    f = codes(run)["FLAT004"]
    assert "ln(2)" in f.message
    assert any("default" in e.summary for e in f.evidence)


def test_near_miss_flat_away_from_chance_is_generic() -> None:
    run = synthetic_run({"loss": noisy(1.0, 60), "grad_norm": noisy(0.4, 60)},
                        config={"num_labels": 4, "learning_rate": 3e-5})
    found = codes(run)
    assert "FLAT004" not in found and "FLAT005" in found


def test_near_miss_starts_at_chance_then_learns_passes() -> None:
    run = synthetic_run({"loss": falling(math.log(32), 0.7, 60), "grad_norm": noisy(0.5, 60)},
                        config={"vocab_size": 32, "learning_rate": 1e-2})
    assert not any(c.startswith("FLAT") for c in codes(run))


def test_fires_on_sample_chance_level_classifier() -> None:
    assert_verdict_matches_label("chance_level_classifier", "FLAT004")


def test_fires_without_a_config_on_a_loss_stuck_exactly_at_ln2() -> None:
    from runs import synthetic_run

    from autopsy.api import diagnose

    # a binary classifier whose output collapsed: the loss printed as 0.6931 from then on
    d = diagnose(synthetic_run({"loss": [0.6773, 2.4587, 5.3353, 1.0234] + [0.6931] * 12}))
    assert (d.verdict.code, d.verdict.cause) == ("FLAT004", "chance_level")


def test_near_miss_passes_on_a_plateau_near_ln2_that_still_moves() -> None:
    from runs import synthetic_run

    from autopsy.api import diagnose

    d = diagnose(synthetic_run({"loss": [0.9, 0.8, 0.75, 0.7, 0.6934, 0.6929, 0.6933, 0.693]}))
    assert all(f.code != "FLAT004" for f in d.findings)


def test_fires_on_an_eval_loss_at_ln4_when_no_training_loss_is_logged() -> None:
    """A run that logs only its evaluations (``Val epoch N has acc 0.249 and loss 1.386``,
    a four-way multiple-choice model) judged on the eval loss, and says so."""
    from runs import synthetic_run

    from autopsy.api import diagnose

    d = diagnose(synthetic_run({"eval_loss": [1.3863, 1.3863, 1.3863, 1.3863, 1.3863]}))
    assert (d.verdict.code, d.verdict.cause) == ("FLAT004", "chance_level")
    (f,) = [f for f in d.findings if f.code == "FLAT004"]
    assert f.evidence[0].tag == "eval_loss" and "no training loss" in f.evidence[0].summary
