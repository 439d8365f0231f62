"""The exception catalogue: which family and cause the exception that ended a run names.

A traceback is the most common thing a dead run leaves, and ``Traceback (most recent
call last)`` says nothing by itself: what matters is the innermost exception of the
last traceback, its type and its message. ``torch.OutOfMemoryError`` is an
out-of-memory failure, ``Missing key(s) in state_dict`` at load time a resume failure,
``FloatingPointError: Minimum loss scale reached`` an fp16 overflow, a
``KeyboardInterrupt`` raised while every frame waits on a queue a hang the user gave up
on. Only what no signature claims is a crash with cause ``exception``.

:func:`classify` is the one place that decides this (``docs/verdicts.md``); the crash
rule leaves to the other families' rules every exception this catalogue gives them, and
those rules read the same catalogue. Signatures are tried in order; the first that
matches the exception type and message wins.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, NamedTuple

from autopsy.model.finding import Family


@dataclass(frozen=True)
class Signature:
    """One kind of fatal exception: what it is called and what it means."""

    name: str
    family: Family
    cause: str | None
    #: searched in ``"<type>: <message>"``
    pattern: re.Pattern[str]
    #: why it is this family, for the evidence line and ``docs/verdicts.md``
    why: str


def _sig(name: str, family: Family, cause: str | None, pattern: str, why: str) -> Signature:
    return Signature(name, family, cause, re.compile(pattern, re.IGNORECASE), why)


#: The catalogue, tried in order (a more specific signature before a broader one).
SIGNATURES: tuple[Signature, ...] = (
    # out of memory: OOM001/OOM002 explain them from their own events
    _sig("host_oom", Family.OOM, "host_oom",
         r"DefaultCPUAllocator: can't allocate memory|^MemoryError\b|\bMemoryError:|"
         r"std::bad_alloc|Cannot allocate memory",
         "the host ran out of RAM"),
    _sig("cuda_oom", Family.OOM, "cuda_oom",
         r"OutOfMemoryError|CUDA out of memory|CUDA error: out of memory|"
         r"ResourceExhaustedError|OOM when allocating|out of memory",
         "an allocation on the accelerator failed"),
    # loading a checkpoint to resume
    _sig("optimizer_group_mismatch", Family.RESUME, "optimizer_group_mismatch",
         r"loaded state dict contains a parameter group that doesn't match|"
         r"loaded state dict has a different number of parameter groups",
         "the saved optimizer state does not fit the optimizer's parameter groups"),
    _sig("state_dict_mismatch", Family.RESUME, "state_dict_mismatch",
         r"Error\(s\) in loading state_dict|Missing key\(s\) in state_dict|"
         r"Unexpected key\(s\) in state_dict|size mismatch for \S+: copying a param",
         "the checkpoint's tensors do not fit the model"),
    _sig("torn_checkpoint", Family.RESUME, "torn_checkpoint",
         r"PytorchStreamReader failed|failed finding central directory|storage has wrong size|"
         r"unexpected EOF|invalid load key|Ran out of input|file might be corrupted|"
         r"incomplete metadata|HeaderTooLarge|Error while deserializing header",
         "the checkpoint file is cut short or corrupt"),
    _sig("load_error", Family.RESUME, "load_error",
         r"Weights only load failed|UnpicklingError|Can't find a valid checkpoint|"
         r"No valid checkpoint found|checkpoint\S* (?:not found|does not exist)",
         "the checkpoint to resume from cannot be loaded"),
    # NaN / Inf raised by the framework
    _sig("min_loss_scale", Family.NAN_INF, "fp16_overflow",
         r"Minimum loss scale reached|loss scale.*(?:below|reached) (?:the )?min|"
         # GPT-NeoX's OverflowMonitor: "Skipped 50 iterations in a row due to Overflow"
         r"iterations in a row due to [Oo]verflow|"
         # DeepSpeed's loss scaler with raise_error_at_min_scale
         r"Current loss scale already at minimum",
         "fp16 gradients overflowed at every loss scale down to the minimum"),
    _sig("nan_loss", Family.NAN_INF, None,
         r"Loss became infinite or NaN|Model diverged with loss = NaN|NaN loss during training|"
         r"loss is (?:nan|inf)|Loss is (?:nan|inf)|non-finite loss|Function '\w+' returned nan|"
         # a training script's own check: raise ValueError('NaN loss') (MindEyeV2)
         r"\b(?:NaN|nan|Inf|inf) loss\b",
         "the framework stopped on a non-finite loss"),
    # Megatron-LM's check of each gradient bucket before the data-parallel reduction
    # (an AssertionError, or the rerun state machine's RuntimeError)
    _sig("nan_grad", Family.NAN_INF, None,
         r"found (?:NaN|Inf) in local grad norm|Unexpected result (?:nan|inf)\b",
         "the framework found a non-finite gradient before the data-parallel reduction"),
    # collective timeouts are hangs (the hang rules explain them)
    _sig("collective_timeout", Family.HANG, "nccl_timeout",
         r"Watchdog caught collective operation timeout|collective operation timeout|"
         r"Timed out waiting \d+ms|RendezvousTimeoutError|DistStoreError.*[Tt]imeout|"
         r"Socket Timeout|wait timeout after",
         "a collective or the rendezvous timed out"),
    # device and communication failures: crashes with their own causes
    _sig("label_out_of_range", Family.CRASH, "label_out_of_range",
         r"(?:device-side assert|Assertion).*(?:t >= 0 && t < n_classes|cur_target >= 0 && "
         r"cur_target < n_classes|target \d+ is out of bounds|srcIndex < srcSelectDimSize)|"
         r"Target -?\d+ is out of bounds|IndexError: Target \d+",
         "a label id outside the number of classes"),
    _sig("cuda_error", Family.CRASH, "cuda_error",
         r"illegal memory access|device-side assert|CUDA error|CUBLAS_STATUS|CUDNN_STATUS|"
         r"cuDNN error|uncorrectable ECC|ECC error|\bXid\b|misaligned address|"
         r"unspecified launch failure|CUDA driver",
         "the device or its driver failed"),
    _sig("nccl_error", Family.CRASH, "nccl_error",
         r"NCCL error|ncclRemoteError|ncclInternalError|ncclSystemError|ncclUnhandledCudaError|"
         r"DistBackendError|Connection reset by peer|Connection closed by peer|"
         r"remote process exited|NET/IB|Broken pipe",
         "communication between ranks failed"),
    _sig("segfault", Family.CRASH, "segfault",
         r"Segmentation fault|SIGSEGV|signal 11\b|3221225477|0xC0000005|access violation",
         "the process died of a segmentation fault"),
    _sig("killed", Family.CRASH, "killed",
         r"\bSIGTERM\b|Signals\.SIGTERM|SignalException|DUE TO (?:TIME LIMIT|PREEMPTION|"
         r"JOB REQUEUE|NODE FAILURE)|preempted",
         "a signal from outside (the scheduler, a preemption) stopped the process"),
)

#: Exceptions a user raises by giving up on a run (Ctrl-C, ``scancel``, a SIGTERM).
INTERRUPTS = re.compile(r"^(?:KeyboardInterrupt|SystemExit)\b|\bSIGTERM\b|\bSIGINT\b")
#: Innermost functions of a thread that waits: a traceback ending in one of these after an
#: interrupt shows where the run was stuck.
WAITING = re.compile(r"^(?:wait|_wait_for_tstate_lock|acquire|join|poll|_poll|select|recv|"
                     r"recv_bytes|_recv|_recv_bytes|get|_get|sleep|barrier|all_reduce|"
                     r"allreduce|synchronize|_try_get_data|_next_data|_get_data|result|"
                     r"monitored_barrier|wait_for_workers|_wait_for_worker|read|readinto|put|__enter__)$")
#: Frames that show the data loader was the one waiting.
DATALOADER = re.compile(r"dataloader|_MultiProcessingDataLoaderIter|multiprocessing/queues",
                        re.IGNORECASE)


#: Characters of an exception's type and message the catalogue reads: the signatures sit
#: at the start of a message, and a bound keeps a hostile 64 KiB log line from costing the
#: patterns with ``.*`` a quadratic search.
MAX_TEXT = 4096


def classify_text(exception: str, message: str) -> Signature | None:
    """The signature of an exception given its type and message, or None (a plain crash)."""
    text = (f"{exception}: {message}" if exception else message)[:MAX_TEXT]
    for sig in SIGNATURES:
        if sig.pattern.search(text):
            return sig
    return None


def classify(details: Mapping[str, Any] | None, message: str = "") -> Signature | None:
    """The signature of a traceback event (its ``details`` and line), or None."""
    d = details if isinstance(details, Mapping) else {}
    exc = str(d.get("exception") or "")
    text = str(d.get("exc_message") or "")
    if not exc and not text:
        text = message
    return classify_text(exc, text)


def interrupted_wait(details: Mapping[str, Any] | None,
                     before: Mapping[str, Any] | None = None) -> str | None:
    """``"dataloader"`` or ``"wait"`` when the traceback is an interrupt (KeyboardInterrupt,
    SIGTERM) raised while the innermost frame waited: the user gave up on a stuck run.
    None otherwise. ``before``: the traceback just before it in the same log, whose frames
    stand for an interrupt printed without its own (processes writing into one log
    interleave their tracebacks)."""
    d = details if isinstance(details, Mapping) else {}
    exc = str(d.get("exception") or "")
    if not INTERRUPTS.search(exc) and not INTERRUPTS.search(str(d.get("exc_message") or "")):
        return None
    frames = [f for f in d.get("frames") or [] if isinstance(f, Mapping)]
    if not frames and isinstance(before, Mapping):
        frames = [f for f in before.get("frames") or [] if isinstance(f, Mapping)]
    if not frames or not WAITING.match(str(frames[-1].get("function") or "")):
        return None
    where: Iterable[str] = (f"{f.get('file', '')} {f.get('function', '')}" for f in frames)
    return "dataloader" if any(DATALOADER.search(w) for w in where) else "wait"


class ExceptionRow(NamedTuple):
    """A traceback or ``error.json`` row of ``run.events`` (with ``rank`` attributed and a
    ``role``), its signature, and the details of the traceback before it in the same log
    (processes writing into one log interleave their tracebacks: see
    :func:`interrupted_wait`)."""

    row: Any
    signature: Signature | None
    before: Mapping[str, Any] | None


def exception_rows(run: Any, roles: Iterable[str] = ("root",),
                   ctx: Any = None) -> list[ExceptionRow]:
    """The traceback and ``error.json`` rows of ``run.events`` with the given roles (see
    :func:`autopsy.signals.ranks.event_role`), in log order. With the rule's ``ctx``, the
    rows are read once per engine run for all the rules that ask."""
    every = (ctx.cached("exception_rows", lambda: _all_exception_rows(run))
             if ctx is not None else _all_exception_rows(run))
    wanted = set(roles)
    return [r for r in every if r.row["role"] in wanted]


def _all_exception_rows(run: Any) -> list[ExceptionRow]:
    from autopsy.rules.crash._failures import attributed

    if run.events.empty:
        return []
    ev = attributed(run.events)
    rows = ev[ev["kind"].astype(str).isin(("traceback", "error_file"))]
    out: list[ExceptionRow] = []
    last: dict[str, Mapping[str, Any]] = {}
    for _, row in rows.iterrows():
        d = row["details"] if isinstance(row["details"], dict) else {}
        out.append(ExceptionRow(row, classify(d, str(row["message"] or "")),
                                last.get(str(row["source"]))))
        last[str(row["source"])] = d
    return out


def markdown_table() -> str:
    """The catalogue as a Markdown table (the generated part of ``docs/verdicts.md``)."""
    rows = ["| # | signature | family | cause | matches (type: message, case-insensitive) | "
            "meaning |", "|---|---|---|---|---|---|"]
    for i, sig in enumerate(SIGNATURES, 1):
        pattern = sig.pattern.pattern.replace("|", "\\|")
        rows.append(f"| {i} | `{sig.name}` | {sig.family.value} | {sig.cause or '-'} | "
                    f"`{pattern}` | {sig.why} |")
    return "\n".join(rows) + "\n"
