"""Robustness campaign: hostile pickles in every placement, and mutated files of each format.

Two campaigns, each case run as its own ``autopsy`` process (a timeout of ``--timeout``
seconds; a pool of ``--jobs`` processes), on copies in ``bench/out/fuzz/`` (git-ignored):

* **hostile pickles**: each payload of :data:`PAYLOADS` (a call of ``os.system`` by REDUCE,
  INST, OBJ and STACK_GLOBAL; ``os.system`` reached as an attribute of ``torch``; a
  standard-library function that runs a command, ``uuid._get_command_stdout``; calls
  masked by the bytes after them: an opcode that does not exist, a BUILD into a list, a
  BUILD into an OrderedDict) spliced in front of the pickle of each placement of
  :data:`PLACEMENTS` (HF ``optimizer.pt``, ``training_args.bin`` and ``rng_state.pth``,
  a Lightning ``.ckpt``, a legacy torch file, a raw ``.pkl``). Each payload would create a
  marker file; ``--prove`` also runs ``torch.load(weights_only=False)`` on each case in a
  child process to show that it does (the campaign's own check that its payloads are live).
  A case fails if autopsy ran the payload, printed a traceback, hung, wrote into the
  checkpoint folder, called the checkpoint an exact resume with no unsafe or
  unverifiable finding, or called it unreadable (exit 2) without naming the global.
* **mutated files**: each real file of :data:`MUTATED` (TensorBoard event file,
  ``trainer_state.json``, ``model.safetensors``, a torch zip, a legacy torch file, a DCP
  ``.metadata``, a torchrun rank log, Flight Recorder dumps in both forms, a py-spy dump and
  a faulthandler log, a W&B record log and summary, MLflow's SQLite and file stores; the
  tracker runs are made by wandb and mlflow at the start, so the test extra is needed)
  mutated ``--mutations`` times per kind of :data:`MUTATIONS` (bit flips, truncation, a
  zeroed region, inserted and deleted bytes, a duplicated region), seeded. A case fails on
  a traceback, a hang, an exit code outside 0-3, or a write into the run folder.

The counts go under ``## Campaign`` of ``docs/robustness.md``.

Usage: ``python bench/fuzz.py [--mutations 3] [--jobs 2] [--timeout 60] [--prove]
[--no-write]``
"""

from __future__ import annotations

import argparse
import io
import json
import os
import random
import shutil
import subprocess
import sys
import zipfile
from collections import Counter
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from docfile import update_section

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "bench" / "out" / "fuzz"
DOC = ROOT / "docs" / "robustness.md"
SAMPLES = ROOT / "sample_runs"
INTRO = ("# Robustness\n\nWhat autopsy does with hostile and broken input, measured by "
         "`bench/fuzz.py`.\n")


def _text(value: bytes) -> bytes:
    return b"X" + len(value).to_bytes(4, "little") + value  # BINUNICODE


def _call(module: str, name: str, args: list[bytes], opcode: str) -> bytes:
    """Opcodes that call ``module.name(*args)`` (the result left on the stack)."""
    pushed = b"".join(_text(a) for a in args)
    tup = {1: b"\x85", 2: b"\x86", 3: b"\x87"}[len(args)]
    glob = b"c" + module.encode() + b"\n" + name.encode() + b"\n"
    if opcode == "reduce":
        return glob + pushed + tup + b"R"
    if opcode == "inst":
        return b"(" + pushed + b"i" + module.encode() + b"\n" + name.encode() + b"\n"
    if opcode == "obj":
        return b"(" + glob + pushed + b"o"
    return _text(module.encode()) + _text(name.encode()) + b"\x93" + pushed + tup + b"R"


def payload(kind: str, marker: Path) -> tuple[bytes, bool]:
    """The payload's bytes (run before the file's own object) and whether it needs protocol 4
    (a dotted name is resolved from protocol 4 on)."""
    touch = f"touch {marker}".encode()
    system = ("posix", "system")
    if kind in ("reduce", "inst", "obj", "stack_global"):
        return _call(*system, [touch], kind) + b"0", False
    if kind == "attribute_path":
        return _call("torch", "os.system", [touch], "stack_global") + b"0", True
    if kind == "stdlib_command":
        return _call("uuid", "_get_command_stdout", [b"touch", str(marker).encode()],
                     "reduce") + b"0", False
    call = _call(*system, [touch], "reduce")
    if kind == "masked_bad_opcode":
        return call + b"\xff", False
    if kind == "masked_build_list":
        return b"]" + call + b"b", False
    if kind == "masked_ordered_dict":
        return b"ccollections\nOrderedDict\n)R" + call + b"b", False
    raise ValueError(kind)


PAYLOADS = ("reduce", "inst", "obj", "stack_global", "attribute_path", "stdlib_command",
            "masked_bad_opcode", "masked_build_list", "masked_ordered_dict")


def splice(data: bytes, kind: str, marker: Path) -> bytes:
    body, proto4 = payload(kind, marker)
    head = b""
    if data[:1] == b"\x80":
        head, data = data[:2], data[2:]
    if proto4:
        head = b"\x80\x04"
    return head + body + data


def splice_file(path: Path, kind: str, marker: Path) -> None:
    """Splice the payload into ``path``: its ``data.pkl`` for a torch zip, else its start."""
    if zipfile.is_zipfile(path):
        with zipfile.ZipFile(path) as zin:
            members = [(i, zin.read(i)) for i in zin.infolist()]
        buf = io.BytesIO()
        with zipfile.ZipFile(buf, "w", compression=zipfile.ZIP_STORED) as zout:
            for info, data in members:
                if info.filename.endswith("data.pkl"):
                    data = splice(data, kind, marker)
                zout.writestr(info.filename, data)
        path.write_bytes(buf.getvalue())
    else:
        path.write_bytes(splice(path.read_bytes(), kind, marker))


def _legacy_file(folder: Path) -> Path:
    import torch

    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "model.pt"
    torch.save({"model": {"w": torch.ones(3)}, "step": 2}, path,
               _use_new_zipfile_serialization=False)
    return path


def _raw_pickle(folder: Path) -> Path:
    import pickle

    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "state.pkl"
    path.write_bytes(pickle.dumps({"model": {"w": [1.0, 2.0]}, "step": 5}, protocol=4))
    return path


#: (name, how to make the checkpoint folder, the file that takes the payload)
PLACEMENTS = ("hf_optimizer", "hf_training_args", "hf_rng_state", "lightning_ckpt",
              "legacy_torch", "raw_pickle")


def place(name: str, dest: Path) -> tuple[Path, Path]:
    """A fresh checkpoint at ``dest``; returns (what autopsy ckpt is given, the file to
    splice)."""
    if name.startswith("hf_"):
        shutil.copytree(SAMPLES / "ckpt_hf_good" / "checkpoint-8", dest)
        file = {"hf_optimizer": "optimizer.pt", "hf_training_args": "training_args.bin",
                "hf_rng_state": "rng_state.pth"}[name]
        return dest, dest / file
    if name == "lightning_ckpt":
        src = next((SAMPLES / "ckpt_lightning_good").rglob("*.ckpt"))
        dest.mkdir(parents=True)
        shutil.copy(src, dest / src.name)
        return dest / src.name, dest / src.name
    if name == "legacy_torch":
        path = _legacy_file(dest)
        return path, path
    path = _raw_pickle(dest)
    return path, path


FIXTURES = ROOT / "tests" / "fixtures"
#: Real files mutated by the second campaign: (name, the run folder (a sample's name, or a
#: path), the file in it, the command that reads it).
MUTATED: tuple[tuple[str, str | Path, str, str], ...] = (
    ("tfevents", "diverging_finite", "runs/events.out.tfevents.*", "analyze"),
    ("trainer_state", "ckpt_hf_good", "trainer_state.json", "analyze"),
    ("safetensors", "ckpt_hf_good", "checkpoint-8/model.safetensors", "ckpt"),
    ("torch_zip", "ckpt_hf_good", "checkpoint-8/optimizer.pt", "ckpt"),
    ("dcp_metadata", "ckpt_dcp_good", "*/.metadata", "ckpt"),
    ("rank_log", "ddp_rank_exception", "logs/*/attempt_0/2/stderr.log", "ranks"),
    ("fr_pickle", FIXTURES / "flight_recorder" / "rank1_never_enters", "nccl_trace_rank_0",
     "ranks"),
    ("fr_json", FIXTURES / "flight_recorder" / "rank1_never_enters", "nccl_trace_rank_1.json",
     "ranks"),
    ("pyspy_dump", FIXTURES / "stack_dumps" / "rank1_stuck_in_data_loading", "pyspy_rank1.txt",
     "ranks"),
    ("faulthandler_log", FIXTURES / "stack_dumps" / "rank1_stuck_in_data_loading", "rank1.log",
     "ranks"),
    ("wandb_summary", FIXTURES / "wandb_files", "files/wandb-summary.json", "analyze"),
    # made by wandb and mlflow at build time (the test extra), see _tracker_runs
    ("wandb_log", OUT / "sources" / "wandb", "wandb/offline-run-*/run-*.wandb", "analyze"),
    ("mlflow_sqlite", OUT / "sources" / "mlflow", "mlflow.db", "analyze"),
    ("mlflow_file", OUT / "sources" / "mlflow", "mlruns/*/*/metrics/loss", "analyze"),
)

_TRACKERS = """
import os, sys
os.environ.update(WANDB_MODE="offline", WANDB_SILENT="true", MLFLOW_ALLOW_FILE_STORE="true")
import mlflow, wandb
out = sys.argv[1]
run = wandb.init(project="fuzz", dir=os.path.join(out, "wandb"), config={"lr": 0.1})
for s in range(300):
    wandb.log({"loss": 1.0 / (1 + s), "lr": 0.1, "note": "x" * 200}, step=s)
run.finish(exit_code=1)
for uri in ("sqlite:///" + os.path.join(out, "mlflow", "mlflow.db"),
            "file:" + os.path.join(out, "mlflow", "mlruns")):
    mlflow.set_tracking_uri(uri)
    with mlflow.start_run(run_name="fuzz"):
        mlflow.log_param("learning_rate", 0.1)
        for s in range(100):
            mlflow.log_metric("loss", 1.0 / (1 + s), step=s)
"""


def _tracker_runs(dest: Path) -> None:
    """A W&B offline run and MLflow's two stores, written by the libraries themselves."""
    (dest / "wandb" / "wandb").mkdir(parents=True, exist_ok=True)
    (dest / "mlflow").mkdir(parents=True, exist_ok=True)
    subprocess.run([sys.executable, "-c", _TRACKERS, str(dest)], check=True,
                   capture_output=True, timeout=300)
MUTATIONS = ("bitflip", "truncate", "zero", "insert", "delete", "duplicate")


def mutate(data: bytes, kind: str, rng: random.Random) -> bytes:
    n = len(data)
    if n == 0:
        return data
    at = rng.randrange(n)
    width = rng.randint(1, max(1, min(4096, n // 4)))
    if kind == "bitflip":
        out = bytearray(data)
        for _ in range(rng.randint(1, 16)):
            i = rng.randrange(n)
            out[i] ^= 1 << rng.randrange(8)
        return bytes(out)
    if kind == "truncate":
        return data[:at]
    if kind == "zero":
        return data[:at] + b"\0" * width + data[at + width:]
    if kind == "insert":
        return data[:at] + bytes(rng.randrange(256) for _ in range(width)) + data[at:]
    if kind == "delete":
        return data[:at] + data[at + width:]
    return data[:at] + data[at:at + width] * rng.randint(2, 50) + data[at:]


@dataclass
class Case:
    """One autopsy run of the campaign."""

    campaign: str
    name: str
    args: list[str]
    folder: str
    marker: str = ""
    prove: str = ""


def _tree(root: Path) -> dict[str, tuple[int, int]]:
    out = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for n in dirnames + filenames:
            p = Path(dirpath) / n
            try:
                st = p.lstat()
            except OSError:
                continue
            out[str(p)] = (st.st_size, st.st_mtime_ns)
    return out


def run_case(case: Case, timeout: int) -> dict[str, object]:
    """Run one case; return what went wrong (an empty ``defects`` list when nothing)."""
    before = _tree(Path(case.folder))
    defects: list[str] = []
    try:
        proc = subprocess.run([sys.executable, "-m", "autopsy", *case.args, "--format", "json"],
                              capture_output=True, text=True, timeout=timeout, cwd=OUT)
        code, out, err = proc.returncode, proc.stdout, proc.stderr
    except subprocess.TimeoutExpired:
        return {"case": case.name, "campaign": case.campaign, "defects": ["hang"]}
    if "Traceback" in err:
        defects.append("traceback")
    if code not in (0, 1, 2, 3):
        defects.append(f"exit {code}")
    if _tree(Path(case.folder)) != before:
        defects.append("wrote into the run")
    if case.marker and Path(case.marker).exists():
        defects.append("payload executed")
    if case.campaign == "pickle" and code == 2 and "references" not in err:
        defects.append("hostile file reported as unreadable only")
    if case.campaign == "pickle" and code in (0, 1):
        report = json.loads(out) if out.strip().startswith("{") else {}
        codes = {f.get("code") for f in report.get("findings", [])}
        for c in report.get("checkpoints", []):
            codes |= {f.get("code") for f in c.get("findings", [])}
        if report.get("resume_level") == "exact" or not codes & {"CKPT030", "CKPT032"}:
            defects.append("hostile file reported as safe")
    proven = None
    if case.prove:
        probe = Path(case.marker)
        subprocess.run([sys.executable, "-c", "import sys, torch\ntry:\n    torch.load("
                        "sys.argv[1], weights_only=False)\nexcept Exception:\n    pass\n",
                        case.prove], capture_output=True, timeout=timeout, check=False)
        proven = probe.exists()
    return {"case": case.name, "campaign": case.campaign, "defects": defects,
            "proven": proven}


def build(mutations: int, prove: bool) -> list[Case]:
    if OUT.exists():
        shutil.rmtree(OUT)
    OUT.mkdir(parents=True)
    cases: list[Case] = []
    for kind in PAYLOADS:
        for where in PLACEMENTS:
            name = f"{kind}@{where}"
            folder = OUT / "pickle" / name
            marker = OUT / "markers" / name
            marker.parent.mkdir(parents=True, exist_ok=True)
            target, file = place(where, folder)
            splice_file(file, kind, marker)
            cases.append(Case("pickle", name, ["ckpt", str(target)], str(folder),
                              str(marker), str(file) if prove else ""))
    _tracker_runs(OUT / "sources")
    rng = random.Random(20261126)
    for name, sample, pattern, command in MUTATED:
        base = sample if isinstance(sample, Path) else SAMPLES / sample
        src = next(base.glob(pattern))
        for kind in MUTATIONS:
            for i in range(mutations):
                folder = OUT / "mutated" / f"{name}_{kind}_{i}"
                shutil.copytree(base, folder, symlinks=True)
                target = folder / src.relative_to(base)
                target.write_bytes(mutate(src.read_bytes(), kind, rng))
                cases.append(Case("mutated", f"{name}/{kind}/{i}", [command, str(folder)],
                                  str(folder)))
    return cases


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mutations", type=int, default=3)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--timeout", type=int, default=60)
    parser.add_argument("--prove", action="store_true")
    parser.add_argument("--no-write", action="store_true")
    ns = parser.parse_args(argv)
    cases = build(ns.mutations, ns.prove)
    with ProcessPoolExecutor(ns.jobs) as pool:
        results = list(pool.map(run_case, cases, [ns.timeout] * len(cases)))
    tried = Counter(r["campaign"] for r in results)
    defects = Counter((r["campaign"], d) for r in results for d in r["defects"])  # type: ignore[union-attr]
    bad = [r for r in results if r["defects"]]
    proven = sum(1 for r in results if r.get("proven"))
    for r in bad:
        print("DEFECT", r["campaign"], r["case"], r["defects"])
    lines = [
        f"`python bench/fuzz.py --mutations {ns.mutations}{' --prove' if ns.prove else ''}`"
        f" — {len(results)} cases, each one `autopsy` process (timeout {ns.timeout} s).",
        "",
        "| campaign | cases | defects |",
        "|---|---|---|",
        f"| hostile pickles ({len(PAYLOADS)} payloads x {len(PLACEMENTS)} placements: "
        f"{', '.join(PLACEMENTS)}) | {tried['pickle']} | "
        f"{sum(n for (c, _), n in defects.items() if c == 'pickle')} |",
        f"| mutated files ({len(MUTATED)} formats x {len(MUTATIONS)} mutations x "
        f"{ns.mutations}) | {tried['mutated']} | "
        f"{sum(n for (c, _), n in defects.items() if c == 'mutated')} |",
        "",
    ]
    if ns.prove:
        lines.append(f"Payloads proven live: {proven} of {tried['pickle']} run code under "
                     "`torch.load(weights_only=False)` in a child process (the check that "
                     "the campaign's payloads are real).")
    if defects:
        lines += ["", "Defects by kind: " + ", ".join(f"{c}/{d}: {n}"
                                                        for (c, d), n in defects.items())]
    else:
        lines += ["", "No case ran a payload, printed a traceback, hung, wrote into the run, "
                  "exited outside 0-3, or called a hostile checkpoint an exact resume."]
    body = "\n".join(lines)
    print(body)
    if not ns.no_write:
        update_section(DOC, "## Campaign", body, intro=INTRO)
        print(f"wrote {DOC.relative_to(ROOT)}")
    return 1 if bad else 0


if __name__ == "__main__":
    raise SystemExit(main())
