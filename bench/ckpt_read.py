"""Benchmark: checkpoint audit read (tensor metadata without bytes) and the NaN/Inf value scan.

Generates once, cached in ``bench/out/ckpt/``: a checkpoint shaped like a GPT-2-small
HF Trainer checkpoint, ``model.safetensors`` (GPT-2-small tensor shapes, 14 blocks
and an untied ``lm_head``: 177 M float32 parameters, ~710 MB, close to the issue's
725 MB) written by ``safetensors.torch.save_file``, and ``optimizer.pt``: a real
``torch.optim.AdamW(...).state_dict()`` after one step on those parameters,
``torch.save``'d (~1.42 GB). Then measures, each in a fresh interpreter (imports
included), on a warm page cache:

a. ``read_torch_meta(optimizer.pt)`` + ``read_safetensors_meta(model.safetensors)``:
   whole-process time and peak RSS;
b. ``import torch; torch.load(optimizer.pt, mmap=True, weights_only=True)`` plus the
   safetensors file (``safe_open`` keys and metadata; and ``load_file``);
c. ``scan_values`` over every tensor of both files: GB/s and peak RSS, against
   ``np.isfinite`` on a ``np.memmap`` of each tensor and ``cat``/``dd`` of the files
   to ``/dev/null`` (the I/O floor); plus the scan strategies considered.

Peak RSS is ``VmHWM`` of the child. Figures go to ``docs/performance.md`` under
``## Checkpoint audit read``.

Usage: ``python bench/ckpt_read.py [--runs 5] [--no-write]``
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path

from docfile import DOC, update_section

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "bench" / "out" / "ckpt"
MODEL = OUT / "model.safetensors"
OPTIM = OUT / "optimizer.pt"
HEADING = "## Checkpoint audit read"
N_EMBD, N_LAYER, N_VOCAB, N_CTX = 768, 14, 50257, 1024


def gpt2_shapes() -> dict[str, tuple[int, ...]]:
    """GPT-2-small parameter names and shapes (``N_LAYER`` blocks, untied ``lm_head``)."""
    d = N_EMBD
    shapes: dict[str, tuple[int, ...]] = {
        "transformer.wte.weight": (N_VOCAB, d), "transformer.wpe.weight": (N_CTX, d),
    }
    for i in range(N_LAYER):
        p = f"transformer.h.{i}."
        shapes.update({
            p + "ln_1.weight": (d,), p + "ln_1.bias": (d,),
            p + "attn.c_attn.weight": (d, 3 * d), p + "attn.c_attn.bias": (3 * d,),
            p + "attn.c_proj.weight": (d, d), p + "attn.c_proj.bias": (d,),
            p + "ln_2.weight": (d,), p + "ln_2.bias": (d,),
            p + "mlp.c_fc.weight": (d, 4 * d), p + "mlp.c_fc.bias": (4 * d,),
            p + "mlp.c_proj.weight": (4 * d, d), p + "mlp.c_proj.bias": (d,),
        })
    shapes.update({"transformer.ln_f.weight": (d,), "transformer.ln_f.bias": (d,),
                   "lm_head.weight": (N_VOCAB, d)})
    return shapes


def generate() -> None:
    """Write model.safetensors and optimizer.pt (AdamW after one step) into ``OUT``."""
    import torch
    from safetensors.torch import save_file

    OUT.mkdir(parents=True, exist_ok=True)
    torch.manual_seed(0)
    params = {}
    for name, shape in gpt2_shapes().items():
        t = torch.empty(shape)
        if name.endswith(".bias"):
            t.zero_()
        elif "ln_" in name:
            t.fill_(1.0)
        else:
            t.normal_(0.0, 0.02)
        params[name] = torch.nn.Parameter(t)
    save_file({k: v.detach() for k, v in params.items()}, str(OUT / "model.tmp"),
              metadata={"format": "pt"})
    opt = torch.optim.AdamW(params.values(), lr=5e-5, weight_decay=0.01)
    for p in params.values():
        p.grad = torch.randn_like(p) * 1e-3
    opt.step()
    for p in params.values():
        p.grad = None
    torch.save(opt.state_dict(), OUT / "optim.tmp")
    (OUT / "model.tmp").replace(MODEL)
    (OUT / "optim.tmp").replace(OPTIM)


# Peak RSS: VmHWM of the child's own address space.
HWM = """
def hwm():
    for line in open("/proc/self/status"):
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024
"""

OURS_META = HWM + """
import json, sys
from autopsy.formats.torchmeta import read_torch_meta
from autopsy.formats.safetensors import read_safetensors_meta
opt = read_torch_meta(sys.argv[1]); model = read_safetensors_meta(sys.argv[2])
assert not opt.problems and not model.problems, (opt.problems, model.problems)
print(json.dumps({"tensors": len(opt.tensors) + len(model.tensors), "maxrss": hwm(),
                  "modules": sorted(m for m in ("torch", "numpy", "pandas")
                                    if m in sys.modules)}))
"""

TORCH_META = HWM + """
import json, sys
import torch
from safetensors import safe_open
opt = torch.load(sys.argv[1], mmap=True, weights_only=True)
with safe_open(sys.argv[2], framework="pt") as f:
    keys = list(f.keys()); meta = f.metadata()
n = sum(len(s) for s in opt["state"].values()) + len(keys)
print(json.dumps({"tensors": n, "maxrss": hwm()}))
"""

TORCH_LOADFILE = HWM + """
import json, sys
import torch
from safetensors.torch import load_file
opt = torch.load(sys.argv[1], mmap=True, weights_only=True)
model = load_file(sys.argv[2])
n = sum(len(s) for s in opt["state"].values()) + len(model)
print(json.dumps({"tensors": n, "maxrss": hwm()}))
"""

OURS_SCAN = HWM + """
import json, sys, time
from autopsy.formats.torchmeta import read_torch_meta
from autopsy.formats.safetensors import read_safetensors_meta
from autopsy.formats.valuescan import scan_values
from autopsy.formats.valuescan import default_workers
chunk, workers = int(sys.argv[3]), int(sys.argv[4]) or default_workers()
tensors = read_torch_meta(sys.argv[1]).tensors
tensors += list(read_safetensors_meta(sys.argv[2]).tensors.items())
t0 = time.perf_counter()
stats = list(scan_values(tensors, chunk_bytes=chunk, workers=workers))
dt = time.perf_counter() - t0
assert all(s.checked and s.finite for _, s in stats)
print(json.dumps({"seconds": dt, "bytes": sum(i.nbytes for _, i in tensors),
                  "tensors": len(stats), "workers": workers, "maxrss": hwm()}))
"""

NUMPY_SCAN = HWM + """
import json, sys, time
import numpy as np
from autopsy.formats.torchmeta import read_torch_meta
from autopsy.formats.safetensors import read_safetensors_meta
tensors = read_torch_meta(sys.argv[1]).tensors
tensors += list(read_safetensors_meta(sys.argv[2]).tensors.items())
t0 = time.perf_counter()
ok = True
for _, info in tensors:
    arr = np.memmap(info.file, np.float32, "r", info.data_offset, (info.nbytes // 4,))
    ok &= bool(np.isfinite(arr).all())
    del arr
dt = time.perf_counter() - t0
assert ok
print(json.dumps({"seconds": dt, "bytes": sum(i.nbytes for _, i in tensors),
                  "maxrss": hwm()}))
"""

# Strategies for the per-chunk test, over the optimizer file's float32 bytes, in-process.
STRATEGIES = HWM + """
import json, mmap, os, sys, time
import numpy as np
path = sys.argv[1]
size = os.path.getsize(path) // 4 * 4
out = {}

def two_max(u):
    return int(u.max()), int(u.view(np.int32).max())

def mask_equal(u, tmp, flags):
    np.bitwise_and(u, np.uint32(0x7F800000), out=tmp)
    np.equal(tmp, np.uint32(0x7F800000), out=flags)
    return bool(flags.any())

def isfinite_abs(u):
    f = u.view(np.float32)
    return bool(np.isfinite(f).all()), float(np.abs(f).max())

def run(name, chunk, fn, extra=False):
    buf = bytearray(chunk)
    tmp = np.empty(chunk // 4, np.uint32)
    flags = np.empty(chunk // 4, np.bool_)
    t0 = time.perf_counter()
    with open(path, "rb", buffering=0) as fh:
        left = size
        while left:
            n = fh.readinto(memoryview(buf)[: min(chunk, left)])
            u = np.frombuffer(buf, np.uint32, n // 4)
            if extra:
                fn(u, tmp[: n // 4], flags[: n // 4])
            else:
                fn(u)
            left -= n
    out[name] = size / (time.perf_counter() - t0) / 1e9

for mb in (1, 4, 16, 64):
    run(f"readinto {mb} MiB + two max (ours)", mb << 20, two_max)
run("readinto 4 MiB only (copy floor)", 4 << 20, lambda u: None)
run("readinto 4 MiB + mask & equal + any", 4 << 20, mask_equal, extra=True)
run("readinto 4 MiB + isfinite + abs max", 4 << 20, isfinite_abs)
t0 = time.perf_counter()
with open(path, "rb") as fh:
    mm = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)
    win = 64 << 20
    for start in range(0, size, win):
        n = min(win, size - start)
        u = np.frombuffer(mm, np.uint32, n // 4, start)
        for s in range(0, n // 4, 1 << 20):
            two_max(u[s : s + (1 << 20)])
        del u
        mm.madvise(mmap.MADV_DONTNEED, start, n)
    mm.close()
out["mmap 64 MiB windows + two max (no copy)"] = size / (time.perf_counter() - t0) / 1e9
print(json.dumps({"rates": out, "maxrss": hwm()}))
"""


def run_child(code: str, *args: str) -> tuple[float, dict]:
    """Run ``code`` in a fresh interpreter; return (wall seconds, its JSON line)."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    t0 = time.perf_counter()
    proc = subprocess.run([sys.executable, "-c", code, *args], capture_output=True,
                          text=True, check=True, cwd=ROOT, env=env)
    elapsed = time.perf_counter() - t0
    lines = proc.stdout.strip().splitlines()
    return elapsed, json.loads(lines[-1]) if lines else {}


def measure(code: str, args: list[str], runs: int) -> dict:
    """Median wall time over ``runs`` runs, after one warm-up run."""
    run_child(code, *args)
    times, infos = [], []
    for _ in range(runs):
        t, info = run_child(code, *args)
        times.append(t)
        infos.append(info)
    return {"median": statistics.median(times), "times": times, "infos": infos, **infos[-1]}


def io_floor(cmd: list[str], runs: int) -> float:
    """Median seconds of a shell command that reads the files (output discarded)."""
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def time_cli(args: list[str], runs: int) -> dict:
    """Whole-process wall time (median, all) and peak RSS of ``python -m autopsy ARGS``."""
    times, peak = [], 0
    for _ in range(runs + 1):  # the first run warms up
        t0 = time.perf_counter()
        proc = subprocess.Popen([sys.executable, "-m", "autopsy", *args],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        _, status, usage = os.wait4(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)
        times.append(time.perf_counter() - t0)
        peak = max(peak, usage.ru_maxrss * 1024)
        if proc.returncode not in (0, 1):
            raise SystemExit(f"autopsy {' '.join(args)} exited {proc.returncode}")
    times = times[1:]
    return {"median": statistics.median(times), "times": times, "maxrss": peak,
            "rc": proc.returncode}


def import_check() -> dict[str, list[str]]:
    """Heavy modules each of our modules pulls in, from ``python -X importtime``."""
    heavy = ("torch", "pandas", "numpy")
    found: dict[str, list[str]] = {}
    for mod in ("autopsy.formats.torchmeta", "autopsy.formats.safetensors",
                "autopsy.formats.valuescan"):
        proc = subprocess.run([sys.executable, "-X", "importtime", "-c", f"import {mod}"],
                              capture_output=True, text=True, check=True, cwd=ROOT,
                              env={**os.environ, "PYTHONPATH": str(ROOT)})
        names = {line.rsplit("|", 1)[-1].strip() for line in proc.stderr.splitlines()}
        found[mod] = sorted(h for h in heavy if h in names)
    return found


def _versions() -> str:
    from importlib.metadata import PackageNotFoundError, version

    out = []
    for pkg in ("numpy", "torch", "safetensors"):
        try:
            out.append(f"{pkg} {version(pkg)}")
        except PackageNotFoundError:
            out.append(f"{pkg} (absent)")
    return ", ".join(out)


def main() -> None:
    """Generate (once), time, and write the figures."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--no-write", action="store_true")
    ap.add_argument("--body-out", help="write the figures to this file, not to the docs")
    ap.add_argument("--reference", help="figures of a run on another machine, to append")
    ap.add_argument("--reference-title", default="Same benchmark on a quiet 16-core machine")
    args = ap.parse_args()
    if not (MODEL.exists() and OPTIM.exists()):
        print(f"generating {OUT} ...", file=sys.stderr)
        generate()
    files = [str(OPTIM), str(MODEL)]
    total = OPTIM.stat().st_size + MODEL.stat().st_size
    subprocess.run(["cat", *files], stdout=subprocess.DEVNULL, check=True)  # warm the cache

    empty = measure("pass", [], args.runs)
    ours = measure(OURS_META, files, args.runs)
    print(f"ours: {ours['median']:.3f} s", file=sys.stderr)
    theirs = measure(TORCH_META, files, args.runs)
    print(f"torch.load mmap + safe_open: {theirs['median']:.3f} s", file=sys.stderr)
    loadfile = measure(TORCH_LOADFILE, files, max(1, args.runs // 2))
    print(f"torch.load mmap + load_file: {loadfile['median']:.3f} s", file=sys.stderr)
    assert ours["tensors"] == theirs["tensors"] == loadfile["tensors"]
    cli = time_cli(["ckpt", str(OUT)], args.runs)
    cli_scan = time_cli(["ckpt", str(OUT), "--scan-values"], max(1, args.runs // 2))
    print(f"autopsy ckpt: {cli['median']:.3f} s, --scan-values {cli_scan['median']:.3f} s",
          file=sys.stderr)

    scans = {(mb, w): measure(OURS_SCAN, [*files, str(mb << 20), str(w)], args.runs)
             for mb, w in ((64, 0), (64, 1), (4, 0))}
    numpy_scan = measure(NUMPY_SCAN, files, 3)
    cat = io_floor(["cat", *files], args.runs)
    dd = io_floor(["sh", "-c", f"dd if={files[0]} bs=64M of=/dev/null && "
                   f"dd if={files[1]} bs=64M of=/dev/null"], args.runs)
    strategies = measure(STRATEGIES, [str(OPTIM)], 1)
    imports = import_check()

    mib, gb = 1 << 20, 1e9
    cheapest = min(theirs["median"], loadfile["median"])

    def fmt(times: list[float]) -> str:
        return ", ".join(f"{t:.3f}" for t in times)

    def rate(d: dict) -> str:
        rates = sorted(i["bytes"] / i["seconds"] / gb for i in d["infos"])
        secs = statistics.median(i["seconds"] for i in d["infos"])
        spread = f"; runs {rates[0]:.2f}-{rates[-1]:.2f}" if len(rates) > 1 else ""
        return f"{statistics.median(rates):.2f} GB/s ({secs:.2f} s{spread})"

    lines = [
        f"A checkpoint shaped like a GPT-2-small HF Trainer checkpoint: `model.safetensors` "
        f"({MODEL.stat().st_size / 1e6:.0f} MB, {len(gpt2_shapes())} float32 tensors: "
        f"GPT-2-small shapes, {N_LAYER} blocks, untied `lm_head`) and `optimizer.pt` "
        f"({OPTIM.stat().st_size / 1e6:.0f} MB, a real `torch.optim.AdamW` state_dict after "
        f"one step, `torch.save`), {total / 1e9:.2f} GB in all, {ours['tensors']} tensors; "
        "warm page cache. Whole-process wall time of a fresh `python -c` (imports included), "
        "median of the runs listed; peak RSS is the child's VmHWM.",
        "",
        "| read the metadata of both files | time | peak RSS |",
        "|---|---|---|",
        f"| autopsy `read_torch_meta` + `read_safetensors_meta` | **{ours['median']:.3f} s** "
        f"({fmt(ours['times'])}) | **{ours['maxrss'] / mib:.0f} MiB** |",
        f"| `import torch`; `torch.load(mmap=True, weights_only=True)` + `safe_open` keys "
        f"| {theirs['median']:.3f} s ({fmt(theirs['times'])}) | {theirs['maxrss'] / mib:.0f} "
        "MiB |",
        f"| `import torch`; `torch.load(mmap=True, weights_only=True)` + "
        f"`safetensors.torch.load_file` | {loadfile['median']:.3f} s "
        f"({fmt(loadfile['times'])}) | {loadfile['maxrss'] / mib:.0f} MiB |",
        f"| `python -c pass` (interpreter start) | {empty['median']:.3f} s | - |",
        "",
        "| the command | time | peak RSS |",
        "|---|---|---|",
        f"| `autopsy ckpt bench/out/ckpt` (the whole audit: layout, every component, "
        f"consistency, integrity, report) | **{cli['median']:.3f} s** ({fmt(cli['times'])}) "
        f"| **{cli['maxrss'] / mib:.0f} MiB** |",
        f"| `autopsy ckpt bench/out/ckpt --scan-values` (every tensor read) "
        f"| {cli_scan['median']:.3f} s ({fmt(cli_scan['times'])}) "
        f"| {cli_scan['maxrss'] / mib:.0f} MiB |",
        "",
        f"- `autopsy ckpt` takes **{cli['median'] / cheapest:.0%}** of the time of the "
        f"faster torch route, the metadata read alone {ours['median'] / cheapest:.0%} "
        f"(goal ≤ 50%); goals ≤ 0.5 s and ≤ 100 MB RSS. "
        f"Modules loaded by our read: {ours['modules'] or 'neither torch, numpy nor pandas'}.",
        "- `python -X importtime`: heavy modules pulled in by "
        + "; ".join(f"`{m}`: {', '.join(v) or 'none'}" for m, v in imports.items())
        + " (numpy is for the value scan only).",
        "",
        "| NaN/Inf scan of every tensor (both files) | throughput, median (time; range) "
        "| peak RSS |",
        "|---|---|---|",
    ]
    for (mb, _w), d in scans.items():
        threads = "1 thread" if d["workers"] == 1 else f"{d['workers']} threads (default)"
        lines.append(f"| autopsy `scan_values`, chunk {mb} MiB, {threads} | **{rate(d)}** "
                     f"| {d['maxrss'] / mib:.0f} MiB |")
    lines += [
        f"| `np.isfinite(np.memmap(...)).all()` per tensor | {rate(numpy_scan)} "
        f"| {numpy_scan['maxrss'] / mib:.0f} MiB |",
        f"| `cat` both files > /dev/null (I/O floor) | {total / cat / gb:.2f} GB/s "
        f"({cat:.2f} s) | - |",
        f"| `dd bs=64M` both files > /dev/null | {total / dd / gb:.2f} GB/s ({dd:.2f} s) | - |",
        "",
        "Per-chunk strategies measured on `optimizer.pt` (in-process, float32 view):",
        "",
        "| strategy | GB/s |",
        "|---|---|",
        *(f"| {name} | {r:.2f} |" for name, r in strategies["rates"].items()),
        "",
        "- `scan_values` maps each file read-only and looks at a tensor in windows of "
        "`chunk_bytes` (at most 8 MiB), tallied by up to 4 threads (the CPUs it may use; "
        "numpy drops the GIL in reductions, so page faults and reductions overlap), each "
        "window's pages dropped after use with `madvise(MADV_DONTNEED)`: no copy and "
        "bounded RSS (4 MiB windows pay more calls). In each 4 MiB block two read-only "
        "reductions (max of the unsigned and of the signed integer view) tell both "
        "\"any non-finite?\" and the largest finite magnitude; only blocks holding a "
        "non-finite value take an exact pass. Larger windows gave no more speed for "
        "more RSS (16 MiB x 4 threads: 103 MiB); `readinto` a buffer pays a copy. The "
        "strategy table is one single-threaded run each, noisy on a shared machine.",
        f"- Machine: {os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f} at the end "
        f"(other jobs share it), {platform.machine()}, {platform.system()} "
        f"{platform.release()}, Python {platform.python_version()}; {_versions()}.",
        "- Reproduce: `python bench/ckpt_read.py` (generates `bench/out/ckpt/` once, ~1 min; "
        "`--body-out F` writes the figures to F instead, `--reference F` appends such a "
        "run from another machine).",
    ]
    body = "\n".join(lines)
    if args.reference:
        ref = Path(args.reference).read_text(encoding="utf-8").strip()
        body += f"\n\n### {args.reference_title}\n\n{ref}"
    if args.body_out:
        Path(args.body_out).write_text(body + "\n", encoding="utf-8")
    print(body)
    if not args.no_write and not args.body_out:
        update_section(DOC, HEADING, body)


if __name__ == "__main__":
    main()
