"""Rank logs: events from real message formats (NCCL, gloo, torchelastic, OOM, ...)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pandas as pd

from autopsy.readers import ranklogs


def _events(tmp_path: Path, text: str, name: str = "train.log") -> pd.DataFrame:
    log = tmp_path / name
    log.write_text(text)
    part = ranklogs.read(log, name)
    assert set(part.events.columns) >= {"rank", "wall_time", "step", "kind", "message",
                                        "source", "line", "details"}
    return part.events


def _only(events: pd.DataFrame, kind: str) -> dict[str, Any]:
    rows = events[events["kind"] == kind]
    assert len(rows) == 1, events[["kind", "message"]]
    return rows.iloc[0].to_dict()


WATCHDOG_NEW = (
    "[rank2]:[E626 06:24:44.173078629 ProcessGroupNCCL.cpp:616] [Rank 2] Watchdog caught "
    "collective operation timeout: WorkNCCL(SeqNum=808, OpType=ALLREDUCE, NumelIn=9801523, "
    "NumelOut=9801523, Timeout(ms)=600000) ran for 600061 milliseconds before timing out.\n"
    "[rank2]:[E626 06:24:44.173689731 ProcessGroupNCCL.cpp:1785] [PG ID 0 PG GUID 0(default_pg) "
    "Rank 2] Exception (either an error or timeout) detected by watchdog at work: 808, last "
    "enqueued NCCL work: 811, last completed NCCL work: 807.\n"
)


def test_watchdog_timeout_new_era(tmp_path: Path) -> None:
    ev = _events(tmp_path, "[rank2]:step 7 loss 1.0\n" + WATCHDOG_NEW)
    rows = ev[ev["kind"] == "nccl_timeout"]
    assert rows["rank"].tolist() == [2, 2]
    assert rows["step"].tolist() == [7, 7]
    d = rows.iloc[0]["details"]
    assert (d["SeqNum"], d["OpType"], d["NumelIn"], d["NumelOut"], d["Timeout(ms)"],
            d["ran_for_ms"]) == (808, "ALLREDUCE", 9801523, 9801523, 600000, 600061)
    assert d["time_of_day"] == 6 * 3600 + 24 * 60 + 44 + 0.173078
    assert pd.isna(rows.iloc[0]["wall_time"])
    d2 = rows.iloc[1]["details"]
    assert (d2["SeqNum"], d2["last_enqueued"], d2["last_completed"]) == (808, 811, 807)
    assert d2["pg_rank"] == 2 and "default_pg" in d2["pg"]


def test_watchdog_timeout_old_era_and_timeout_at(tmp_path: Path) -> None:
    text = (
        "[E ProcessGroupNCCL.cpp:821] [Rank 1] Watchdog caught collective operation timeout: "
        "WorkNCCL(SeqNum=5, OpType=ALLREDUCE, Timeout(ms)=1800000) ran for 1800310 "
        "milliseconds before timing out.\n"
        "[rank4]:[E1016 03:31:38.929234295 ProcessGroupNCCL.cpp:1709] [PG 3 Rank 4] Timeout at "
        "NCCL work: 9141, last enqueued NCCL work: 9141, last completed NCCL work: 9140.\n"
    )
    ev = _events(tmp_path, text, "node01.log")
    rows = ev[ev["kind"] == "nccl_timeout"]
    assert rows["rank"].tolist() == [1, 4]
    old = rows.iloc[0]["details"]
    assert old["SeqNum"] == 5 and "NumelIn" not in old and old["ran_for_ms"] == 1800310
    new = rows.iloc[1]["details"]
    assert (new["timeout_at"], new["last_enqueued"], new["last_completed"]) == (9141, 9141, 9140)


def test_heartbeat_desync_gloo_and_connection(tmp_path: Path) -> None:
    text = (
        "[rank7]:[E626 05:14:36.393067540 ProcessGroupNCCL.cpp:1743] [PG ID 0 PG GUID "
        "0(default_pg) Rank 7] ProcessGroupNCCL's watchdog got stuck for 480 seconds without "
        "making progress in monitoring enqueued collectives.\n"
        "[rank0]: - [0] Timeout at collective: ALLREDUCE, #12\n"
        "[rank0]:To our best knowledge, ranks [1, 3] are the lagging ranks that caused this "
        "timeout. They never joined any collectives\n"
        "[rank2]:RuntimeError: [../third_party/gloo/gloo/transport/tcp/unbound_buffer.cc:81] "
        "Timed out waiting 30000ms for recv operation to complete\n"
        "[rank1]:RuntimeError: [/pytorch/third_party/gloo/gloo/transport/tcp/pair.cc:534] "
        "[127.0.0.1]:40467: Connection closed by peer [127.0.0.1]:11654\n"
        "node3:12:40 [3] NCCL WARN NET/IB : Got completion from peer 10.0.0.2<1234> with "
        "error 12, opcode 0, len 0, vendor err 129\n"
    )
    ev = _events(tmp_path, text)
    hb = _only(ev, "heartbeat_stuck")
    assert hb["rank"] == 7 and hb["details"]["stuck_s"] == 480
    ds = _only(ev, "desync_report")
    assert ds["rank"] == 0 and ds["details"]["lagging_ranks"] == [1, 3]
    gl = _only(ev, "collective_timeout")
    assert gl["rank"] == 2
    assert (gl["details"]["timeout_ms"], gl["details"]["op"]) == (30000, "recv")
    cc = _only(ev, "connection_closed")
    assert cc["rank"] == 1 and cc["details"]["peer"] == "127.0.0.1"
    nw = _only(ev, "nccl_warn")
    assert nw["details"]["warning"].startswith("NET/IB")


def test_collective_mismatch_fingerprints(tmp_path: Path) -> None:
    text = (
        "[rank0]: RuntimeError: Detected mismatch between collectives on ranks. Rank 0 is "
        "running collective: CollectiveFingerPrint(SequenceNumber=3, OpType=ALLREDUCE, "
        "TensorShape=[4], TensorDtypes=Float, TensorDeviceTypes=TensorOptions(dtype=float "
        "(default), device=cpu)), but Rank 2 is running collective: CollectiveFingerPrint("
        "SequenceNumber=3, OpType=ALLREDUCE, TensorShape=[5], TensorDtypes=Float, "
        "TensorDeviceTypes=TensorOptions(dtype=float (default), device=cpu)). Collectives "
        "differ in the following aspects: \t Tensor Tensor shapes: 4vs 5\n"
        "[rank1]: RuntimeError: Gloo connectFullMesh failed... Received data size doesn't match "
        "expected size\n"
    )
    ev = _events(tmp_path, text)
    rows = ev[ev["kind"] == "collective_mismatch"]
    assert rows["rank"].tolist() == [0, 1]
    d = rows.iloc[0]["details"]
    assert d["ranks"] == [0, 2]
    assert d["differs"] == ["TensorShape"]
    assert [fp["TensorShape"] for fp in d["fingerprints"]] == ["[4]", "[5]"]
    assert rows.iloc[1]["details"]["backend"] == "gloo"


def test_rendezvous_timeouts(tmp_path: Path) -> None:
    text = (
        "2024-05-01 12:00:00,123 RuntimeError: Timed out initializing process group in store "
        "based barrier on rank: 1, for key: store_based_barrier_key:1 (world_size=4, "
        "worker_count=3, timeout=0:30:00)\n"
        "torch.distributed.DistStoreError: Timed out after 901 seconds waiting for clients. "
        "1/2 clients joined.\n"
        "RuntimeError: Ranks 1, 3 failed to pass monitoredBarrier in 30000 ms\n"
        "torch.distributed.DistNetworkError: The client socket has timed out after 1800s while "
        "trying to connect to (10.0.0.1, 29500).\n"
    )
    ev = _events(tmp_path, text)
    rows = ev[ev["kind"] == "rendezvous_timeout"]
    assert len(rows) == 4
    first = rows.iloc[0]
    assert (first["details"]["expected"], first["details"]["joined"]) == (4, 3)
    assert first["wall_time"] == 1714564800.123
    assert (rows.iloc[1]["details"]["joined"], rows.iloc[1]["details"]["expected"]) == (1, 2)
    assert rows.iloc[1]["details"]["timeout_s"] == 901
    assert rows.iloc[2]["details"]["missing_ranks"] == [1, 3]
    assert rows.iloc[3]["details"]["what"] == "socket"


CHILD_FAILED = """\
{api} [WARNING] Sending process 5938 closing signal SIGTERM
{api} [ERROR] failed (exitcode: -9) local_rank: 2 (pid: 5939) of binary: /usr/bin/python3
Traceback (most recent call last):
  File "/usr/local/bin/torchrun", line 8, in <module>
    sys.exit(main())
  File "/usr/lib/python3/dist-packages/torch/distributed/launcher/api.py", line 245, in launch_agent
    raise ChildFailedError(
torch.distributed.elastic.multiprocessing.errors.ChildFailedError:{space}
============================================================
train.py FAILED
------------------------------------------------------------
Failures:
[1]:
  time      : 2024-05-08_08:47:31
  host      : node1
  rank      : 1 (local_rank: 1)
  exitcode  : -15 (pid: 5938)
  error_file: <N/A>
  traceback : Signal 15 (SIGTERM) received by PID 5938
------------------------------------------------------------
Root Cause (first observed failure):
[0]:
  time      : 2024-05-08_08:47:30
  host      : node1
  rank      : 2 (local_rank: 2)
  exitcode  : -9 (pid: 5939)
  error_file: <N/A>
  traceback : Signal 9 (SIGKILL) received by PID 5939
============================================================
""".format(api="[2024-05-08 08:47:31,261] torch.distributed.elastic.multiprocessing.api:",
           space=" ")


def test_torchelastic_block_exits_and_signals(tmp_path: Path) -> None:
    ev = _events(tmp_path, CHILD_FAILED)
    cf = ev[ev["kind"] == "child_failed"].sort_values("rank")
    assert cf["rank"].tolist() == [1, 2]
    d1, d2 = cf["details"].tolist()
    assert (d1["exitcode"], d1["signal"], d1["claimed_root"]) == (-15, "SIGTERM", False)
    assert (d2["exitcode"], d2["signal"], d2["claimed_root"]) == (-9, "SIGKILL", True)
    assert d2["error_file"] is None and d2["host"] == "node1"
    ex = _only(ev, "exit")
    assert (ex["rank"], ex["details"]["exitcode"]) == (2, -9)
    assert _only(ev, "host_kill")["rank"] == 2
    sig = _only(ev, "signal")  # the block's "Signal N received" lines are not counted twice
    assert sig["details"]["signal"] == "SIGTERM" and sig["details"]["who"] == "launcher"
    tb = _only(ev, "traceback")
    assert tb["details"]["exception"].endswith("ChildFailedError")


def test_python_traceback_user_frame(tmp_path: Path) -> None:
    text = (
        "step 12 loss 0.5\n"
        "Traceback (most recent call last):\n"
        '  File "/home/u/train.py", line 40, in <module>\n'
        "    main()\n"
        '  File "/home/u/train.py", line 30, in main\n'
        "    loss = model(x)\n"
        '  File "/opt/venv/lib/python3.11/site-packages/torch/nn/modules/module.py", line 1739, '
        "in _wrapped_call_impl\n"
        "    return self._call_impl(*args, **kwargs)\n"
        "           ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^\n"
        "RuntimeError: mat1 and mat2 shapes cannot be multiplied (4x3 and 5x6)\n"
    )
    tb = _only(_events(tmp_path, text, "rank0.log"), "traceback")
    d = tb["details"]
    assert (tb["rank"], tb["step"], tb["line"]) == (0, 12, 2)
    assert d["exception"] == "RuntimeError"
    assert d["exc_message"].startswith("mat1 and mat2")
    assert d["user_frame"] == {"file": "/home/u/train.py", "line": 30, "function": "main"}
    assert [f["user"] for f in d["frames"]] == [False, True, False]


def test_oom_three_formats_and_cpu(tmp_path: Path) -> None:
    text = (
        "RuntimeError: CUDA out of memory. Tried to allocate 2.26 GiB (GPU 0; 6.00 GiB total "
        "capacity; 781.59 MiB already allocated; 3.03 GiB free; 1.24 GiB reserved in total by "
        "PyTorch)\n"
        "torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 496.00 MiB. GPU 1 "
        "has a total capacty of 14.75 GiB of which 235.06 MiB is free. Process 20398 has "
        "14.52 GiB memory in use. Of the allocated memory 14.06 GiB is allocated by PyTorch, and "
        "330.42 MiB is reserved by PyTorch but unallocated.\n"
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 22.00 MiB. GPU 0 has a "
        "total capacity of 23.65 GiB of which 11.06 MiB is free. Including non-PyTorch memory, "
        "this process has 23.60 GiB memory in use. Of the allocated memory 22.90 GiB is "
        "allocated by PyTorch, and 194.87 MiB is reserved by PyTorch but unallocated.\n"
        "RuntimeError: [enforce fail at alloc_cpu.cpp:83] data. DefaultCPUAllocator: can't "
        "allocate memory: you tried to allocate 8589934592 bytes. Error code 12 (Cannot "
        "allocate memory)\n"
        "RuntimeError: DataLoader worker (pid 4242) is killed by signal: Killed.\n"
    )
    ev = _events(tmp_path, text)
    ooms = ev[ev["kind"] == "oom"]["details"].tolist()
    assert len(ooms) == 4
    old, mid, new, cpu = ooms
    gib, mib = 2**30, 2**20
    assert old["tried"] == round(2.26 * gib) and old["total"] == 6 * gib
    assert old["allocated"] == round(781.59 * mib) and old["reserved"] == round(1.24 * gib)
    assert old["reserved_unallocated"] == old["reserved"] - old["allocated"]
    assert (mid["gpu"], mid["other_processes"]) == (1, round(14.52 * gib))
    assert mid["reserved_unallocated"] == round(330.42 * mib)
    assert new["process_in_use"] == round(23.60 * gib) and "other_processes" not in new
    assert new["free"] == round(11.06 * mib)
    assert cpu == {"device": "cpu", "tried": 8589934592, "attempt": 0}
    hk = _only(ev, "host_kill")
    assert hk["details"]["who"] == "dataloader_worker" and hk["details"]["pid"] == 4242


def test_overflow_checkpoint_and_signals(tmp_path: Path) -> None:
    text = (
        "[2023-03-01 10:00:00,000] [INFO] [stage_1_and_2.py:1790:step] [deepspeed] OVERFLOW! "
        "Rank 3 Skipping step. Attempted loss scale: 65536, reducing to 32768\n"
        "[deepspeed] fp16 dynamic loss scale overflow! Grad overflow on iteration 17\n"
        "Gradient overflow.  Skipping step, loss scaler 0 reducing loss scale to 16384.0\n"
        "Saving model checkpoint to out/checkpoint-500\n"
        "[2024-01-01 00:00:00,000] torch.distributed.elastic.agent.server.api: [INFO] Received "
        "Signals.SIGTERM death signal, shutting down workers\n"
    )
    ev = _events(tmp_path, text)
    ov = ev[ev["kind"] == "overflow_skip"]
    assert ov["rank"].tolist()[0] == 3
    assert ov["details"].tolist()[0]["new_scale"] == 32768
    assert ov["details"].tolist()[1]["iteration"] == 17
    assert ov["details"].tolist()[2]["new_scale"] == 16384
    assert _only(ev, "checkpoint_saved")["details"]["path"] == "out/checkpoint-500"
    assert _only(ev, "signal")["details"]["signal"] == "SIGTERM"


def test_error_json(tmp_path: Path) -> None:
    d = tmp_path / "attempt_0" / "3"
    d.mkdir(parents=True)
    err = d / "error.json"
    err.write_text(json.dumps({"message": {
        "message": "RuntimeError: CUDA out of memory. Tried to allocate 2.00 GiB (GPU 3; "
                   "15.78 GiB total capacity; 13.1 GiB already allocated; 1.0 GiB free; "
                   "14.0 GiB reserved in total by PyTorch)",
        "extraInfo": {"py_callstack": 'Traceback (most recent call last):\n  File "t.py", '
                      'line 3, in f\n    g()\nRuntimeError: CUDA out of memory.',
                      "timestamp": "1714564800"}}}))
    part = ranklogs.read(err, "attempt_0/3/error.json")
    kinds = part.events["kind"].tolist()
    assert kinds == ["error_file", "oom"]
    assert part.events["rank"].tolist() == [3, 3]
    assert part.events["details"].iloc[1]["gpu"] == 3
    bad = tmp_path / "x" / "error.json"
    bad.parent.mkdir()
    bad.write_text('{"message": ')
    part = ranklogs.read(bad, "x/error.json")
    assert part.events.empty and [p.kind for p in part.problems] == ["invalid_json"]


def test_child_failed_without_its_summary_hides_no_later_lines(tmp_path: Path) -> None:
    ev = _events(tmp_path, (
        "torch.distributed.elastic.multiprocessing.errors.ChildFailedError: quoted, no summary\n"
        "[rank1]:step 3 loss 2.0\n"
        "[rank1]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB\n"))
    assert (ev["kind"] == "child_failed").sum() == 0
    oom = _only(ev, "oom")
    assert (oom["rank"], oom["line"], oom["step"]) == (1, 3, 3)


def test_a_huge_error_json_message_is_cut_in_the_details(tmp_path: Path) -> None:
    err = tmp_path / "error.json"
    err.write_text(json.dumps({"message": {"message": "RuntimeError: " + "A" * 100_000,
                                           "extraInfo": {}}}))
    ev = ranklogs.read(err, "error.json").events
    row = _only(ev, "error_file")
    assert row["details"]["exception"] == "RuntimeError"
    assert row["details"]["exc_message"] == "A" * 2000


def test_deepspeed_fp16_optimizer_skip_is_one_event(tmp_path: Path) -> None:
    """DeepSpeed's FP16 optimizers write each skip on three lines (``Grad overflow on
    iteration: N``, ``Reducing dynamic loss scale from X to Y``, ``[deepspeed] fp16 dynamic
    loss scale overflow! ... Attempted loss scale: X, reducing to Y``): one event per skip,
    with the iteration and both scales."""
    lines = []
    for it, (old, new) in enumerate([(65536.0, 32768.0), (32768.0, 16384.0)]):
        lines += [
            f"[2024-03-08 16:33:21,415] [INFO] [unfused_optimizer.py:281:_update_scale] Grad "
            f"overflow on iteration: {it}",
            f"[2024-03-08 16:33:21,416] [INFO] [unfused_optimizer.py:282:_update_scale] "
            f"Reducing dynamic loss scale from {old} to {new}",
            f"[2024-03-08 16:33:21,416] [INFO] [unfused_optimizer.py:207:step] [deepspeed] fp16 "
            f"dynamic loss scale overflow! Skipping step. Attempted loss scale: {old}, "
            f"reducing to {new}",
        ]
    ev = _events(tmp_path, "\n".join(lines) + "\n")
    ov = ev[ev["kind"] == "overflow_skip"]
    assert [d["iteration"] for d in ov["details"]] == [0, 1]
    assert [d["new_scale"] for d in ov["details"]] == [32768.0, 16384.0]
    assert [d["attempted_scale"] for d in ov["details"]] == [65536.0, 32768.0]


def test_deepspeed_fused_optimizer_log_dist_skip(tmp_path: Path) -> None:
    """Later DeepSpeed releases (DeepSpeed-Chat#307) print the fused optimizer's skip as
    ``Grad overflow on iteration N`` on the line after its header, ``Reducing dynamic loss
    scale from X to Y`` and ``[Rank 0] Overflow detected. Skipping step. Attempted loss scale:
    X, reducing to Y``: one event with the iteration and both scales."""
    block = (
        "[2023-04-15 05:51:04,058] [INFO] [fused_optimizer.py:362:_update_scale]\n"
        "Grad overflow on iteration 1860\n"
        "[2023-04-15 05:51:04,058] [INFO] [fused_optimizer.py:363:_update_scale] Reducing "
        "dynamic loss scale from 1 to 1\n"
        "[2023-04-15 05:51:04,058] [INFO] [logging.py:96:log_dist] [Rank 0] Overflow detected. "
        "Skipping step. Attempted loss scale: 1, reducing to 1\n")
    ev = _events(tmp_path, block * 2)  # the same skip twice (two optimizers of one step)
    ov = ev[ev["kind"] == "overflow_skip"]
    assert [d["iteration"] for d in ov["details"]] == [1860, 1860]
    assert [(d["attempted_scale"], d["new_scale"]) for d in ov["details"]] == [(1.0, 1.0)] * 2


def test_fairseq_nan_detector_line(tmp_path: Path) -> None:
    """fairseq's NanDetector (an fp16 run whose gradient norm went non-finite) names the
    module whose output overflowed: a non-finite event, stepped at the last logged step."""
    ev = _events(tmp_path, (
        '2020-12-10 12:38:47 | INFO | train_inner | {"epoch": 1, "update": 0.205, "loss": '
        '"9.78", "num_updates": "2575", "lr": "0.0012875", "gnorm": "10.177", "loss_scale": '
        '"2"}\n'
        "2020-12-10 12:38:53 | WARNING | fairseq.nan_detector | Inf detected in output of "
        "decoder.layers.21, shape: torch.Size([1024, 2, 1024]), forward input max: 64288.0, "
        "input min: -47264.0\n"))
    nan = _only(ev, "nan_loss")
    assert nan["details"]["module"] == "decoder.layers.21"
    assert nan["step"] == 2575


def test_nccl_watchdog_thread_ended_by_a_cuda_error_is_the_ranks_crash(tmp_path: Path) -> None:
    # PyTorch 2.3's ProcessGroupNCCL, as in tdrussell/qlora-pipe#51 (the public corpus's
    # nccl_log_qlora_pipe_rank1_watchdog_illegal_memory_access_issue_51)
    line = ("[rank1]:[E107 10:50:18.780482185 ProcessGroupNCCL.cpp:1504] [PG 0 (default_pg) "
            "Rank 1] Process group watchdog thread terminated with exception: CUDA error: an "
            "illegal memory access was encountered\n")
    ev = _only(_events(tmp_path, line), "traceback")
    assert ev["rank"] == 1
    assert ev["details"]["exception"] == "CUDA error"
    assert ev["details"]["exc_message"] == "an illegal memory access was encountered"
