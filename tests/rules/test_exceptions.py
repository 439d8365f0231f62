"""The exception catalogue: messages as the frameworks print them map to family and cause."""

from __future__ import annotations

import pytest

from autopsy.model import Family
from autopsy.rules.exceptions import SIGNATURES, classify_text, interrupted_wait


@pytest.mark.parametrize(("exc", "message", "family", "cause"), [
    ("torch.OutOfMemoryError", "CUDA out of memory. Tried to allocate 20.00 MiB. GPU 0 has a "
     "total capacity of 79.15 GiB of which 6.75 MiB is free.", Family.OOM, "cuda_oom"),
    ("RuntimeError", "[enforce fail at alloc_cpu.cpp:114] data. DefaultCPUAllocator: can't "
     "allocate memory: you tried to allocate 1073741824 bytes.", Family.OOM, "host_oom"),
    ("tensorflow.python.framework.errors_impl.ResourceExhaustedError", "Graph execution error:",
     Family.OOM, "cuda_oom"),
    ("RuntimeError", "Error(s) in loading state_dict for Net:\n\tMissing key(s) in state_dict: "
     "\"2.weight\"", Family.RESUME, "state_dict_mismatch"),
    ("ValueError", "loaded state dict contains a parameter group that doesn't match the size "
     "of optimizer's group", Family.RESUME, "optimizer_group_mismatch"),
    ("RuntimeError", "PytorchStreamReader failed reading zip archive: failed finding central "
     "directory", Family.RESUME, "torn_checkpoint"),
    ("_pickle.UnpicklingError", "Weights only load failed. This file can still be loaded",
     Family.RESUME, "load_error"),
    ("FloatingPointError", "Minimum loss scale reached (0.0001). Your loss is probably "
     "exploding.", Family.NAN_INF, "fp16_overflow"),
    ("FloatingPointError", "Loss became infinite or NaN at iteration=27!", Family.NAN_INF, None),
    # a training script's own check (MindEyeV2's utils.check_loss)
    ("ValueError", "NaN loss", Family.NAN_INF, None),
    # GPT-NeoX's OverflowMonitor (gpt-neox#482) and DeepSpeed's loss scaler at its minimum
    ("Exception", "Skipped 50 iterations in a row due to Overflow - Exiting training.",
     Family.NAN_INF, "fp16_overflow"),
    ("Exception", "Current loss scale already at minimum - cannot decrease scale anymore. "
     "Exiting run.", Family.NAN_INF, "fp16_overflow"),
    ("torch.distributed.DistBackendError", "[Rank 1] Watchdog caught collective operation "
     "timeout: WorkNCCL(SeqNum=11, OpType=ALLREDUCE) ran for 600000 milliseconds",
     Family.HANG, "nccl_timeout"),
    ("RuntimeError", "CUDA error: an illegal memory access was encountered", Family.CRASH,
     "cuda_error"),
    ("RuntimeError", "CUDA error: device-side assert triggered", Family.CRASH, "cuda_error"),
    ("torch.distributed.DistBackendError", "NCCL error in: ProcessGroupNCCL.cpp:1970, remote "
     "process exited or there was a network error", Family.CRASH, "nccl_error"),
    ("", "Segmentation fault (core dumped)", Family.CRASH, "segfault"),
])
def test_published_messages_map_to_their_family(exc: str, message: str, family: Family,
                                                cause: str | None) -> None:
    sig = classify_text(exc, message)
    assert sig is not None and (sig.family, sig.cause) == (family, cause)


def test_a_plain_exception_is_no_signature() -> None:
    assert classify_text("KeyError", "'input_ids'") is None
    assert classify_text("ValueError", "too many values to unpack (expected 2)") is None


def test_every_signature_names_a_family_and_why() -> None:
    names = [s.name for s in SIGNATURES]
    assert len(names) == len(set(names))
    assert all(s.why and s.family is not Family.HEALTHY for s in SIGNATURES)


def test_an_interrupt_counts_as_a_stall_only_in_a_wait() -> None:
    waiting = {"exception": "KeyboardInterrupt", "frames": [
        {"file": "/usr/lib/python3.11/site-packages/torch/utils/data/dataloader.py",
         "function": "_try_get_data"},
        {"file": "/usr/lib/python3.11/selectors.py", "function": "select"}]}
    computing = {"exception": "KeyboardInterrupt", "frames": [
        {"file": "train.py", "function": "forward"}]}
    assert interrupted_wait(waiting) == "dataloader"
    assert interrupted_wait(computing) is None
    assert interrupted_wait({"exception": "ValueError", "frames": waiting["frames"]}) is None
    assert interrupted_wait({"exception": "KeyboardInterrupt"}, before=waiting) == "dataloader"


def test_docs_verdicts_md_holds_the_catalogue() -> None:
    from pathlib import Path

    from autopsy.rules.exceptions import markdown_table

    doc = Path(__file__).resolve().parents[2] / "docs" / "verdicts.md"
    assert markdown_table() in doc.read_text(), "docs/verdicts.md: regenerate the table"


def test_the_catalogue_reads_only_the_start_of_a_huge_message() -> None:
    from autopsy.rules.exceptions import MAX_TEXT

    # a hostile line: the signature's words only past the bound, after many near misses
    filler = "Assertion " * (MAX_TEXT // 10 + 1)
    assert classify_text("RuntimeError", filler + "CUDA error: illegal memory access") is None
    assert classify_text("RuntimeError", "CUDA error: illegal memory access " + filler
                         ) is not None
