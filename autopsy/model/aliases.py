"""Canonical scalar tag names: the alias table, as data, in one place.

Writers spell the same quantity many ways (``train/loss``, ``train_loss``,
``loss``; ``lr``, ``learning_rate``, ``train/learning_rate``). Rules ask for the
canonical name; the raw name is always kept beside it in ``raw_tag``.

Lookup order: the raw tag is normalised (lower case, ``-`` and spaces become
``_``), looked up in :data:`TAG_ALIASES`; failing that, a known prefix
(:data:`PREFIX_RULES`) is rewritten and the rest looked up again; failing that the
normalised raw tag is the canonical name.
"""

from __future__ import annotations

from functools import lru_cache

#: canonical name -> the raw spellings (already normalised) that mean it.
TAG_ALIASES: dict[str, tuple[str, ...]] = {
    "loss": (
        "loss", "train/loss", "train_loss", "training_loss", "training/loss", "train/lm_loss",
        "lm_loss", "lm loss", "loss/train", "train/loss_step", "train_loss_step", "loss_step",
        # detectron2 (metrics.json, log.txt); Ultralytics YOLO parts summed by its reader
        "total_loss", "train/loss_sum",
        # MXNet's CrossEntropy metric, the training loss its Speedometer prints
        "cross-entropy", "crossentropy", "cross_entropy",
        # OpenNMT-py's step line (``Step N/M; acc: ..; ppl: ..; xent: ..; lr: ..``)
        "xent",
        "main/loss",  # Chainer's LogReport: the observed model is named "main"
        "cost",  # TF1 tutorials print their loss as ``cost = X``
        "loss_train",  # litgpt: ``loss train: 1.062, val: 1.057``
        # the training loss averaged over the batches so far or over the epoch, as loops
        # that keep a running mean print it
        "avg_loss", "average_loss", "mean_loss", "running_loss", "loss_avg", "epoch_loss",
    ),
    "eval_loss": (
        "eval_loss", "eval/loss", "val_loss", "val/loss", "validation_loss", "validation/loss",
        "loss/eval", "loss/val", "valid_loss", "valid/loss", "test_loss", "test/loss",
        "val/loss_sum",
        "validation/main/loss",  # Chainer's Evaluator
        "dev_loss", "dev/loss",  # NLP scripts evaluate on the "dev" split
    ),
    "grad_norm": (
        "grad_norm", "train/grad_norm", "gradient_norm", "grad-norm", "grad norm", "gradnorm",
        "train/gradient_norm", "grad_norm/total", "total_grad_norm", "global_grad_norm",
        "gnorm",
    ),
    "learning_rate": (
        "learning_rate", "lr", "train/learning_rate", "train/lr", "train_lr", "learning-rate",
        "learning rate", "learningrate", "lr-adamw", "lr-adam", "lr-sgd", "lr/group_0",
        "lr_group_0",
    ),
    "loss_scale": (
        "loss_scale", "loss scale", "train/loss_scale", "loss_scaler", "scaler/scale",
        "grad_scale", "train/grad_scale", "amp/loss_scale",
    ),
    "epoch": ("epoch", "train/epoch", "epochs"),
    # Megatron prints milliseconds; kept apart from step_time (seconds).
    "step_time_ms": ("elapsed time per iteration (ms)", "elapsed_time_per_iteration_(ms)"),
    # mmengine and timm log the whole iteration as ``time`` (seconds, data time included).
    "step_time": (
        "step_time", "train/step_time", "iteration_time", "iter_time", "time/step", "batch_time",
        "time_per_step", "time", "train/time", "iter_time_s", "step_time_s",
        # the Paddle suites: the whole iteration, data wait included
        "batch_cost",
        # a log that counts epochs as its steps (VITS's "====> Epoch: N, cost X s")
        "epoch_time",
    ),
    "data_time": (
        "data_time", "train/data_time", "time/data", "dataloader_time", "data_load_time",
        "time/data_loading", "data_loading_time", "data_wait_time",
        "reader_cost", "data_cost",  # the Paddle suites
        # the MetricLogger of torchvision's references, maskrcnn-benchmark, DETR, DeiT, MAE,
        # DINO: ``time: 0.7022 (0.7111)  data: 0.4336 (0.4301)``
        "data",
    ),
    # Megatron's timers print milliseconds: its data timer is ``batch-generator``.
    "data_time_ms": ("batch_generator", "data_time_ms"),
    # Forward + backward + optimizer, without the data wait (seconds).
    "compute_time": (
        "compute_time", "train/compute_time", "time/compute", "fwd_bwd_time", "model_time",
        "forward_backward_time",
    ),
    # DeepSpeed ``wall_clock_breakdown`` and Megatron timers (milliseconds).
    "compute_time_ms": ("forward_backward", "forward_backward_time_ms", "compute_time_ms"),
    # Model FLOP/s per device as the framework computes it (Megatron prints TFLOP/s per GPU).
    "tflops_per_device": (
        "throughput per gpu (tflop/s/gpu)", "throughput_per_gpu_(tflop/s/gpu)", "tflops",
        "tflops_per_gpu", "train/tflops", "tflops_per_device",
    ),
    "global_batch_size": ("global batch size", "global_batch_size"),
    # HF Trainer with include_num_input_tokens_seen: a running total over all ranks.
    "tokens_seen": ("num_input_tokens_seen", "train/num_input_tokens_seen", "tokens_seen"),
    "tokens_per_step": ("tokens_per_step", "train/tokens_per_step", "tokens_per_iteration",
                        "num_tokens_per_step"),
    "throughput": (
        "throughput", "train/throughput", "samples_per_second", "tokens_per_second",
        "train/tokens_per_second",
        "tokens_per_sec", "samples/sec", "it/s", "wps", "speed",
        "ips",  # the Paddle suites: instances (images, samples) per second
        "images_per_second", "images/sec", "img/s",  # tf_cnn_benchmarks, image pipelines
        # figures written with their unit (readers.ranklogs.rates): Caffe's iter/s, the TF
        # tutorials' examples/sec, TF Estimator's global_step/sec, OpenNMT-py's tok/s,
        # Marian's words/s, DeepSpeed's throughput timer
        "iter/s", "examples/sec", "steps_per_second", "tokens/s", "words/s",
        "currsamplespersec",
    ),
    "skipped_steps": (
        "skipped_steps", "number of skipped iterations", "skipped_iterations", "train/skipped",
        "skipped",  # DeepSpeed's is cumulative, Megatron's per interval: NAN003 reads both
    ),
    # The HF Trainer's end-of-training summary (written once, to TensorBoard as
    # ``train/train_*``): run averages, never per-step points of the series above.
    "train_loss_mean": ("train/train_loss",),
    "train_runtime": ("train/train_runtime",),
    "train_samples_per_second": ("train/train_samples_per_second",),
    "train_steps_per_second": ("train/train_steps_per_second",),
    "total_flos": ("train/total_flos",),
    "eval_accuracy": ("eval_accuracy", "eval/accuracy", "val_acc", "val/acc", "val_accuracy",
                      "validation accuracy", "validation_accuracy",
                      "validation/main/accuracy",  # Chainer's Evaluator
                      # a held-out split named test or dev, as test_loss is the eval loss
                      "eval_acc", "test_acc", "test_accuracy", "test/acc", "test/accuracy",
                      "dev_acc", "dev_accuracy",
                      "eval_top1"),  # timm's summary.csv: top-1 accuracy in percent
    "accuracy": ("accuracy", "train/accuracy", "train_acc", "acc",
                 "acc@1",  # the PyTorch ImageNet example's AverageMeter (top-1, in percent)
                 "main/accuracy",  # Chainer's LogReport
                 # Keras names the metric after its kind when compile(metrics=[...]) asks
                 # for it by class or full name
                 "sparse_categorical_accuracy", "categorical_accuracy", "binary_accuracy",
                 # top-1 accuracy: the old PyTorch ImageNet example (Prec@1), timm and the
                 # torchvision references (acc1), mmcls (accuracy_top-1), tf_cnn_benchmarks
                 "top1", "acc1", "prec@1", "prec1", "top1_acc", "acc_top1",
                 "accuracy_top_1", "top_1_accuracy"),
    "perplexity": ("perplexity", "ppl", "train/perplexity", "train/ppl"),
    "eval_perplexity": ("eval_perplexity", "eval/perplexity", "val_ppl", "eval/ppl", "valid_ppl",
                        "validation perplexity", "validation_perplexity"),
    "nan_iterations": ("number of nan iterations", "nan_iterations"),

    "weight_norm": ("weight_norm", "param_norm", "params_norm", "parameter_norm"),
}

#: (raw prefix, canonical prefix) rewrites tried when the whole tag is not an alias.
PREFIX_RULES: tuple[tuple[str, str], ...] = (
    ("eval/", "eval_"),
    ("val/", "eval_"),
    ("validation/", "eval_"),
    ("train/", ""),
    ("training/", ""),
)

#: Phase prefixes joined by ``_`` (MXNet's ``Train-CrossEntropy``, ``Validation-accuracy``
#: end as ``train_crossentropy``, ``val_accuracy``): rewritten only when the rest is a
#: known tag, so ``val_check_interval`` stays itself. (raw prefix, phase): ``""`` is
#: training (the rest's own name), ``"eval_"`` the rest's evaluation twin.
JOINED_PHASE_PREFIXES: tuple[tuple[str, str], ...] = (
    ("train_", ""),
    ("training_", ""),
    ("val_", "eval_"),
    ("valid_", "eval_"),
    ("validation_", "eval_"),
    ("test_", "eval_"),
    ("testing_", "eval_"),
    ("dev_", "eval_"),
)

_LOOKUP: dict[str, str] = {
    raw: canon for canon, raws in TAG_ALIASES.items() for raw in (canon, *raws)
}


def alias_rank(raw: str, canonical: str) -> int:
    """How directly ``raw`` names ``canonical``: 0 for the name itself, then its place in
    :data:`TAG_ALIASES` (its most usual spellings first), and last a name that reached it
    through a prefix rule (``Train-accuracy``). Where one file writes two names of one
    quantity on the same steps (``loss`` and ``total_loss``, ``acc`` and ``top1``), the
    lower rank keeps the canonical name (:func:`~autopsy.model.scalars.make_scalars`)."""
    names = (canonical, *TAG_ALIASES.get(canonical, ()))
    for key in (raw.strip().lower(), normalise(raw)):
        if key in names:
            return names.index(key)
    return len(names)


def normalise(raw: str) -> str:
    """Lower-case a raw tag and turn ``-`` and spaces into ``_``."""
    return raw.strip().lower().replace("-", "_").replace(" ", "_")


@lru_cache(maxsize=4096)
def canonical_tag(raw: str) -> str:
    """Return the canonical name of a raw scalar tag.

    >>> canonical_tag("train/loss"), canonical_tag("lr"), canonical_tag("eval/accuracy")
    ('loss', 'learning_rate', 'eval_accuracy')
    """
    for key in (raw.strip().lower(), normalise(raw)):
        if key in _LOOKUP:
            return _LOOKUP[key]
    norm = normalise(raw)
    for prefix, replacement in PREFIX_RULES:
        if norm.startswith(prefix) and len(norm) > len(prefix):
            rest = norm[len(prefix):]
            if replacement == "":
                if rest in _LOOKUP:
                    return _LOOKUP[rest]
                continue
            candidate = replacement + rest
            return _LOOKUP.get(candidate, candidate)
    for prefix, phase in JOINED_PHASE_PREFIXES:
        if norm.startswith(prefix) and norm[len(prefix):] in _LOOKUP:
            canon = _LOOKUP[norm[len(prefix):]]
            if not phase:
                return canon
            if not canon.startswith("eval_") and phase + canon in TAG_ALIASES:
                return phase + canon
    return norm
