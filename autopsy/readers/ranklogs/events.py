"""Event extraction: the detailed regexes, run only on lines a marker found.

:func:`line_events` turns one line (launcher prefix already removed) into zero or
more ``(kind, details)`` pairs; :func:`parse_traceback` and
:func:`parse_child_failed` read the multi-line records that start at a marker.
Formats follow messages quoted from real logs (PyTorch ProcessGroupNCCL in its
2.0-2.6 eras, torchelastic, the CUDA caching allocator in its three wordings,
DeepSpeed, apex, gloo).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from autopsy.model.events import EventKind

Details = dict[str, Any]

_UNITS = {"b": 1, "bytes": 1, "byte": 1, "kib": 1 << 10, "mib": 1 << 20, "gib": 1 << 30,
          "tib": 1 << 40, "kb": 1000, "mb": 10 ** 6, "gb": 10 ** 9, "tb": 10 ** 12}
_SIZE = r"([\d.]+)\s*(bytes|byte|[KMGT]i?B|B)"


def to_bytes(number: str, unit: str) -> int | None:
    """``("2.26", "GiB")`` -> bytes, or None if it does not parse."""
    try:
        return round(float(number) * _UNITS[unit.lower()])
    except (ValueError, KeyError):
        return None


# ------------------------------------------------------------------------- NCCL/c10d

_WORK = re.compile(r"WorkNCCL\((.*?)\)\s*ran for (\d+) milliseconds")
_WORK_FIELDS = re.compile(r"(SeqNum|OpType|NumelIn|NumelOut|Timeout\(ms\))=([^,)]+)")
_WORK_ANY = re.compile(r"WorkNCCL\((.*?)\)(?:\s|$)")
_TIMEOUT_AT = re.compile(r"(?:Timeout at NCCL work|detected by watchdog at work): (\d+), "
                         r"last enqueued NCCL work: (-?\d+), last completed NCCL work: (-?\d+)")
_PG_STATUS = re.compile(r"last enqueued (?:NCCL )?work: (-?\d+), last completed (?:NCCL )?work: "
                        r"(-?\d+)")
_SEQ_ID = re.compile(r"work sequence id:? (\d+)")
_PG = re.compile(r"\[PG (?:ID )?([^\][]*?)Rank (\d+)\]")  # group 1 is stripped
_STUCK = re.compile(r"got stuck for (\d+) seconds")
_LAGGING = re.compile(r"ranks \[?([\d, ]*)\]? (?:are|is) the lagging ranks"
                      r"|caused the desync are: \[?([\d, ]*)\]?")
_DESYNC_COLL = re.compile(r"(?:Timeout at collective|collective) #?(\d+)")
_GLOO_TIMEOUT = re.compile(r"Timed out waiting (\d+)ms for (recv|send) operation")
_MISMATCH_SIDE = re.compile(r"Rank (\d+) is running collective: CollectiveFingerPrint\(")
_FP_FIELD = re.compile(r"\b(\w+)=(\[[^\]]*\]|[^,()]+)")
_DATA_SIZE = re.compile(r"Received data size doesn't match expected size"
                        r"(?:.{0,300}?expected\s*(?:[=:]\s*)?(\d+).{0,300}?received\s*(?:[=:]\s*)?"
                        r"(\d+))?")
_CLIENTS = re.compile(r"(?<!\d)(\d+)/(\d+) clients joined")
_BARRIER = re.compile(r"world_size=(\d+), worker_count=(\d+)")
_MONITORED = re.compile(r"Ranks? ([\d, ]+) failed to pass monitoredBarrier")
_TIMEOUT_S = re.compile(r"after (\d+(?:\.\d+)?)\s*(?:s\b|seconds)")
_CONN_PEER = re.compile(r"Connection (closed|reset) by peer")
_PEER_ADDR = re.compile(r"\[([0-9a-fA-F.:]+)\](?::(\d+))?")
_REMOTE = re.compile(r"ncclRemoteError[^\n]*")
_NCCL_WARN = re.compile(r"NCCL WARN\s*(.*)")


def _work_details(inner: str) -> Details:
    out: Details = {}
    for key, value in _WORK_FIELDS.findall(inner):
        value = value.strip()
        out[key] = int(value) if value.lstrip("-").isdigit() else value
    return out


def _ints(text: str) -> list[int]:
    return [int(x) for x in re.findall(r"\d+", text)]


def nccl_events(text: str) -> list[tuple[EventKind, Details]]:
    """NCCL/c10d/gloo watchdog, desync, mismatch and rendezvous events of one line."""
    out: list[tuple[EventKind, Details]] = []
    pg = _PG.search(text)
    base: Details = {}
    if pg:
        base["pg"] = pg.group(1).strip()
        base["pg_rank"] = int(pg.group(2))
    if "Watchdog caught collective operation timeout" in text or "Timeout at NCCL work" in text \
            or "detected by watchdog at work" in text or "failure detected by watchdog" in text:
        d = dict(base)
        m = _WORK.search(text)
        if m:
            d.update(_work_details(m.group(1)))
            d["ran_for_ms"] = int(m.group(2))
        else:
            m2 = _WORK_ANY.search(text)
            if m2:
                d.update(_work_details(m2.group(1)))
        m = _TIMEOUT_AT.search(text)
        if m:
            d["timeout_at"] = int(m.group(1))
            d.setdefault("SeqNum", int(m.group(1)))
            d["last_enqueued"] = int(m.group(2))
            d["last_completed"] = int(m.group(3))
        m = _SEQ_ID.search(text)
        if m:
            d.setdefault("SeqNum", int(m.group(1)))
        m = _PG_STATUS.search(text)
        if m:
            d.setdefault("last_enqueued", int(m.group(1)))
            d.setdefault("last_completed", int(m.group(2)))
        out.append((EventKind.NCCL_TIMEOUT, d))
    if "watchdog got stuck" in text or "Heartbeat monitor timed out" in text:
        d = dict(base)
        m = _STUCK.search(text)
        if m:
            d["stuck_s"] = int(m.group(1))
        out.append((EventKind.HEARTBEAT_STUCK, d))
    if "lagging" in text:
        m = _LAGGING.search(text)
        if m:
            ranks = _ints(m.group(1) or m.group(2) or "")
            d = dict(base, lagging_ranks=ranks)
            c = _DESYNC_COLL.search(text)
            if c:
                d["collective"] = int(c.group(1))
            out.append((EventKind.DESYNC_REPORT, d))
    m = _GLOO_TIMEOUT.search(text)
    if m:
        out.append((EventKind.COLLECTIVE_TIMEOUT,
                    dict(base, backend="gloo", timeout_ms=int(m.group(1)), op=m.group(2))))
    conn = _CONN_PEER.search(text)
    if conn:
        d = dict(base, how=conn.group(1))
        peer = _PEER_ADDR.search(text, conn.end()) or _PEER_ADDR.search(text)
        if peer:
            d["peer"] = peer.group(1)
            if peer.group(2):
                d["peer_port"] = int(peer.group(2))
        out.append((EventKind.CONNECTION_CLOSED, d))
    if "NCCL WARN" in text:
        m = _NCCL_WARN.search(text)
        out.append((EventKind.NCCL_WARN, dict(base, warning=m.group(1).strip() if m else "")))
    elif "ncclRemoteError" in text:
        m = _REMOTE.search(text)
        out.append((EventKind.NCCL_WARN, dict(base, error="ncclRemoteError",
                                              warning=m.group(0).strip() if m else "")))
    if "Detected mismatch between collectives" in text:
        out.append((EventKind.COLLECTIVE_MISMATCH, dict(base, **mismatch_details(text))))
    if "Received data size doesn't match" in text:
        d = dict(base, backend="gloo", what="data size")
        m = _DATA_SIZE.search(text)
        if m and m.group(1):
            d["expected"], d["received"] = int(m.group(1)), int(m.group(2))
        out.append((EventKind.COLLECTIVE_MISMATCH, d))
    out.extend(rendezvous_events(text, base))
    return out


_DESYNC_LINE = re.compile(r"^\s*(?:-\s*)?\[([\d, ]+)\]\s*(.*)$")


def desync_continuation(lines: Iterable[str]) -> Details | None:
    """Ranks listed on the lines after "... ranks that caused the desync are:"."""
    ranks: list[int] = []
    what: list[str] = []
    for n, text in enumerate(lines):
        m = _DESYNC_LINE.match(text)
        if not m:
            if n == 0:
                continue
            break
        ranks.extend(_ints(m.group(1)))
        what.append(m.group(2).strip())
        if n > 20:
            break
    if not ranks:
        return None
    d: Details = {"lagging_ranks": ranks, "why": what}
    c = re.search(r"join collective #(\d+)|finish collective #(\d+)", " ".join(what))
    if c:
        d["collective"] = int(c.group(1) or c.group(2))
    return d


def mismatch_details(text: str) -> Details:
    """Both fingerprints of a DETAIL collective mismatch, and what differs."""
    sides = []
    found = list(_MISMATCH_SIDE.finditer(text))
    for k, m in enumerate(found):  # bodies nest parentheses: matched by depth
        start = m.end()
        stop = found[k + 1].start() if k + 1 < len(found) else len(text)  # linear in the line
        depth, i = 1, start
        while i < stop and depth:
            depth += {"(": 1, ")": -1}.get(text[i], 0)
            i += 1
        body = text[start:i - 1] if depth == 0 else text[start:stop]
        fields = {k: v.strip() for k, v in _FP_FIELD.findall(body)}
        sides.append({"rank": int(m.group(1)), **fields})
    d: Details = {"fingerprints": sides, "ranks": [s["rank"] for s in sides]}
    if len(sides) >= 2:
        a, b = sides[0], sides[1]
        d["differs"] = sorted(k for k in (set(a) | set(b)) - {"rank", "SequenceNumber"}
                              if a.get(k) != b.get(k))
        if a.get("SequenceNumber") != b.get("SequenceNumber"):
            d["differs"].append("SequenceNumber")
    return d


def rendezvous_events(text: str, base: Details) -> list[tuple[EventKind, Details]]:
    """Store, barrier and socket timeouts at init."""
    d: Details | None = None
    m = _CLIENTS.search(text)
    if m:
        d = dict(base, joined=int(m.group(1)), expected=int(m.group(2)))
    elif "store based barrier" in text:
        d = dict(base)
        m = _BARRIER.search(text)
        if m:
            d["expected"], d["joined"] = int(m.group(1)), int(m.group(2))
    elif "monitoredBarrier" in text:
        m = _MONITORED.search(text)
        if m:
            d = dict(base, missing_ranks=_ints(m.group(1)))
    elif "socket has timed out" in text or "Socket Timeout" in text:
        d = dict(base, what="socket")
    if d is None:
        return []
    t = _TIMEOUT_S.search(text)
    if t:
        d["timeout_s"] = float(t.group(1))
    return [(EventKind.RENDEZVOUS_TIMEOUT, d)]


# ------------------------------------------------------------------------------ OOM

_OOM_OLD = re.compile(
    r"Tried to allocate " + _SIZE + r" \(GPU (\d+); " + _SIZE + r" total capacity; "
    + _SIZE + r" already allocated; " + _SIZE + r" free; " + _SIZE
    + r" (?:reserved in total by PyTorch|cached)")
_OOM_TRIED = re.compile(r"Tried to allocate " + _SIZE)
_OOM_NEW = re.compile(r"GPU (\d+) has a total capac(?:i)?ty of " + _SIZE + r" of which "
                      + _SIZE + r" is free")
_OOM_PROC = re.compile(r"(?:Process (\d+)|this process) has " + _SIZE + r" memory in use")
_OOM_ALLOC = re.compile(r"Of the allocated memory " + _SIZE + r" is allocated by PyTorch, and "
                        + _SIZE + r" is reserved by PyTorch but unallocated")
_CPU_OOM = re.compile(r"DefaultCPUAllocator: can't allocate memory: you tried to allocate "
                      r"(\d+) bytes")


_TF_OOM = re.compile(r"OOM when allocating tensor(?: with shape\s*\[([\d,\s]*)\])?"
                     r"(?:.*?on (/job:[^ ]*?device:([A-Z]+):(\d+)))?"
                     r"|Allocator \((\w+)\) ran out of memory trying to allocate " + _SIZE)


def oom_details(text: str) -> Details | None:
    """Numbers of a CUDA, CPU or TensorFlow out-of-memory message, in bytes; None if not
    one."""
    m = _CPU_OOM.search(text)
    if m:
        return {"device": "cpu", "tried": int(m.group(1))}
    m = _TF_OOM.search(text)
    if m:
        d: Details = {"framework": "tensorflow"}
        if m.group(1):
            d["shape"] = [int(x) for x in re.findall(r"\d+", m.group(1))]
        if m.group(3):
            d["device"] = m.group(3).lower().replace("gpu", "cuda")
            d["gpu" if m.group(3) == "GPU" else "device_index"] = int(m.group(4))
        if m.group(5):
            d["allocator"] = m.group(5)
            d["device"] = "cpu" if m.group(5).lower().startswith("cpu") else "cuda"
            d["tried"] = to_bytes(m.group(6), m.group(7))
        d.setdefault("device", "cuda")
        return d
    if "out of memory" not in text:
        return None
    low = text.lower()
    if "cuda out of memory" not in low and "outofmemoryerror" not in low \
            and "cuda error: out of memory" not in low:
        return None
    d: Details = {"device": "cuda"}
    m = _OOM_OLD.search(text)
    if m:
        g = m.groups()
        d["tried"] = to_bytes(g[0], g[1])
        d["gpu"] = int(g[2])
        d["total"] = to_bytes(g[3], g[4])
        d["allocated"] = to_bytes(g[5], g[6])
        d["free"] = to_bytes(g[7], g[8])
        d["reserved"] = to_bytes(g[9], g[10])
        if d["reserved"] is not None and d["allocated"] is not None:
            d["reserved_unallocated"] = d["reserved"] - d["allocated"]
        d["format"] = "old"
        return d
    m = _OOM_TRIED.search(text)
    if m:
        d["tried"] = to_bytes(m.group(1), m.group(2))
    m = _OOM_NEW.search(text)
    if m:
        d["gpu"] = int(m.group(1))
        d["total"] = to_bytes(m.group(2), m.group(3))
        d["free"] = to_bytes(m.group(4), m.group(5))
        d["format"] = "new"
    procs = _OOM_PROC.findall(text)
    if procs:
        others = [to_bytes(n, u) or 0 for pid, n, u in procs if pid]
        mine = [to_bytes(n, u) for pid, n, u in procs if not pid]
        if others:
            d["other_processes"] = sum(others)
        if mine:
            d["process_in_use"] = mine[0]
    m = _OOM_ALLOC.search(text)
    if m:
        d["allocated"] = to_bytes(m.group(1), m.group(2))
        d["reserved_unallocated"] = to_bytes(m.group(3), m.group(4))
        if d["allocated"] is not None and d["reserved_unallocated"] is not None:
            d["reserved"] = d["allocated"] + d["reserved_unallocated"]
    return d


# ------------------------------------------------------------------ torchelastic, signals

_EXIT = re.compile(r"failed \(exitcode: (-?\d+)\) local_rank: (\d+) \(pid: (\d+)\)")
_SRUN_EXIT = re.compile(r"srun: error: ([\w.-]+): tasks? ([\d,-]+): (Exited with exit code (\d+)|"
                        r"Killed|Terminated|[\w ]+)")
_DEATH = re.compile(r"Received (?:Signals\.)?(SIG\w+|\d+) death signal")
_CLOSING = re.compile(r"Sending process (\d+) closing signal (SIG\w+)")
_SIGNAL_PID = re.compile(r"Signal (\d+) \((SIG\w+)\) received by PID (\d+)")
_DL_KILLED = re.compile(r"DataLoader worker \(pid (\d+)\) is killed by signal: ([\w ]+)")
_BASH_KILLED = re.compile(r"^(?:.*line \d+:\s*(\d+) )?Killed\b")
_OVERFLOW_DS = re.compile(r"OVERFLOW! Rank (\d+) Skipping step\. Attempted loss scale: "
                          r"([\d.e+-]+?),? (?:reducing to ([\d.e+-]+)|but hysteresis is (\d+))")
_OVERFLOW_ITER = re.compile(r"Grad overflow on iteration:? (\d+)")
# DeepSpeed's FP16 optimizers (fused and unfused): ``[deepspeed] fp16 dynamic loss scale
# overflow! Skipping step. Attempted loss scale: 65536.0, reducing to 32768.0`` after
# ``Grad overflow on iteration: 4`` and ``Reducing dynamic loss scale from 65536.0 to 32768.0``
# (``[Rank 0] Overflow detected. Skipping step. Attempted loss scale: 1, reducing to 1`` in
# the fused optimizer's log_dist of later releases)
_OVERFLOW_DS_FP16 = re.compile(r"(?:loss scale overflow!|Overflow detected\.) Skipping step\. "
                               r"Attempted loss scale: ([\d.e+-]+), reducing to ([\d.e+-]+)")
_OVERFLOW_APEX = re.compile(r"Gradient overflow\.\s+Skipping step, loss scaler (\d+) reducing "
                            r"loss scale to ([\d.e+-]+)")
_OVERFLOW_FAIRSEQ = re.compile(r"overflow detected, setting loss scale to: ([\d.e+-]+)")
_SAVING = re.compile(r"Saving model checkpoint to (\S+)")


#: Exit codes of a process killed by SIGKILL (the OOM killer, the scheduler): -9 as
#: Python's subprocess reports it, 137 (128 + 9) as a shell does.
KILLED_CODES = (-9, 137)


def _exit(d: Details) -> list[tuple[EventKind, Details]]:
    """An ``exit`` event, and a ``host_kill`` too when the code says SIGKILL."""
    code = d["exitcode"]
    out = [(EventKind.EXIT, d)]
    if code in KILLED_CODES:
        out.append((EventKind.HOST_KILL, dict(d, why=f"exit code {code}")))
    return out


def misc_events(text: str) -> list[tuple[EventKind, Details]]:
    """torchelastic exits and signals, OOMs, host kills, overflows and checkpoints."""
    out: list[tuple[EventKind, Details]] = []
    m = _EXIT.search(text)
    if m:
        code = int(m.group(1))
        out += _exit({"exitcode": code, "local_rank": int(m.group(2)), "pid": int(m.group(3))})
    m = _SRUN_EXIT.search(text)
    if m:
        tasks = m.group(2)
        d = {"host": m.group(1), "tasks": tasks, "how": m.group(3).strip()}
        if m.group(4):
            d["exitcode"] = int(m.group(4))
        if tasks.isdigit():
            d["task"] = int(tasks)
        out.append((EventKind.EXIT, d))
        if m.group(3) == "Killed":
            out.append((EventKind.HOST_KILL, dict(d, why="srun: Killed")))
        elif m.group(3).strip() == "Out Of Memory":  # the step's cgroup OOM killer
            out.append((EventKind.HOST_KILL, dict(d, why="slurm: Out Of Memory")))
    m = _DEATH.search(text)
    if m:
        out.append((EventKind.SIGNAL, {"signal": m.group(1), "who": "agent"}))
    m = _CLOSING.search(text)
    if m:
        out.append((EventKind.SIGNAL, {"signal": m.group(2), "pid": int(m.group(1)),
                                       "who": "launcher"}))
    m = _SIGNAL_PID.search(text)
    if m:
        out.append((EventKind.SIGNAL, {"signal": m.group(2), "signum": int(m.group(1)),
                                       "pid": int(m.group(3))}))
    oom = oom_details(text)
    if oom is not None:
        out.append((EventKind.OOM, oom))
    m = _DL_KILLED.search(text)
    if m:
        out.append((EventKind.HOST_KILL, {"pid": int(m.group(1)), "signal": m.group(2).strip(),
                                          "who": "dataloader_worker"}))
    elif "Killed" in text:
        # (a line pasted into an issue may keep its emphasis: **Killed**)
        m = _BASH_KILLED.match(text.strip().strip("*_`"))
        if m:
            d: Details = {"why": "Killed"}
            if m.group(1):
                d["pid"] = int(m.group(1))
            out.append((EventKind.HOST_KILL, d))
    m = _OVERFLOW_DS.search(text)
    if m:
        d = {"rank": int(m.group(1)), "attempted_scale": float(m.group(2))}
        if m.group(3):
            d["new_scale"] = float(m.group(3))
        else:
            d["hysteresis"] = int(m.group(4))
        out.append((EventKind.OVERFLOW_SKIP, d))
    m = _OVERFLOW_ITER.search(text)
    if m:
        out.append((EventKind.OVERFLOW_SKIP, {"iteration": int(m.group(1))}))
    m = _OVERFLOW_DS_FP16.search(text)
    if m:
        out.append((EventKind.OVERFLOW_SKIP, {"attempted_scale": float(m.group(1)),
                                              "new_scale": float(m.group(2))}))
    m = _OVERFLOW_APEX.search(text)
    if m:
        out.append((EventKind.OVERFLOW_SKIP, {"scaler": int(m.group(1)),
                                              "new_scale": float(m.group(2))}))
    m = _OVERFLOW_FAIRSEQ.search(text)
    if m:
        out.append((EventKind.OVERFLOW_SKIP, {"new_scale": float(m.group(1)),
                                              "framework": "fairseq"}))
    m = _SAVING.search(text)
    if m:
        out.append((EventKind.CHECKPOINT_SAVED, {"path": m.group(1)}))
    return out


# ------------------------------------------- schedulers, the kernel, NaN messages, resumes

_SLURM_CANCEL = re.compile(r"\*\*\* (JOB|STEP) ([\w.]+) ON (\S+) CANCELLED AT (\S+)"
                           r"(?: DUE TO ([A-Z ]+?))?(?: \*\*\*|$)")
_SLURM_MEM = re.compile(r"(?:Job|Step) ([\w.]+) exceeded memory limit \((\d+) > (\d+)\)")
_KERNEL_OOM = re.compile(r"(?:Out of memory|Memory cgroup out of memory): Killed process (\d+)"
                         r"(?: \(([^)]*)\))?")
#: slurmstepd: ``error: Detected 1 oom-kill event(s) in StepId=9411285.0. Some of your
#: processes may have been killed by the cgroup out-of-memory handler.`` (older slurm: ``in
#: step 123.batch cgroup``)
_SLURM_OOM = re.compile(r"Detected (\d+) oom[-_]kill event\(s\) in (?:StepId=|step )([\w.]+)")
_OOM_KILL = re.compile(r"\boom[-_]kill(?:ed)?\b", re.IGNORECASE)
_OOM_PID = re.compile(r"\bpid=(\d+)")
#: NaN/Inf messages printed by frameworks (detectron2, TF NanTensorHook/Estimator, Keras
#: TerminateOnNaN): the step is the one in the message, else the last logged.
_NAN_MESSAGE = re.compile(r"Loss became infinite or NaN at iteration=(\d+)"
                          r"|Model diverged with loss = NaN"
                          r"|NaN loss during training"
                          r"|Batch (\d+): Invalid loss, terminating training"
                          # fairseq's NanDetector (--fp16 runs, on a NaN/Inf gradient norm):
                          # ``Inf detected in output of decoder.layers.21, shape: ...``
                          r"|(?:NaN|Inf) detected in (?:output|input) of ([\w.]+)")
_RESUMED = re.compile(r"resumed (?:from )?epoch:? (\d+), iter:? (\d+)"
                      r"|[Rr]esum(?:ed|ing) (?:training )?from (?:checkpoint )?(\S+)")


_DS_RETURN = re.compile(r"exits with return code = (-?\d+)"
                        r"|Process finished with exit code (-?\d+)")
_SEGFAULT = re.compile(r"(?i)segmentation fault|SIGSEGV")
#: (a ``CUDA error:`` after ``Word: `` is an exception line, read with its traceback; the
#: NCCL watchdog's ``Process group watchdog thread terminated with exception: CUDA error:``
#: has none)
_CUDA_FAIL = re.compile(r"device-side assert triggered|Assertion `[^`]*` failed|"
                        r"(?<![\w:] )CUDA error: |thread terminated with exception: CUDA error: ")
#: The NVIDIA driver's GPU error report (kernel log, ``dmesg`` pasted into a job log):
#: ``NVRM: Xid (PCI:0000:3b:00): 79, pid=1234, name=python, GPU has fallen off the bus.``
_XID = re.compile(r"NVRM: Xid \((?:PCI:)?([0-9A-Fa-f:.]+)\): (\d+),\s*(.*)$")
_LOGGED_EXC = re.compile(r"<class '((?:[A-Za-z_]\w*\.)*[A-Z]\w*)'>.*? - (.+)$")


def scheduler_events(text: str) -> list[tuple[EventKind, Details]]:
    """slurm cancellations and memory kills, kernel OOM-killer lines, NVIDIA Xid lines, NaN
    messages, resumes,
    the DeepSpeed launcher's return codes, segmentation faults, exceptions a logger printed
    as ``<class 'RuntimeError'> ... - message``."""
    out: list[tuple[EventKind, Details]] = []
    m = _DS_RETURN.search(text)
    if m:
        out += _exit({"exitcode": int(m.group(1) or m.group(2)),
                      "who": "deepspeed launcher" if m.group(1) else "IDE"})
    if _SEGFAULT.search(text) and "received by PID" not in text:
        out.append((EventKind.SIGNAL, {"signal": "SIGSEGV", "why": "segmentation fault"}))
    if _CUDA_FAIL.search(text) and _BARE_EXC.match(text.rstrip()) is None \
            and "<class '" not in text:
        at = text.find("CUDA error: ")
        message = text[at + len("CUDA error: "):] if at >= 0 else text
        out.append((EventKind.TRACEBACK, {"exception": "CUDA error",
                                          "exc_message": message.strip()[:2000],
                                          "headerless": True}))
    m = _XID.search(text) if "Xid" in text else None
    if m:
        out.append((EventKind.TRACEBACK, {"exception": "Xid",
                                          "exc_message": f"Xid {m.group(2)}: "
                                                         f"{m.group(3).strip()[:2000]}",
                                          "xid": int(m.group(2)), "pci": m.group(1),
                                          "headerless": True}))
    m = _LOGGED_EXC.search(text)
    if m:
        out.append((EventKind.TRACEBACK, {"exception": m.group(1),
                                          "exc_message": m.group(2).strip()[:2000],
                                          "headerless": True}))
    m = _SLURM_CANCEL.search(text)
    if m:
        why = (m.group(5) or "").strip().lower()
        d: Details = {"who": "slurm", "job": m.group(2), "host": m.group(3), "at": m.group(4)}
        if why:
            d["why"] = why
        out.append((EventKind.SIGNAL, d))
    m = _SLURM_MEM.search(text)
    if m:
        out.append((EventKind.HOST_KILL, {"why": "slurm memory limit", "job": m.group(1),
                                          "used": int(m.group(2)), "limit": int(m.group(3))}))
    m = _KERNEL_OOM.search(text)
    if m:
        d = {"why": "kernel OOM killer", "pid": int(m.group(1))}
        if m.group(2):
            d["process"] = m.group(2)
        out.append((EventKind.HOST_KILL, d))
    elif (m := _SLURM_OOM.search(text)) is not None:
        out.append((EventKind.HOST_KILL, {"why": "slurm cgroup OOM killer",
                                          "count": int(m.group(1)), "step": m.group(2)}))
    elif "oom" in text.lower():
        m = _OOM_KILL.search(text)  # then its pid, searched once after it (linear)
        if m and ("pid=" in text or "task=" in text):
            d = {"why": "kernel OOM killer"}
            p = _OOM_PID.search(text, m.end())
            if p:
                d["pid"] = int(p.group(1))
            out.append((EventKind.HOST_KILL, d))
    m = _NAN_MESSAGE.search(text)
    if m:
        d = {"message": m.group(0)}
        step = m.group(1) or m.group(2)
        if step:
            d["step"] = int(step)
        if m.group(3):
            d["module"] = m.group(3)
        out.append((EventKind.NAN_LOSS, d))
    m = _RESUMED.search(text)
    if m:
        if m.group(1):
            out.append((EventKind.RESTART, {"epoch": int(m.group(1)), "iter": int(m.group(2))}))
        else:
            out.append((EventKind.RESTART, {"checkpoint": m.group(3)}))
    return out


#: An exception line without its traceback header (an excerpt, a logger that prints only
#: the message): ``KeyError: 10``, ``torch.OutOfMemoryError: CUDA out of memory...``.
_BARE_EXC = re.compile(r"^\s*((?:[A-Za-z_]\w*\.)*[A-Z]\w*(?:Error|Exception|Interrupt|Exit|"
                       r"Warning(?=:)))(?::\s?(.*))?$")


def bare_exception(text: str) -> Details | None:
    """The exception and message of a line that is only an exception, else None."""
    m = _BARE_EXC.match(text.rstrip())
    if m is None or m.group(1).endswith("Warning"):
        return None
    return {"exception": m.group(1), "exc_message": (m.group(2) or "").strip()[:2000],
            "headerless": True}


def line_events(text: str) -> list[tuple[EventKind, Details]]:
    """Every event one line holds (a line may hold several: an OOM and its rank)."""
    return nccl_events(text) + misc_events(text) + scheduler_events(text)


# ------------------------------------------------------------------ multi-line records

_FRAME = re.compile(r'^\s*File "([^"]+)", line (\d+)(?:, in (.+))?')
_EXC = re.compile(r"^([A-Za-z_][\w.]*)(?::\s?(.*))?$")
#: multiprocessing's header of a child's traceback, printed into the same stream
_CHILD_HEADER = re.compile(r"^Process (?:\S+-\d+|SpawnProcess-\d+|ForkProcess-\d+):\s*$")
_LIB = ("site-packages", "dist-packages", "/torch/", "/lib/python", "<frozen", "/bin/torchrun")

#: How many frames of a traceback are kept (the innermost).
KEEP_FRAMES = 5
#: A traceback longer than this many lines is cut (its exception line is then unknown).
MAX_TRACEBACK_LINES = 2000


def parse_traceback(lines: Iterable[str]) -> tuple[Details, int]:
    """Read a traceback from the lines after its ``Traceback`` line.

    Returns ``(details, consumed)``: the exception type and message, the last
    :data:`KEEP_FRAMES` frames (innermost last) with the innermost frame outside
    site-packages/torch marked ``user``, and how many lines were read.
    """
    frames: list[dict[str, Any]] = []
    user: dict[str, Any] | None = None
    consumed = 0
    exc_type, message = "", ""
    for text in lines:
        consumed += 1
        if consumed > MAX_TRACEBACK_LINES:
            break
        m = _FRAME.match(text)
        if m:
            frame = {"file": m.group(1), "line": int(m.group(2)),
                     "function": (m.group(3) or "").strip()}
            frames.append(frame)
            if not any(x in frame["file"] for x in _LIB):
                user = frame
            continue
        if not text.strip() or text[:1] in (" ", "\t") or _CHILD_HEADER.match(text):
            continue  # (another process's "Process Process-3:" header, interleaved)
        m = _EXC.match(text.rstrip())
        if m and not text.startswith(("Traceback", "During handling", "The above exception")):
            exc_type, message = m.group(1), (m.group(2) or "").strip()
            break
        if text.startswith("Traceback"):
            continue
        exc_type, message = "", text.strip()
        break
    kept = [dict(f, user=(f is user)) for f in frames[-KEEP_FRAMES:]]
    d: Details = {"exception": exc_type, "exc_message": message[:2000], "frames": kept,
                  "depth": len(frames)}
    if user is not None:
        d["user_frame"] = dict(user)
    return d, consumed


_ENTRY = re.compile(r"^\s*\[(\d+)\]:\s*$")
_FIELD = re.compile(r"^\s*(time|host|rank|exitcode|error_file|traceback)\s*:\s*(.*)$")


def parse_child_failed(lines: Iterable[str]) -> tuple[list[Details], int]:
    """Read the torchelastic ChildFailedError summary after its marker line.

    Returns one dict per failed rank (``rank``, ``local_rank``, ``exitcode``,
    ``pid``, ``signal``, ``error_file``, ``host``, ``time``, ``claimed_root``) and
    the number of lines read: none when the next non-blank line is not the
    summary's ``=====`` rule (a ``ChildFailedError:`` quoted in a message).
    """
    entries: list[Details] = []
    root = False
    consumed = 0
    current: Details | None = None
    seps = 0
    for text in lines:
        consumed += 1
        if consumed > 20000:
            break
        s = text.strip()
        if not seps and s and "=====" not in s:
            return [], 0  # no summary block follows: the lines after are not its to take
        if s.startswith("====="):
            seps += 1
            if seps >= 2:
                break
            continue
        if s.startswith("Root Cause"):
            root = True
            continue
        m = _ENTRY.match(text)
        if m:
            current = {"entry": int(m.group(1)), "claimed_root": root}
            entries.append(current)
            continue
        m = _FIELD.match(text)
        if m and current is not None:
            key, value = m.group(1), m.group(2).strip()
            if key == "rank":
                nums = _ints(value)
                if nums:
                    current["rank"] = nums[0]
                if len(nums) > 1:
                    current["local_rank"] = nums[1]
            elif key == "exitcode":
                nums = re.findall(r"-?\d+", value)
                if nums:
                    current["exitcode"] = int(nums[0])
                if len(nums) > 1:
                    current["pid"] = int(nums[1])
            elif key == "traceback":
                current["traceback"] = value
                sig = _SIGNAL_PID.search(value)
                if sig:
                    current["signal"] = sig.group(2)
            elif key == "error_file":
                current[key] = None if value == "<N/A>" else value
            else:
                current[key] = value
    return entries, consumed
