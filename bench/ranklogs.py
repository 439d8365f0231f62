"""Benchmark: ``autopsy ranks`` over 64 rank logs x 40 MB (2.56 GB), whole-process.

Generates (cached in ``bench/out/ranklogs/``, git-ignored) 64 per-rank logs of
40 MB each: INFO noise lines, a per-step metric line about one line in 100 (HF
Trainer dict lines followed by a tqdm bar redraw on even ranks, ``step N loss X``
lines on odd ranks), tqdm bars redrawn with ``\\r``; near the end of each file the
failure is planted at a known line: rank 17's CUDA OOM traceback (the torch >= 2.5
wording), a NCCL watchdog timeout (torch 2.5/2.6 wording) on every other rank but
the last two (they just stop), and a torchelastic ``ChildFailedError`` block in
``launcher.log``. The formats follow ``tests/fixtures/ranklogs/``.

Then times, whole-process (median of ``--runs`` runs after one warm-up, page cache
warm): ``grep -c -E`` with an alternation of the reader's marker literals over the
files, ``rg -c`` with the same markers when ``rg`` is on PATH, and
``autopsy ranks bench/out/ranklogs --format json``. Checks the verdict names rank 17
as the OOM culprit and that every planted failure is among the reader's events
(read once more in-process, untimed), and measures the autopsy process tree's
peak RSS (VmHWM of the main process and of each worker, polled from ``/proc``).
The figures go into ``docs/performance.md`` under ``## Rank logs``.

``--ranks N`` makes a set of N rank logs instead (in ``bench/out/ranklogs_N/``, the
last two ranks silent, written under ``## Rank logs, N ranks``): the same per-rank size,
so the total grows with N, to show the memory does not.

``--dense`` makes 64 metric-dense rank logs instead (25 MB each, nine lines in ten a step
line: Megatron-LM lines on even ranks, ``logging`` step lines on odd ones; 1.6 GB), in
``bench/out/ranklogs_dense_64/``, written under ``## Rank logs, metric-dense``.

Usage: ``python bench/ranklogs.py [--runs 3] [--no-write] [--regen] [--ranks 64] [--dense]``
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import random
import shutil
import statistics
import subprocess
import sys
import threading
import time
from multiprocessing import Pool
from pathlib import Path
from typing import Any

from docfile import DOC, update_section

from autopsy.readers.ranklogs.markers import ALL_MARKERS

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "bench" / "out" / "ranklogs"
HEADING = "## Rank logs"
N_RANKS = 64
FILE_BYTES = 40_000_000
OOM_RANK = 17
SILENT = (62, 63)
VERSION = "ranklogs-bench-1"
MANIFEST = OUT / "manifest.json"

_NOISE = (
    "[{ts},{ms:03d}] [INFO] [dataloader.py:{a}] [Rank {r}] shard {b}: prefetched {c} samples, "
    "queue {d}/8, {e} tokens",
    "[{ts},{ms:03d}] [INFO] [engine.py:{a}] [Rank {r}] micro-batch {b} done in {c} ms, "
    "throughput {e} tokens/s",
    "[{ts},{ms:03d}] [INFO] [comm.py:{a}] [Rank {r}] bucket {b} all-reduced: {e} bytes in "
    "{c} ms",
    "[{ts},{ms:03d}] [DEBUG] [memory.py:{a}] [Rank {r}] allocated {c} MiB, reserved {e} MiB, "
    "peak {d} GiB",
)


def _ts(sec: int) -> str:
    """An ISO-ish stamp ``2026-11-22 HH:MM:SS`` for ``sec`` seconds after 08:00."""
    sec = sec % 86400
    return f"2026-11-22 {8 + sec // 3600 % 16:02d}:{sec // 60 % 60:02d}:{sec % 60:02d}"


def _bar(step: int, total: int) -> str:
    pct = step * 100 // total
    fill = "\u2588" * (pct // 10)
    return (f"{pct:3d}%|{fill:<10}| {step}/{total} [{step // 120:02d}:{step % 60:02d}"
            f"<{(total - step) // 120:02d}:{(total - step) % 60:02d},  2.00it/s]")


def _oom_block(rank: int, step: int) -> list[str]:
    return [
        "Traceback (most recent call last):",
        '  File "/workspace/train.py", line 212, in <module>',
        "    main()",
        '  File "/workspace/train.py", line 187, in main',
        "    loss.backward()",
        '  File "/opt/conda/lib/python3.11/site-packages/torch/_tensor.py", line 581, in backward',
        "    torch.autograd.backward(",
        '  File "/opt/conda/lib/python3.11/site-packages/torch/autograd/graph.py", line 825, '
        "in _engine_run_backward",
        "    return Variable._execution_engine.run_backward(  # Calls into the C++ engine to "
        "run the backward pass",
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 1 has a "
        "total capacity of 79.10 GiB of which 1.21 GiB is free. Including non-PyTorch memory, "
        "this process has 77.88 GiB memory in use. Of the allocated memory 74.52 GiB is "
        "allocated by PyTorch, and 2.61 GiB is reserved by PyTorch but unallocated. If "
        "reserved but unallocated memory is large try setting "
        "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation.  See "
        "documentation for Memory Management  "
        "(https://pytorch.org/docs/stable/notes/cuda.html#environment-variables)",
    ]


def _nccl_block(rank: int) -> list[str]:
    pg = f"[PG ID 0 PG GUID 0(default_pg) Rank {rank}]"
    work = ("WorkNCCL(SeqNum=4481, OpType=ALLREDUCE, NumelIn=26214400, NumelOut=26214400, "
            "Timeout(ms)=600000) ran for 600083 milliseconds before timing out.")
    return [
        f"[E1122 10:27:41.532175021 ProcessGroupNCCL.cpp:616] [Rank {rank}] Watchdog caught "
        f"collective operation timeout: {work}",
        f"[E1122 10:27:41.532175021 ProcessGroupNCCL.cpp:1785] {pg} Exception (either an error "
        "or timeout) detected by watchdog at work: 4481, last enqueued NCCL work: 4482, last "
        "completed NCCL work: 4480.",
        f"[E1122 10:27:41.532175021 ProcessGroupNCCL.cpp:1834] {pg} Timeout at NCCL work: 4481, "
        "last enqueued NCCL work: 4482, last completed NCCL work: 4480.",
        f"[E1122 10:27:41.532175021 ProcessGroupNCCL.cpp:630] [Rank {rank}] Some NCCL operations "
        "have failed or timed out. Due to the asynchronous nature of CUDA kernels, subsequent "
        "GPU operations might run on corrupted/incomplete data.",
    ]


def _launcher_lines() -> tuple[list[str], int]:
    """The launcher log and the 1-based line of its ``ChildFailedError:`` line."""
    head = [
        "W1122 10:05:11.114000 31537 torch/distributed/run.py:793] ",
        "W1122 10:05:11.114000 31537 torch/distributed/run.py:793] "
        "*****************************************",
        "W1122 10:27:43.219000 31537 torch/distributed/elastic/multiprocessing/api.py:897] "
        "Sending process 31607 closing signal SIGTERM",
        "E1122 10:27:43.402000 31537 torch/distributed/elastic/multiprocessing/api.py:869] "
        "failed (exitcode: -6) local_rank: 0 (pid: 31604) of binary: /opt/conda/bin/python3.11",
        "Traceback (most recent call last):",
        '  File "/opt/conda/bin/torchrun", line 8, in <module>',
        "    sys.exit(main())",
        '  File "/opt/conda/lib/python3.11/site-packages/torch/distributed/launcher/api.py", '
        "line 269, in launch_agent",
        "    raise ChildFailedError(",
        "torch.distributed.elastic.multiprocessing.errors.ChildFailedError: ",
    ]
    line = len(head)
    body = [
        "======================================================",
        "train.py FAILED",
        "------------------------------------------------------",
        "Failures:",
        "  <NO_OTHER_FAILURES>",
        "------------------------------------------------------",
        "Root Cause (first observed failure):",
        "[0]:",
        "  time      : 2026-11-22_10:27:44",
        "  host      : gpu-node-01.cluster.local",
        "  rank      : 0 (local_rank: 0)",
        "  exitcode  : -6 (pid: 31604)",
        "  error_file: <N/A>",
        "  traceback : Signal 6 (SIGABRT) received by PID 31604",
        "======================================================",
    ]
    return head + body, line


def _write_rank(rank: int) -> list[dict[str, Any]]:
    """Write one rank's log; return the planted failures (source, line, kind)."""
    rng = random.Random(rank)
    path = OUT / f"rank{rank:0{len(str(N_RANKS - 1))}d}.log"
    planted: list[dict[str, Any]] = []
    hf = rank % 2 == 0
    total = 100_000
    if DENSE:
        return _write_dense_rank(rank, path, rng, planted)
    step = 0
    line = 0
    size = 0
    sec = 0
    target = FILE_BYTES - 12_000
    with open(path, "w", encoding="utf-8", newline="\n") as fh:
        buf: list[str] = []
        while size < target:
            lines: list[str] = []
            for i in range(98):
                t = _NOISE[i & 3]
                lines.append(t.format(ts=_ts(sec), ms=(i * 7) % 1000, a=100 + i, r=rank,
                                      b=rng.randrange(10_000), c=rng.randrange(1, 999),
                                      d=rng.randrange(8), e=rng.randrange(10 ** 6, 10 ** 8)))
            step += 1
            sec += 1
            loss = 2.5 - step * 1e-5 + rng.random() * 0.01
            if hf:
                lines.append(f"{{'loss': {loss:.4f}, 'grad_norm': {1 + rng.random():.4f}, "
                             f"'learning_rate': {3e-4:.3e}, 'epoch': {step / 1000:.2f}}}")
                lines.append("\r" + "\r".join(_bar(s, total) for s in (step, step))
                             + "\r" + _bar(step, total))
            else:
                lines.append(f"[{_ts(sec)},000] [INFO] [train.py:301] step {step} loss "
                             f"{loss:.4f} lr 3.000e-04 grad_norm {1 + rng.random():.3f}")
                lines.append("\r".join(_bar(step, total) for _ in range(3)))
            chunk = "\n".join(lines) + "\n"
            buf.append(chunk)
            size += len(chunk.encode("utf-8"))
            line += len(lines)
            if len(buf) >= 200:
                fh.write("".join(buf))
                buf.clear()
        fh.write("".join(buf))
        tail = _failure_tail(rank, path, step, line, planted)
        tail += [f"[{_ts(sec + 1)},000] [INFO] [dataloader.py:100] [Rank {rank}] shard 1: "
                 "prefetched 2 samples, queue 1/8, 3 tokens"] * 5
        fh.write("\n".join(tail) + "\n")
    return planted


def _failure_tail(rank: int, path: Path, step: int, line: int,
                  planted: list[dict[str, Any]]) -> list[str]:
    """The failure planted at the end of one rank's log (after ``line`` lines), recorded in
    ``planted``: rank 17's CUDA OOM traceback, every other rank's NCCL timeout but the
    silent ones'."""
    if rank == OOM_RANK:
        block = _oom_block(rank, step)
        planted.append({"source": path.name, "line": line + 1, "kind": "traceback",
                        "rank": rank})
        planted.append({"source": path.name, "line": line + len(block), "kind": "oom",
                        "rank": rank})
        return block
    if rank not in SILENT:
        block = _nccl_block(rank)
        planted.append({"source": path.name, "line": line + 1, "kind": "nccl_timeout",
                        "rank": rank})
        return block
    return []


def _write_dense_rank(rank: int, path: Path, rng: random.Random,
                      planted: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A metric-dense rank log: nine lines in ten a step line (Megatron-LM lines on even
    ranks, ``logging`` step lines on odd ones), the failure planted at the end."""
    step = line = size = sec = 0
    target = DENSE_BYTES - 12_000
    with open(path, "w", encoding="utf-8", newline="\n") as fh:
        buf: list[str] = []
        while size < target:
            step += 1
            sec += 1
            loss = 2.5 - step * 1e-5 + rng.random() * 0.01
            if rank % 2 == 0:
                text = (f" iteration {step:>8}/  500000 | consumed samples:     {step * 512:>9} | "
                        f"elapsed time per iteration (ms): {450 + rng.random() * 10:.1f} | "
                        f"learning rate: 3.000E-04 | global batch size:   512 | lm loss: "
                        f"{loss:.6E} | loss scale: 65536.0 | grad norm: {1 + rng.random():.3f} | "
                        f"number of skipped iterations:   0 | number of nan iterations:   0 |")
            else:
                text = (f"[{_ts(sec)},000] [INFO] [train.py:301] step {step} loss {loss:.4f} "
                        f"lr 3.000e-04 grad_norm {1 + rng.random():.3f}")
            if step % 9 == 0:
                text += "\n" + _NOISE[step & 3].format(
                    ts=_ts(sec), ms=0, a=100, r=rank, b=rng.randrange(10_000),
                    c=rng.randrange(1, 999), d=rng.randrange(8), e=rng.randrange(10 ** 6))
                line += 1
            buf.append(text + "\n")
            size += len(text) + 1
            line += 1
            if len(buf) >= 2000:
                fh.write("".join(buf))
                buf.clear()
        fh.write("".join(buf))
        fh.write("\n".join(_failure_tail(rank, path, step, line, planted)) + "\n")
    return planted


#: ``--dense``: rank logs in which nine lines in ten are step lines (as real jobs print).
DENSE = False
DENSE_BYTES = 25_000_000


def _use_dense() -> None:
    """Make and read the metric-dense set instead (``bench/out/ranklogs_dense_N``)."""
    global DENSE, OUT, MANIFEST, HEADING
    DENSE = True
    OUT = ROOT / "bench" / "out" / f"ranklogs_dense_{N_RANKS}"
    MANIFEST = OUT / "manifest.json"
    HEADING = "## Rank logs, metric-dense"


def _use_ranks(n: int) -> None:
    """Make and read a set of ``n`` rank logs in their own folder (the last two silent)."""
    global N_RANKS, OUT, MANIFEST, SILENT
    if n <= max(OOM_RANK, 2):
        raise SystemExit(f"--ranks must be more than {OOM_RANK}")
    N_RANKS = n
    OUT = ROOT / "bench" / "out" / f"ranklogs_{n}"
    MANIFEST = OUT / "manifest.json"
    SILENT = (n - 2, n - 1)


def generate(regen: bool) -> list[dict[str, Any]]:
    """Write the file set (unless cached); return the planted failures."""
    if not regen and MANIFEST.exists():
        doc = json.loads(MANIFEST.read_text())
        if doc.get("version") == VERSION and all(
                (OUT / f"rank{r:0{len(str(N_RANKS - 1))}d}.log").exists()
                for r in range(N_RANKS)):
            return doc["planted"]
    if OUT.exists():
        shutil.rmtree(OUT)
    OUT.mkdir(parents=True)
    t0 = time.perf_counter()
    with Pool(min(4, os.cpu_count() or 1)) as pool:
        planted = [p for ps in pool.map(_write_rank, range(N_RANKS)) for p in ps]
    lines, cf_line = _launcher_lines()
    (OUT / "launcher.log").write_text("\n".join(lines) + "\n", encoding="utf-8")
    planted.append({"source": "launcher.log", "line": cf_line, "kind": "child_failed",
                    "rank": 0})
    MANIFEST.write_text(json.dumps({"version": VERSION, "planted": planted}, indent=1))
    print(f"generated {N_RANKS} logs in {time.perf_counter() - t0:.1f} s", file=sys.stderr)
    return planted


def log_files() -> list[Path]:
    """The benchmark's log files, sorted."""
    return sorted(OUT.glob("*.log"))


def ere(literal: bytes) -> str:
    """A marker literal as a POSIX extended regex (also a valid Rust regex)."""
    text = literal.decode()
    return "".join("\\" + c if c in "\\.[]()*+?{}|^$" else c for c in text)


def _time(cmd: list[str], ok_codes: tuple[int, ...] = (0, 1)) -> float:
    t0 = time.perf_counter()
    # stdout to a pipe, not /dev/null: GNU grep stops at the first match when it
    # sees its output is /dev/null.
    proc = subprocess.run(cmd, capture_output=True)
    dt = time.perf_counter() - t0
    if proc.returncode not in ok_codes:
        raise SystemExit(f"{cmd[0]} failed ({proc.returncode}): {proc.stderr.decode()[-2000:]}")
    return dt


def median_time(cmd: list[str], runs: int, ok_codes: tuple[int, ...] = (0, 1)) -> list[float]:
    """One warm-up, then ``runs`` timed runs."""
    _time(cmd, ok_codes)
    return [_time(cmd, ok_codes) for _ in range(runs)]


def _children(pid: int) -> list[int]:
    kids: list[int] = []
    try:
        for task in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{task}/children") as fh:
                kids += [int(x) for x in fh.read().split()]
    except OSError:
        pass
    return kids


def _status_kib(pid: int, field: str) -> int:
    try:
        with open(f"/proc/{pid}/status") as fh:
            for ln in fh:
                if ln.startswith(field + ":"):
                    return int(ln.split()[1])
    except OSError:
        pass
    return 0


def run_measured(cmd: list[str]) -> tuple[float, bytes, dict[str, float]]:
    """Run ``cmd``; return wall time, stdout and peak memory figures (MB)."""
    hwm: dict[int, int] = {}
    tree_peak = 0
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    out: list[bytes] = []
    reader = threading.Thread(target=lambda: out.append(proc.stdout.read()))  # type: ignore[union-attr]
    reader.start()
    while proc.poll() is None:
        pids = [proc.pid, *_children(proc.pid)]
        total = 0
        for p in pids:
            hwm[p] = max(hwm.get(p, 0), _status_kib(p, "VmHWM"))
            total += _status_kib(p, "VmRSS")
        tree_peak = max(tree_peak, total)
        time.sleep(0.02)
    dt = time.perf_counter() - t0
    reader.join()
    err = proc.stderr.read() if proc.stderr else b""  # type: ignore[union-attr]
    if proc.returncode not in (0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10):
        raise SystemExit(f"autopsy failed ({proc.returncode}): {err.decode()[-3000:]}")
    main = hwm.pop(proc.pid, 0)
    return dt, out[0] if out else b"", {
        "main_mb": main / 1024, "worker_mb": max(hwm.values(), default=0) / 1024,
        "tree_mb": tree_peak / 1024}


def check_events(planted: list[dict[str, Any]]) -> tuple[list[str], float, str]:
    """Planted failures missing from the reader's events (read in-process), the
    reader's own time (``read_group`` alone, one run) and the search engine used."""
    from autopsy.readers.ranklogs import read_group
    from autopsy.readers.ranklogs.fastpath import engine

    files = log_files()
    t0 = time.perf_counter()
    part = read_group(files, [p.name for p in files])
    reader_s = time.perf_counter() - t0
    ev = part.events
    have = {(s, int(ln), k) for s, ln, k in zip(ev["source"], ev["line"], ev["kind"],
                                                strict=True)}
    missing = [f"{p['source']}:{p['line']} {p['kind']}" for p in planted
               if (p["source"], p["line"], p["kind"]) not in have]
    ranks = {(s, k): r for s, k, r in zip(ev["source"], ev["kind"], ev["rank"], strict=True)}
    for p in planted:
        r = ranks.get((p["source"], p["kind"]))
        if p["kind"] != "child_failed" and r is not None and int(r) != p["rank"]:
            missing.append(f"{p['source']} {p['kind']}: rank {r}, planted {p['rank']}")
    return missing, reader_s, engine()


_STAGES = """
import json, sys
from pathlib import Path
def hwm():
    with open('/proc/self/status') as fh:
        return {l.split(':')[0]: int(l.split()[1]) / 1024 for l in fh
                if l.startswith(('VmHWM', 'VmRSS'))}
import autopsy.cli
from autopsy.api import diagnose, load_run, load_settings
from autopsy.signals.ranks import rank_status
from autopsy.report.json_report import analyze_report
out = {'imports': hwm()}
run = load_run([Path(sys.argv[1])])
out['read'] = hwm()
d = diagnose(run, load_settings())
rank_status(run)
out['diagnose'] = hwm()
out['scalars'] = len(run.scalars)
out['scalars_mb'] = float(run.scalars.memory_usage(deep=True).sum()) / 2**20
out['thinned'] = sum(p.count or 0 for p in run.problems if p.kind == 'thinned')
print(json.dumps(out))
"""


def memory_stages() -> dict[str, Any]:
    """Peak RSS of the steps ``autopsy ranks`` takes, in one fresh interpreter."""
    proc = subprocess.run([sys.executable, "-c", _STAGES, str(OUT)], capture_output=True,
                          text=True)
    if proc.returncode:
        return {}
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _grep_version() -> str:
    out = subprocess.run(["grep", "--version"], capture_output=True, text=True).stdout
    return out.splitlines()[0] if out else "grep"


def verdict_of(out: bytes) -> dict[str, Any]:
    """The verdict of ``autopsy ranks --format json``."""
    doc = json.loads(out)
    return doc.get("verdict", {})


def main() -> None:
    """Generate, time, check, write."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--no-write", action="store_true")
    ap.add_argument("--regen", action="store_true")
    ap.add_argument("--ranks", type=int, default=N_RANKS,
                    help="rank logs to make (default %(default)s; others go to their own folder)")
    ap.add_argument("--skip-check", action="store_true")
    ap.add_argument("--dense", action="store_true",
                    help="metric-dense rank logs (9 lines in 10 a step line, 25 MB each) in "
                         "their own folder and section")
    ap.add_argument("--fallback-runs", type=int, default=1,
                    help="runs of autopsy with the other search engines (0: none)")
    args = ap.parse_args()
    heading = HEADING
    if args.ranks != N_RANKS:
        _use_ranks(args.ranks)
        heading = f"{HEADING}, {args.ranks} ranks"
    if args.dense:
        _use_dense()
        heading = HEADING if args.ranks == 64 else f"{HEADING}, {args.ranks} ranks"

    planted = generate(args.regen)
    files = [str(p) for p in log_files()]
    total = sum(os.path.getsize(f) for f in files)
    pattern = "|".join(ere(m) for m in ALL_MARKERS)
    rows: list[tuple[str, list[float]]] = []

    grep_t = median_time(["grep", "-c", "-E", pattern, *files], args.runs)
    rows.append((f"GNU `grep -c -E` ({len(ALL_MARKERS)} markers)", grep_t))
    from autopsy.readers.ranklogs.fastpath import _own_rg

    rg = _own_rg() or shutil.which("rg")  # the reader's own choice first
    rg_t: list[float] = []
    if rg:
        rg_t = median_time([rg, "-c", "-e", pattern, *files], args.runs)
        version = subprocess.run([rg, "--version"], capture_output=True, text=True).stdout
        label = version.split("\n", 1)[0] if version else "ripgrep"
        rows.append((f"{label} `rg -c`, same markers", rg_t))

    cmd = [sys.executable, "-m", "autopsy", "ranks", str(OUT), "--format", "json"]
    run_measured(cmd)  # warm-up
    au: list[tuple[float, bytes, dict[str, float]]] = [run_measured(cmd)
                                                       for _ in range(args.runs)]
    au_t = [a[0] for a in au]
    mem = {k: max(a[2][k] for a in au) for k in au[0][2]}
    verdict = verdict_of(au[-1][1])
    culprits = verdict.get("ranks") or []
    culprit = culprits[0] if len(culprits) == 1 else culprits
    cause = verdict.get("cause")
    missing, reader_s, eng = ([], math.nan, "?") if args.skip_check else check_events(planted)
    rows.append((f"`autopsy ranks --format json` (search: {eng})", au_t))
    others = [("grep", "GNU grep search"), ("python", "pure-Python search")]
    for name, what in others if args.fallback_runs else []:
        if name == eng:
            continue
        os.environ["AUTOPSY_RANKLOGS_SEARCH"] = name
        try:
            fb = [run_measured(cmd)[0] for _ in range(args.fallback_runs)]
        finally:
            del os.environ["AUTOPSY_RANKLOGS_SEARCH"]
        rows.append((f"`autopsy ranks`, {what} (`AUTOPSY_RANKLOGS_SEARCH={name}`)", fb))

    g = statistics.median(grep_t)
    a = statistics.median(au_t)
    print(f"files {len(files)}, {total / 1e9:.2f} GB")
    for name, ts in rows:
        t = statistics.median(ts)
        print(f"{name:45s} {t:7.2f} s  {total / t / 1e9:5.2f} GB/s")
    print(f"ratio autopsy/grep {a / g:.2f}; peak RSS main {mem['main_mb']:.0f} MB, "
          f"worker {mem['worker_mb']:.0f} MB, tree {mem['tree_mb']:.0f} MB")
    print(f"verdict: culprit {culprit}, cause {cause}; family {verdict.get('family')}")
    print(f"planted {len(planted)}, missing {len(missing)}: {missing[:5]}; "
          f"read_group {reader_s:.2f} s ({eng})")
    ok = culprit == OOM_RANK and not missing
    st = memory_stages()
    stages_line = ""
    if st:
        stages_line = (
            f"- where the main process's peak comes from (one fresh interpreter, VmHWM after "
            f"each step): imports {st['imports']['VmHWM']:.0f} MB; reading the logs "
            f"{st['read']['VmHWM']:.0f} MB (the scalars frame: {st['scalars']:,} points "
            f"kept of {st['scalars'] + st['thinned']:,} read, "
            f"{st['scalars_mb']:.0f} MB); rules and rank status "
            f"{st['diagnose']['VmHWM']:.0f} MB\n")
        print(stages_line.strip())
    if not args.no_write:
        table = "\n".join(
            f"| {name} | {statistics.median(ts):.2f} s | {min(ts):.2f}-{max(ts):.2f} s | "
            f"{total / statistics.median(ts) / 1e9:.2f} |" for name, ts in rows)
        rg_note = "" if rg else " (`rg` not on PATH here: no ripgrep row)"
        body = (
            f"`python bench/ranklogs.py{' --dense' if DENSE else ''}` — {len(files) - 1} rank "
            f"logs x {(DENSE_BYTES if DENSE else FILE_BYTES) // 10**6} MB"
            f"{', nine lines in ten a step line,' if DENSE else ''} + a launcher "
            f"log ({total / 1e9:.2f} GB), generated into "
            f"`{OUT.relative_to(ROOT).as_posix()}/`; failures planted near each file's end "
            f"(rank {OOM_RANK}: CUDA OOM traceback; every other "
            f"rank but {SILENT[0]}, {SILENT[1]}: NCCL watchdog timeout; `launcher.log`: "
            "torchelastic ChildFailedError). Whole-process, page cache warm, median of "
            f"{args.runs} runs after a warm-up (other rows: {args.fallback_runs}){rg_note}. The "
            "machine is shared with other work: runs vary by up to ~40% between sessions, "
            "so compare rows of one run only.\n\n"
            "| method | median | range | GB/s |\n|---|---|---|---|\n" + table + "\n\n"
            "How: each file of 512 KiB or more is searched for the marker literals by one "
            "`rg -F -o -n -b` run (the `ripgrep` wheel's, of the `[fast]` extra; else GNU "
            "`grep` with the same options), which gives the line number and byte "
            "offset of every match; the reader (two worker processes) streams the file in "
            "4 MiB blocks, checks every offset holds a marker and parses only those lines. "
            "A block the offsets do not fit (an over-long line, a file changed meanwhile) "
            "sends the file to the pure-Python search (`bytes.find` per literal), which gives "
            "identical frames (`tests/test_ranklogs_fastpath.py`). The scalars frame is built "
            "once from all files' columns.\n\n"
            f"- autopsy / grep: **{a / g:.2f}x** (target: at most 4x). Of autopsy's time the "
            f"rank-log reader (`read_group`, in-process, one run) takes {reader_s:.2f} s; the "
            "rest is interpreter start and imports, the rules and the report.\n"
            f"- verdict culprit rank: {culprit} (cause `{cause}`); planted failures found: "
            f"{len(planted) - len(missing)}/{len(planted)}\n"
            f"- peak RSS (VmHWM): main process {mem['main_mb']:.0f} MB, largest worker "
            f"{mem['worker_mb']:.0f} MB; whole process tree at once {mem['tree_mb']:.0f} MB "
            "(target: at most 250 MB)\n"
            f"{stages_line}"
            f"- Machine: {os.cpu_count()} cores, {platform.machine()}, "
            f"{platform.python_implementation()} {platform.python_version()}, "
            f"{_grep_version()}, LANG={os.environ.get('LANG', '')}\n")
        update_section(DOC, heading, body)
    if not ok:
        raise SystemExit("check failed: " + ("wrong culprit" if culprit != OOM_RANK else
                                             f"{len(missing)} planted failures missing"))


if __name__ == "__main__":
    main()
