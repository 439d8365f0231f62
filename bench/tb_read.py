"""Benchmark: TensorBoard event file -> scalars frame, whole-process.

Generates one event file of 2,000,000 simple_value scalars (10 tags x 200,000 steps,
~108 MB; cached in ``bench/out/``), checks its records are byte-for-byte what
``torch.utils.tensorboard.SummaryWriter.add_scalar`` writes, then times, each in a
fresh interpreter (imports included) and checked to return the same number of rows:

1. autopsy's reader (``autopsy.readers.tensorboard.read``) into the run frame;
2. a plain frame loop over tensorboard's ``event_pb2.Event.FromString`` (no CRC check);
3. ``tbparse.SummaryReader(path).scalars`` (once: it takes over a minute).

Peak RSS is taken from ``getrusage`` in the child. The figures go into
``docs/performance.md`` under ``## TensorBoard reader``.

Usage: ``python bench/tb_read.py [--runs 5] [--pb2-runs 3] [--no-tbparse] [--no-write]``
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import struct
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
from docfile import DOC, update_section

from autopsy.formats.crc32c import crc32c_rows, mask_array, masked_crc32c

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "bench" / "out"
BIG = OUT / "events.out.tfevents.2M.bench"
HEADING = "## TensorBoard reader"

TAGS = (
    "train/loss", "train/learning_rate", "train/grad_norm", "train/epoch", "train/loss_scale",
    "train/throughput", "train/step_time", "eval/loss", "eval/accuracy", "train/weight_norm",
)


def _varint(n: int) -> bytes:
    out = bytearray()
    n &= (1 << 64) - 1
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def scalar_event(wall_time: float, step: int, tag: str, value: float) -> bytes:
    """Serialise ``Event(wall_time, step, summary=Summary(value=[Value(tag, simple_value)]))``."""
    t = tag.encode()
    val = b"\x0a" + _varint(len(t)) + t + b"\x15" + struct.pack("<f", value)
    summ = b"\x0a" + _varint(len(val)) + val
    out = b"\x09" + struct.pack("<d", wall_time)
    if step:
        out += b"\x10" + _varint(step)
    return out + b"\x2a" + _varint(len(summ)) + summ


def header_event(wall_time: float) -> bytes:
    """The first record SummaryWriter writes (file_version and source_metadata)."""
    writer = b"tensorboard.summary.writer.event_file_writer"
    meta = b"\x0a" + _varint(len(writer)) + writer
    return (b"\x09" + struct.pack("<d", wall_time) + b"\x1a\x0dbrain.Event:2"
            + b"\x52" + _varint(len(meta)) + meta)


def frame_records(datas: list[bytes]) -> bytes:
    """TFRecord-frame a list of payloads (CRCs computed vectorised per length)."""
    lens = np.array([len(d) for d in datas], dtype=np.int64)
    crcs = np.zeros(len(datas), dtype=np.uint32)
    for n in np.unique(lens).tolist():
        idx = np.flatnonzero(lens == n)
        rows = np.frombuffer(b"".join(datas[i] for i in idx), dtype=np.uint8).reshape(len(idx), n)
        crcs[idx] = mask_array(crc32c_rows(rows))
    out = bytearray()
    for d, c in zip(datas, crcs.tolist(), strict=True):
        head = struct.pack("<Q", len(d))
        out += head + struct.pack("<I", masked_crc32c(head)) + d + struct.pack("<I", c)
    return bytes(out)


def write_big(path: Path, n_steps: int = 200_000, tags: tuple[str, ...] = TAGS) -> int:
    """Write ``n_steps * len(tags)`` scalars to ``path``; return the number of scalars."""
    rng = np.random.default_rng(42)
    vals = (rng.standard_normal((n_steps, len(tags))) * 0.1 + 2.0).astype(np.float32)
    wall0 = 1_750_000_000.0
    datas = [header_event(wall0)]
    for step in range(n_steps):
        w = wall0 + step * 0.25
        row = vals[step].tolist()
        for j, tag in enumerate(tags):
            datas.append(scalar_event(w + j * 1e-4, step, tag, row[j]))
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_bytes(frame_records(datas))
    tmp.replace(path)
    return n_steps * len(tags)


def check_shape(tmp: Path) -> None:
    """Assert our records equal SummaryWriter's, byte for byte (header: all but its time)."""
    from torch.utils.tensorboard import SummaryWriter

    points = [(w, s, t, v) for s in (0, 1, 127, 128, 16384, 199_999)
              for w, t, v in [(1.75e9 + s, tag, 0.1 * s + 1.5) for tag in TAGS]]
    writer = SummaryWriter(log_dir=str(tmp))
    for wall, step, tag, value in points:
        writer.add_scalar(tag, value, step, walltime=wall)
    writer.close()
    (path,) = tmp.glob("*tfevents*")
    theirs = path.read_bytes()
    (n0,) = struct.unpack_from("<Q", theirs, 0)
    header_wall = struct.unpack_from("<d", theirs, 13)[0]
    ours = frame_records(
        [header_event(header_wall)]
        + [scalar_event(w, s, t, float(np.float32(v))) for w, s, t, v in points]
    )
    assert ours == theirs, "generated records differ from SummaryWriter's"
    assert n0 == len(header_event(0.0))


# Peak RSS: VmHWM of the child's own address space (ru_maxrss would include the parent's
# RSS at fork time on Linux).
HWM = """
def hwm():
    for line in open("/proc/self/status"):
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024
"""

AUTOPSY = HWM + """
import json, sys, time
from pathlib import Path
t0 = time.perf_counter()
import numpy, pandas
from autopsy.readers import tensorboard
t1 = time.perf_counter()
p = Path(sys.argv[1])
part = tensorboard.read(p, p.name)
df = part.scalars
print(json.dumps({"rows": len(df), "imports": t1 - t0, "in_process": time.perf_counter() - t1,
                  "frame_bytes": int(df.memory_usage(deep=True).sum()),
                  "problems": len(part.problems), "maxrss": hwm()}))
"""

LOAD_RUN = HWM + """
import json, sys
import autopsy
run = autopsy.load_run(sys.argv[1])
print(json.dumps({"rows": len(run.scalars), "maxrss": hwm()}))
"""

IMPORTS_ONLY = HWM + """
import json
import numpy, pandas
from autopsy.readers import tensorboard
from autopsy.model.scalars import make_scalars
print(json.dumps({"rows": 0, "maxrss": hwm()}))
"""

PB2 = HWM + """
import json, struct, sys
import pandas as pd
from tensorboard.compat.proto import event_pb2
data = open(sys.argv[1], "rb").read()
steps, tags, values, walls = [], [], [], []
pos, n = 0, len(data)
while pos + 12 <= n:
    (length,) = struct.unpack_from("<Q", data, pos)
    ev = event_pb2.Event.FromString(data[pos + 12 : pos + 12 + length])
    pos += 16 + length
    for v in ev.summary.value:
        if v.WhichOneof("value") == "simple_value":
            steps.append(ev.step); tags.append(v.tag)
            values.append(v.simple_value); walls.append(ev.wall_time)
df = pd.DataFrame({"step": steps, "tag": pd.Categorical(tags), "value": values,
                   "wall_time": walls})
print(json.dumps({"rows": len(df), "maxrss": hwm()}))
"""

TBPARSE = HWM + """
import json, sys
from tbparse import SummaryReader
df = SummaryReader(sys.argv[1]).scalars
print(json.dumps({"rows": len(df), "maxrss": hwm()}))
"""


def run_child(code: str, path: Path) -> tuple[float, dict]:
    """Run ``code`` in a fresh interpreter; return (wall seconds, its JSON line)."""
    t0 = time.perf_counter()
    proc = subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True,
                          text=True, check=True, cwd=ROOT)
    elapsed = time.perf_counter() - t0
    return elapsed, json.loads(proc.stdout.strip().splitlines()[-1])


def measure(code: str, path: Path, runs: int) -> dict:
    """Median wall time over ``runs`` runs (after one warm-up when runs > 1)."""
    if runs > 1:
        run_child(code, path)
    times, info = [], {}
    for _ in range(runs):
        t, info = run_child(code, path)
        times.append(t)
    return {"median": statistics.median(times), "times": times, **info}


def _versions() -> str:
    from importlib.metadata import PackageNotFoundError, version

    out = []
    for pkg in ("numpy", "pandas", "tensorboard", "protobuf", "tbparse"):
        try:
            out.append(f"{pkg} {version(pkg)}")
        except PackageNotFoundError:
            out.append(f"{pkg} (absent)")
    return ", ".join(out)


def main() -> None:
    """Generate (once), check, time, and write the figures."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--pb2-runs", type=int, default=3)
    ap.add_argument("--no-tbparse", action="store_true")
    ap.add_argument("--no-write", action="store_true")
    args = ap.parse_args()

    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        check_shape(Path(tmp))
    if not BIG.exists():
        print(f"generating {BIG} ...", file=sys.stderr)
        write_big(BIG)
    size = BIG.stat().st_size
    subprocess.run(["cat", str(BIG)], stdout=subprocess.DEVNULL, check=True)  # warm the cache

    base = measure(IMPORTS_ONLY, BIG, 3)
    ours = measure(AUTOPSY, BIG, args.runs)
    print(f"autopsy: {ours['median']:.2f} s", file=sys.stderr)
    whole = measure(LOAD_RUN, BIG, args.runs)
    print(f"autopsy load_run: {whole['median']:.2f} s", file=sys.stderr)
    pb2 = measure(PB2, BIG, args.pb2_runs)
    print(f"event_pb2 loop: {pb2['median']:.2f} s", file=sys.stderr)
    tbp = None if args.no_tbparse else measure(TBPARSE, BIG, 1)
    if tbp:
        print(f"tbparse: {tbp['median']:.1f} s", file=sys.stderr)
    rows = ours["rows"]
    assert pb2["rows"] == rows, (pb2["rows"], rows)
    assert whole["rows"] == rows, (whole["rows"], rows)
    assert tbp is None or tbp["rows"] == rows, (tbp["rows"], rows)

    mib = 1 << 20
    frame = ours["frame_bytes"]
    speedup = pb2["median"] / ours["median"]

    def fmt(times: list[float]) -> str:
        return ", ".join(f"{t:.2f}" for t in times)

    lines = [
        f"One event file of {rows:,} simple_value scalars (10 tags x {rows // 10:,} steps, "
        f"{size / 1e6:.0f} MB, records byte-identical to `SummaryWriter.add_scalar`'s), "
        "warm page cache. Whole-process wall time (a fresh `python -c`, imports included), "
        "median of the runs listed; every method returned the same number of rows.",
        "",
        "| method | time | scalars/s | peak RSS |",
        "|---|---|---|---|",
        f"| autopsy `readers.tensorboard.read` → run frame | **{ours['median']:.2f} s** "
        f"({fmt(ours['times'])}) | {rows / ours['median'] / 1e6:.2f} M "
        f"| {ours['maxrss'] / mib:.0f} MiB |",
        f"| autopsy `load_run` (discovery, reader, run model) | {whole['median']:.2f} s "
        f"({fmt(whole['times'])}) | {rows / whole['median'] / 1e6:.2f} M "
        f"| {whole['maxrss'] / mib:.0f} MiB |",
        f"| frame loop + tensorboard `event_pb2` (no CRC check) | {pb2['median']:.2f} s "
        f"({fmt(pb2['times'])}) | {rows / pb2['median'] / 1e6:.2f} M "
        f"| {pb2['maxrss'] / mib:.0f} MiB |",
    ]
    if tbp:
        lines.append(
            f"| tbparse `SummaryReader(...).scalars` (1 run) | {tbp['median']:.1f} s "
            f"| {rows / tbp['median'] / 1e6:.3f} M | {tbp['maxrss'] / mib:.0f} MiB |"
        )
    lines += [
        "",
        f"- autopsy, inside the process: imports (`numpy`, `pandas`, autopsy) "
        f"{ours['imports']:.2f} s, reading {ours['in_process']:.2f} s. The imports alone "
        f"peak at {base['maxrss'] / mib:.0f} MiB RSS.",
        f"- Speed-up over the `event_pb2` loop: **{speedup:.1f}x** (goal ≥ 4x; "
        f"time goal ≤ 2 s).",
        f"- The frame: {frame / mib:.0f} MiB (`memory_usage(deep=True)`); peak RSS "
        f"{ours['maxrss'] / mib:.0f} MiB = **{ours['maxrss'] / frame:.2f}x** the frame "
        f"(goal ≤ 3x), of which {(ours['maxrss'] - base['maxrss']) / mib:.0f} MiB above "
        "the imports.",
        f"- Machine: {os.cpu_count()} cores, {platform.machine()}, "
        f"{platform.system()} {platform.release()}, Python {platform.python_version()}; "
        f"{_versions()}.",
        "- Reproduce: `python bench/tb_read.py` (generates `bench/out/` once, ~10 s).",
    ]
    body = "\n".join(lines)
    print(body)
    if not args.no_write:
        update_section(DOC, HEADING, body)


if __name__ == "__main__":
    main()
