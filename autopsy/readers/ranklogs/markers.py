"""The literal markers searched for in raw bytes, before any regex runs.

Only lines holding one of these literals are decoded and parsed; everything else
in a log is skipped by ``bytes.find`` (see ``docs/performance.md``). Event markers
are rare; metric markers are frequent but cheap to confirm.
"""

from __future__ import annotations

import re
from typing import Any

#: Literals that may start an event (case-sensitive, as PyTorch/NCCL write them).
EVENT_MARKERS: tuple[bytes, ...] = (
    b"Traceback (most recent call last)",
    b"(most recent call first)",  # a faulthandler stack dump's thread header
    b" (idle): ", b" (active",  # a py-spy dump's thread header: Thread 11792 (idle): "..."
    b"atchdog",  # Watchdog caught ..., watchdog got stuck, detected by watchdog ...
    b"Timeout at NCCL work",
    b"lagging",
    b"imed out",  # gloo "Timed out waiting", store barrier, DistStoreError, socket, heartbeat
    b"by peer",  # Connection closed by peer, Connection reset by peer
    b"NCCL WARN",
    b"ncclRemoteError",
    b"Detected mismatch between collectives",
    b"Received data size doesn't match",
    b"monitoredBarrier",
    b"Socket Timeout",
    b"failed (exitcode:",
    b"srun: error:",
    b"ChildFailedError:",
    b"signal",  # death signal, closing signal, killed by signal
    b") received by PID",
    b"out of memory",
    b"can't allocate memory",
    b"Killed",
    b"OVERFLOW!",
    b"overflow",  # Grad overflow on iteration, Gradient overflow.  Skipping step
    b"Overflow detected",  # DeepSpeed's fused optimizer (log_dist) in later releases
    b"Saving model checkpoint",
    # an exception line printed without its traceback header
    b"Error: ", b"Exception: ", b"KeyboardInterrupt",
    # slurm, the kernel's OOM killer
    b"CANCELLED AT", b"exceeded memory limit", b"oom-kill", b"oom_kill",  # (and "Killed")
    # NaN messages of detectron2, TF, Keras
    b"infinite or NaN", b"diverged with loss", b"NaN loss", b"Invalid loss",
    b" detected in output of", b" detected in input of",  # fairseq's NanDetector
    # resumes (mmcv "resumed epoch N, iter M", "Resuming from checkpoint ...")
    b"esum",
    # launchers and crashes: DeepSpeed's return codes, segfaults, logged exception classes,
    # the store-based barrier's waiting message
    b"return code = ", b"with exit code ", b"egmentation fault", b"SIGSEGV", b"<class '",
    # TensorFlow's allocator
    b"OOM when allocating",  # (and "out of memory": "ran out of memory trying to allocate")
    b"store based barrier",
    # the device failing: device-side asserts (a label id out of range), CUDA errors
    b"device-side assert", b"Assertion `", b"CUDA error",
    # the NVIDIA driver's GPU error reports (kernel log lines pasted into a job log)
    b"NVRM: Xid",
)

#: Literals of per-step metric lines (confirmed by the parsers in ``metrics``).
METRIC_MARKERS: tuple[bytes, ...] = (
    b"loss", b"Loss", b"LOSS", b"step=", b"logging_steps",
    b"ntropy",  # MXNet's CrossEntropy / cross-entropy metric
    b"elapsed time per iteration",  # Megatron-LM's step line (its loss may be cut off)
    b"xent: ",  # OpenNMT-py ``Step N/M; acc: ..; ppl: ..; xent: ..; lr: ..``
    # OpenNMT-py's evaluation, one figure a line after the step line that triggered it
    b"Validation perplexity: ", b"Validation accuracy: ",
    b"Epoch[",  # MXNet Module.fit: Epoch[e] Batch [b], Train-, Validation-, Time cost
    b"Iter[", b"Iteration[",  # MXNet's Speedometer with no metric; its 2015 FeedForward
    b'": ',  # a pretty-printed JSON object's "key": value lines (a pasted log_history)
    b"Epoch ",  # a Keras ``Epoch 2/10`` line (it numbers the progress lines after it)
    b"accuracy:\t\t",  # Lasagne's ``  validation accuracy:\t\t89.23 %`` after ``Epoch N of M``
    b", lr = ",  # Caffe ``Iteration N, lr = X``
    b"cost = ",  # the TF1 tutorials' ``Epoch: 0010 cost = 15.205759`` (the loss)
    b"net output #",  # Caffe ``Train net output #0: accuracy = 0``, ``Test net output #0: ...``
    b"Testing net",  # Caffe ``Iteration N, Testing net (#0)``: the step of the outputs after
    b"(val)",  # mmengine Epoch(val)/Iter(val) evaluation lines (mAP, accuracy; no loss)
    b"====> Epoch:",  # VITS-family epoch times (no loss on the line)
    b"epoch:",  # BasicSR ``<epoch: 16, iter: 3,800, lr:...> l_all: ...`` (its losses: l_*)
    b"images/sec: ",  # tf_cnn_benchmarks ``80\timages/sec: 37.5 +/- 0.1 (jitter = 0.6)\t0.596``
    # Ultralytics YOLO console lines, whose loss columns name no loss: the GPU memory column
    # ('%11s' of "11.3G") then the first loss ('%11.4g'), so a G and at least 4 spaces
    b"G    ",
    b"batches |",  # word_language_model ``| epoch 1 | 200/ 2983 batches | ... | loss``
    # a pace on a line of its own: TF Estimator's ``global_step/sec: 11.4`` and
    # ``examples/sec: 68.9``, DeepSpeed's throughput timer ``..., CurrSamplesPerSec=25.7``
    b"global_step/sec: ", b"examples/sec: ", b"CurrSamplesPerSec=",
    # GluonNLP fine-tuning: an evaluation's opening and closing lines (its batch lines and
    # the training lines hold "loss")
    b"Now we are doing evaluation on", b"validation metrics:",
    # PyTorch's char-RNN tutorials: ``5000 5% (0m 12s) 2.4177 Coelho / Portuguese ✓`` and
    # ``0m 5s (5000 5%) 2.6523`` (no loss named on the line)
    b"% (", b"%) ",
    # an evaluation's accuracy on a line of its own (``Iter 5120: Testing Accuracy = 0.43``,
    # ``step 300 val_acc: 0.5``)
    b"ccuracy", b"acc:", b"acc=", b"Acc:", b"Acc=",
    b" : Up. ",  # Marian ``Ep. 1 : Up. 1000 : Sen. 81308 : Cost 84.54 : ...`` and [valid]
)

#: Markers that open a multi-line record, kept whole within one block.
BLOCK_MARKERS: tuple[bytes, ...] = (b"Traceback (most recent call last)", b"ChildFailedError:",
                                    b"(most recent call first)", b" (idle): ", b" (active")

ALL_MARKERS: tuple[bytes, ...] = EVENT_MARKERS + METRIC_MARKERS

#: One pattern per marker set, for checking a single line (``search``) or an
#: offset (``match``); over whole blocks ``bytes.find`` per literal is faster.
EVENT_RE: re.Pattern[bytes] = re.compile(b"|".join(re.escape(m) for m in EVENT_MARKERS))
ALL_RE: re.Pattern[bytes] = re.compile(b"|".join(re.escape(m) for m in ALL_MARKERS))
METRIC_RE: re.Pattern[bytes] = re.compile(b"|".join(re.escape(m) for m in METRIC_MARKERS))


def hit_lines(block: bytes, markers: tuple[bytes, ...] = ALL_MARKERS) -> list[int]:
    """Return the sorted start offsets of the lines of ``block`` holding a marker.

    The compiled search (``_shapematch.lines_with``, one pass over the block) where it was
    built; else :func:`hit_lines_py`, which gives the same."""
    if _COMPILED is not None:
        return _COMPILED(block, markers)
    return hit_lines_py(block, markers)


def hit_lines_py(block: bytes, markers: tuple[bytes, ...] = ALL_MARKERS) -> list[int]:
    """:func:`hit_lines` in Python: one ``bytes.find`` per marker over the block."""
    starts: set[int] = set()
    find = block.find
    rfind = block.rfind
    for marker in markers:
        pos = find(marker)
        while pos >= 0:
            start = rfind(b"\n", 0, pos) + 1
            starts.add(start)
            end = find(b"\n", pos)
            if end < 0:
                break
            pos = find(marker, end)
    return sorted(starts)


def _compiled_search() -> Any:
    """The compiled marker search, or None (:func:`.compiled.compiled`)."""
    from autopsy.readers.ranklogs.compiled import compiled

    module = compiled()
    return None if module is None else module.lines_with


_COMPILED = _compiled_search()
