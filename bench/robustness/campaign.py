"""Robustness campaign: hostile pickles, format-aware mutation, pathological sizes.

Three campaigns, on copies under ``bench/out/robustness/`` (git-ignored):

* **hostile pickles** (:mod:`hostile`): every payload in every placement, through
  ``autopsy ckpt``. A case fails if autopsy ran the payload, printed a traceback, hung,
  wrote into the checkpoint folder, called the checkpoint an exact resume with no unsafe
  or unverifiable finding, or called it unreadable (exit 2) without naming the global.
* **mutated files** (:mod:`mutation`): each format's real file, damaged ``--mutations``
  times by each kind of mutation, through the command that reads it (``--format json``).
* **pathological sizes** (``tests/robustness/inputs.py``): one input per class of issue
  19 at full size (``--quick``: scaled down), each run in a fresh interpreter whose
  process tree (workers, ``rg``) is measured by PSS, against its class's bound.

Every case of the first two runs in a process forked from one that has imported autopsy
(:mod:`runner`: 0.1 s a case instead of 0.7 s). Any case fails on a traceback, an exit
code outside 0-3, a run past ``--timeout`` seconds (60), a process tree past 1 GB, or a
change to the files of its run folder. Folders of failed cases are kept for reproduction.

Usage::

    python bench/robustness/campaign.py --quick          # CI-sized: about 2 minutes
    python bench/robustness/campaign.py                  # full: over 10,000 mutated inputs

``--quick`` writes nothing; the full mode writes its counts under ``## Campaign`` of
``docs/robustness.md`` (``--no-write`` to skip). Exit 1 if any case failed.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path[:0] = [str(HERE), str(HERE.parent), str(ROOT / "tests" / "robustness")]

import hostile  # noqa: E402
import inputs  # noqa: E402
import mutation  # noqa: E402
import runner  # noqa: E402
from docfile import update_section  # noqa: E402
from measure import run_autopsy  # noqa: E402

OUT = mutation.OUT
DOC = ROOT / "docs" / "robustness.md"
INTRO = ("# Robustness\n\nWhat autopsy does with hostile and broken input, measured by "
         "`bench/robustness/campaign.py`.\n")
#: Mutations per (format, kind) in the full campaign: 18 formats x 6 kinds x 93 = 10,044.
FULL_MUTATIONS = 93
#: The campaign's bound on every case's process tree.
MAX_TREE_MB = 1024.0


@dataclass
class Case:
    """One ``autopsy`` run of the campaign."""

    campaign: str
    name: str
    args: list[str]
    folder: Path
    marker: Path | None = None
    prove: Path | None = None
    before: dict[str, tuple[int, int]] = field(default_factory=dict)
    out: Path = Path()


def _tree(root: Path) -> dict[str, tuple[int, int]]:
    """Every path under ``root`` (or ``root`` itself, a file) with its size and mtime."""
    out: dict[str, tuple[int, int]] = {}
    paths = [root] if root.is_file() else []
    for dirpath, dirnames, filenames in os.walk(root):
        paths += [Path(dirpath) / n for n in dirnames + filenames]
    for p in paths:
        try:
            st = p.lstat()
        except OSError:
            continue
        out[str(p)] = (st.st_size, st.st_mtime_ns)
    return out


def _defects(case: Case, got: runner.Outcome) -> list[str]:
    """What went wrong in one case (empty when nothing)."""
    if got.timed_out:
        return ["hang"]
    found = []
    if "Traceback" in got.stderr or got.rc == runner.ESCAPED:
        found.append("traceback")
    if got.rc not in (0, 1, 2, 3):
        found.append(f"exit {got.rc}")
    if got.peak_mb > MAX_TREE_MB:
        found.append(f"memory {got.peak_mb:.0f} MB")
    if _tree(case.folder) != case.before:
        found.append("wrote into the run")
    if case.marker is not None and case.marker.exists():
        found.append("payload executed")
    if case.campaign == "pickle":
        if got.rc == 2 and "references" not in got.stderr:
            found.append("hostile file reported as unreadable only")
        if got.rc in (0, 1):
            report = json.loads(got.stdout) if got.stdout.strip().startswith("{") else {}
            codes = {f.get("code") for f in report.get("findings", [])}
            for c in report.get("checkpoints", []):
                codes |= {f.get("code") for f in c.get("findings", [])}
            if report.get("resume_level") == "exact" or not codes & {"CKPT030", "CKPT032"}:
                found.append("hostile file reported as safe")
    return found


def pickle_cases() -> Iterator[Case]:
    """Every payload in every placement (:mod:`hostile`)."""
    for kind in hostile.PAYLOADS:
        for where in hostile.PLACEMENTS:
            name = f"{kind}@{where}"
            folder = OUT / "pickle" / name
            marker = OUT / "markers" / name
            marker.parent.mkdir(parents=True, exist_ok=True)
            target, file = hostile.place(where, folder)
            hostile.splice_file(file, kind, marker)
            yield Case("pickle", name, ["ckpt", str(target), "--format", "json"], folder,
                       marker, file)  # prove: only used with --prove


def mutated_cases(mutations: int, seed: int = 20261126) -> Iterator[Case]:
    """Each format's file mutated ``mutations`` times by each kind (:mod:`mutation`),
    made just before it runs."""
    rng = random.Random(seed)
    for name, *_ in mutation.MUTATED:
        base, src, command = mutation.source_file(name)
        data = src.read_bytes()
        for kind in mutation.MUTATIONS:
            for i in range(mutations):
                folder = OUT / "mutated" / f"{name}_{kind}_{i}"
                if folder.exists():
                    shutil.rmtree(folder)
                shutil.copytree(base, folder, symlinks=True)
                (folder / src.relative_to(base)).write_bytes(mutation.mutate(data, kind, rng))
                yield Case("mutated", f"{name}/{kind}/{i}",
                           [command, str(folder), "--format", "json"], folder)


@dataclass
class Pathological:
    """One class of pathological input: how to build it, the commands, and its bound."""

    name: str
    build: Callable[[Path], Path]
    commands: tuple[tuple[str, ...], ...]
    max_mb: float
    max_s: float = 60.0


def pathological(quick: bool) -> list[Pathological]:
    """The classes of issue 19, full size (or scaled down for ``--quick``)."""
    gib = 1 << 30
    return [
        Pathological("pickle of shared references (2 kB, 24 million elements as a tree)",
                     lambda d: inputs.training_args_bomb(d).parent,
                     (("analyze", "--format", "json"), ("analyze",), ("ckpt",)), 300, 10),
        Pathological(f"3 logs of {'256 MiB' if quick else '2 GiB'} with no newline",
                     lambda d: inputs.sparse_logs(d, 3, gib // 4 if quick else 2 * gib),
                     (("ranks", "--format", "json"), ("analyze",)), 300),
        Pathological(f"a TensorBoard record of {'20' if quick else '200'} MB",
                     lambda d: inputs.tb_giant_tag(d, 20 if quick else 200),
                     (("analyze", "--format", "json"), ("timeline",)), 300),
        Pathological("50,000 safetensors entries on the same 4 bytes",
                     lambda d: inputs.overlapping_safetensors(d / "model.safetensors"),
                     (("ckpt",), ("ckpt", "--scan-values", "--format", "json")), 300, 20),
        Pathological(f"{'300' if quick else '1,000'} event files of 5 steps",
                     lambda d: inputs.many_event_files(d, 300 if quick else 1000),
                     (("analyze",), ("timeline",)), 300, 20),
        Pathological(f"{'10,000' if quick else '100,000'} ranks in one log and a traceback",
                     lambda d: inputs.many_ranks_log(d / "job.log",
                                                     10_000 if quick else 100_000, 4242),
                     (("ranks",), ("ranks", "--format", "json")), 1024, 30),
        Pathological("one rank number of 20 digits, one step of 2**63",
                     lambda d: inputs.overflowing_numbers(d),
                     (("ranks", "job.log"), ("analyze", "hf")), 300, 10),
    ]


def run_pathological(quick: bool) -> list[dict[str, object]]:
    """Build and run each class in a fresh interpreter; a row per command."""
    rows: list[dict[str, object]] = []
    for cls in pathological(quick):
        folder = OUT / "pathological" / cls.name.split()[0]
        if folder.parent.exists() and folder.exists():
            shutil.rmtree(folder)
        folder.parent.mkdir(parents=True, exist_ok=True)
        target = cls.build(folder)
        before = _tree(folder)
        for command in cls.commands:
            args = list(command)
            if len(args) > 1 and not args[1].startswith("-"):  # a path inside the folder
                args = [args[0], str(folder / args[1]), *args[2:]]
            else:
                args = [args[0], str(target), *args[1:]]
            try:
                got = run_autopsy(*args, timeout=max(cls.max_s * 3, 60))
                defects = []
                if "Traceback" in got.stderr or got.rc not in (0, 1, 2, 3):
                    defects.append(f"exit {got.rc} / traceback")
                if got.wall_s > cls.max_s:
                    defects.append(f"time {got.wall_s:.1f} s")
                if got.peak_mb > cls.max_mb:
                    defects.append(f"memory {got.peak_mb:.0f} MB")
                wall, peak = got.wall_s, got.peak_mb
            except AssertionError:
                defects, wall, peak = ["hang"], float("nan"), float("nan")
            if _tree(folder) != before:
                defects.append("wrote into the run")
            rows.append({"class": cls.name, "command": " ".join(command), "wall_s": wall,
                         "peak_mb": peak, "bound": f"{cls.max_s:.0f} s, {cls.max_mb:.0f} MB",
                         "defects": defects})
            print(f"  {cls.name}: autopsy {' '.join(command)}: {wall:.1f} s, {peak:.0f} MB"
                  + (f"  DEFECT {defects}" if defects else ""), flush=True)
        shutil.rmtree(folder, ignore_errors=True)
    return rows


def run_forked(cases: Iterator[Case], jobs: int, timeout: float,
               prove: bool) -> tuple[Counter[str], Counter[tuple[str, str]], int]:
    """Run the cases; return (cases per campaign, defects per (campaign, kind), proven)."""
    tried: Counter[str] = Counter()
    defects: Counter[tuple[str, str]] = Counter()
    proven = 0

    def items() -> Iterator[tuple[object, list[str], Path, Path]]:
        for i, case in enumerate(cases):
            case.before = _tree(case.folder)
            case.out = OUT / "outcomes" / str(i)
            yield case, case.args, OUT, case.out

    start = time.monotonic()
    for n, (key, got) in enumerate(runner.run_many(items(), jobs, timeout), 1):
        case = key
        assert isinstance(case, Case)
        tried[case.campaign] += 1
        found = _defects(case, got)
        shutil.rmtree(case.out, ignore_errors=True)
        for d in found:
            defects[(case.campaign, d.split(" ")[0])] += 1
        if found:
            print(f"DEFECT {case.campaign} {case.name}: {found}  ({case.folder})", flush=True)
        elif case.campaign == "mutated":
            shutil.rmtree(case.folder, ignore_errors=True)
        if prove and case.prove is not None and case.marker is not None:
            subprocess.run([sys.executable, "-c", "import sys, torch\ntry:\n    torch.load("
                            "sys.argv[1], weights_only=False)\nexcept Exception:\n    pass\n",
                            str(case.prove)], capture_output=True, timeout=timeout, check=False)
            proven += case.marker.exists()
        if n % 500 == 0:
            print(f"  {n:,} cases, {time.monotonic() - start:.0f} s", flush=True)
    return tried, defects, proven


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true",
                        help="one mutation per format and kind, scaled-down sizes; no write")
    parser.add_argument("--mutations", type=int, default=None,
                        help=f"mutations per format and kind (full: {FULL_MUTATIONS})")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 2)
    parser.add_argument("--timeout", type=int, default=60)
    parser.add_argument("--prove", action="store_true",
                        help="also show each hostile payload runs under torch.load")
    parser.add_argument("--no-write", action="store_true")
    ns = parser.parse_args(argv)
    mutations = ns.mutations if ns.mutations is not None else (
        1 if ns.quick else FULL_MUTATIONS)
    if OUT.exists():
        shutil.rmtree(OUT)
    OUT.mkdir(parents=True)
    began = time.monotonic()
    mutation.tracker_runs()
    runner.preload()

    def cases() -> Iterator[Case]:
        yield from pickle_cases()
        yield from mutated_cases(mutations)

    tried, defects, proven = run_forked(cases(), ns.jobs, ns.timeout, ns.prove)
    sizes = run_pathological(ns.quick)
    took = time.monotonic() - began
    size_defects = sum(len(r["defects"]) for r in sizes)  # type: ignore[arg-type, misc]
    bad = sum(defects.values()) + size_defects
    mode = "--quick" if ns.quick else (f"--mutations {mutations}" if ns.mutations else "")
    lines = [
        f"`python bench/robustness/campaign.py{' ' + mode if mode else ''}"
        f"{' --prove' if ns.prove else ''}` — {sum(tried.values()) + len(sizes):,} runs of "
        f"autopsy in {took / 60:.0f} min on {ns.jobs} cores (timeout {ns.timeout} s).",
        "",
        "| campaign | cases | defects |",
        "|---|---|---|",
        f"| hostile pickles ({len(hostile.PAYLOADS)} payloads x {len(hostile.PLACEMENTS)} "
        f"placements) | {tried['pickle']:,} | "
        f"{sum(n for (c, _), n in defects.items() if c == 'pickle')} |",
        f"| mutated files ({len(mutation.MUTATED)} formats x {len(mutation.MUTATIONS)} "
        f"mutations x {mutations}) | {tried['mutated']:,} | "
        f"{sum(n for (c, _), n in defects.items() if c == 'mutated')} |",
        f"| pathological sizes ({len(pathological(ns.quick))} classes, each command in a "
        f"fresh interpreter) | {len(sizes)} | {size_defects} |",
        "",
        "| pathological input | command | time | peak memory (PSS of the tree) | bound |",
        "|---|---|---|---|---|",
        *(f"| {r['class']} | `autopsy {r['command']}` | {r['wall_s']:.1f} s | "
          f"{r['peak_mb']:.0f} MB | {r['bound']} |" for r in sizes),
        "",
    ]
    if ns.prove:
        lines.append(f"Payloads proven live: {proven} of {tried['pickle']} run code under "
                     "`torch.load(weights_only=False)` in a child process.")
    if bad:
        lines.append("Defects by kind: " + ", ".join(
            f"{c}/{d}: {n}" for (c, d), n in defects.items()))
    else:
        lines.append("No case ran a payload, printed a traceback, ran past the timeout, took "
                     f"over {MAX_TREE_MB:.0f} MB, wrote into its run folder, exited outside "
                     "0-3, or called a hostile checkpoint an exact resume.")
    body = "\n".join(lines)
    print(body)
    if not ns.quick and not ns.no_write:
        update_section(DOC, "## Campaign", body, intro=INTRO)
        print(f"wrote {DOC.relative_to(ROOT)}")
    return 1 if bad else 0


if __name__ == "__main__":
    raise SystemExit(main())
