"""Thresholds shared across families: the typical learning-rate range of each regime.

Every family declares its thresholds in one module, ``autopsy/rules/<family>/thresholds.py``
(``nan_inf``, ``diverging``, ``not_decreasing``, ``overfitting``, ``oom``, ``slow``,
``hang``, ``crash``, ``resume``, ``healthy``, ``config``), each as a
:class:`~autopsy.rules.registry.Threshold`: its default and why it has that value. A rule
passes the declarations it uses to :func:`~autopsy.rules.registry.rule`; rules that judge
one event together (the NaN/Inf classification, the flat-loss causes, the stalls) share one
declaration, so ``--set NAN.spike_ratio=20`` tunes them alike. This module holds the ones
several families use: :data:`LR_REGIME`, read by :func:`autopsy.rules.lr_regime.lr_regime`
and declared by FLAT001-FLAT005 (an LR too low), CFG003 (no warm-up with an LR too high)
and NAN001, NAN003, NAN004 (the blow-up's cause).

``autopsy rules --thresholds`` lists every threshold with its default, its rules and its
why; ``docs/rules.md`` has the same table; ``autopsy explain CODE`` shows one rule's.
"""

from __future__ import annotations

from autopsy.rules.registry import Threshold

_REGIME = (" The regime comes from the run's config (autopsy.rules.lr_regime): LoRA when "
           "finetune_mode=lora (an adapter_config.json was found), SGD when optim names "
           "plain SGD, otherwise full fine-tuning with an Adam-family optimizer.")

_LOW = (" A peak LR below the bottom of the range moves the weights too little: FLAT003 names "
        "it as the cause of a flat loss (lr_too_low).")

_HIGH = (" A peak LR above the top of the range is a risk: CFG003 warns when there is no "
         "warm-up either, and the NaN rules call an LR of high_lr_factor times it or more at "
         "the blow-up too high (lr_too_high).")

#: Typical LR ranges per regime (threshold name -> declaration).
LR_REGIME: dict[str, Threshold] = {
    "lora_lr_low": Threshold(1e-4, (
        "Bottom of the typical LR range of LoRA fine-tuning (1e-4..3e-4). LoRA trains small "
        "adapters, whose update starts at zero, on a frozen model: they take LRs about ten "
        "times those of full fine-tuning (full_lr_low..full_lr_high)." + _REGIME + _LOW)),
    "lora_lr_high": Threshold(3e-4, (
        "Top of the typical LR range of LoRA fine-tuning (1e-4..3e-4)." + _REGIME + _HIGH)),
    "full_lr_low": Threshold(1e-5, (
        "Bottom of the typical LR range of full fine-tuning of a pretrained model with Adam "
        "or AdamW (1e-5..5e-5: the BERT fine-tuning recipe searched 2e-5..5e-5). The config "
        "cannot tell fine-tuning from pre-training from scratch (typically 1e-4..1e-3), so "
        "when no adapter config or SGD optimizer is found this regime is assumed and the "
        "evidence says so." + _REGIME + _LOW)),
    "full_lr_high": Threshold(5e-5, (
        "Top of the typical LR range of full fine-tuning with an Adam-family optimizer "
        "(1e-5..5e-5); 5e-5 is also the HF Trainer's default learning_rate, so a higher peak "
        "was chosen on purpose." + _REGIME + _HIGH)),
    "sgd_lr_low": Threshold(1e-3, (
        "Bottom of the typical LR range of plain SGD (1e-3..1e-1). Without Adam's per-"
        "parameter normalisation of the step, SGD takes far larger LRs than Adam."
        + _REGIME + _LOW)),
    "sgd_lr_high": Threshold(1e-1, (
        "Top of the typical LR range of plain SGD (1e-3..1e-1); 0.1 is the classic starting LR "
        "of SGD with momentum on image classifiers (the ResNet recipe); larger LRs go with "
        "large batches and a warm-up (the linear scaling rule)." + _REGIME + _HIGH)),
}
