#!/usr/bin/env python
"""Breadth of the public corpus (``sample_runs/public``): cases per family, format, split
and confidence, distinct sources, size. Reads only the labels and file sizes (it never runs
autopsy), so it can be run while labels are being written.

Usage::

    python bench/corpus_stats.py [--write docs/accuracy.md]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import sys
from collections import Counter
from pathlib import Path

from docfile import update_section

REPO = Path(__file__).resolve().parent.parent
PUBLIC = REPO / "sample_runs" / "public"
FAMILIES = ("nan_inf", "diverging", "not_decreasing", "overfitting", "oom", "slow", "hang",
            "crash", "resume", "healthy")


def split_of(name: str) -> str:
    """``test`` when the first hex digit of sha256(name) is even, else ``dev``."""
    return "test" if int(hashlib.sha256(name.encode()).hexdigest()[0], 16) % 2 == 0 else "dev"


def source_key(source: str) -> str:
    """The repository or thread a label's source names (files of one commit count once)."""
    if source.startswith("https://"):
        return re.sub(r"#.*$", "", source)
    return source.split(":", 1)[0]


def stats() -> str:
    """The breadth tables (Markdown)."""
    labels = {}
    for case in sorted(p for p in PUBLIC.iterdir() if (p / "label.json").is_file()):
        labels[case.name] = json.loads((case / "label.json").read_text(encoding="utf-8"))
    size = sum(p.stat().st_size for p in PUBLIC.rglob("*") if p.is_file())
    fam = Counter(lab["family"] for lab in labels.values())
    fmt = Counter(lab["format"] for lab in labels.values())
    split = Counter(split_of(n) for n in labels)
    conf = Counter(lab["confidence"] for lab in labels.values())
    sources = {source_key(lab["source"]) for lab in labels.values()}
    threads = sum(1 for s in sources if s.startswith("https://"))
    lines = [f"{len(labels)} cases ({split['dev']} dev, {split['test']} test), "
             f"{len(sources)} distinct sources ({threads} issue threads, "
             f"{len(sources) - threads} repositories), {len(fmt)} formats, "
             f"{size / 2**20:.1f} MB; confidence: "
             + ", ".join(f"{conf[c]} {c}" for c in ("high", "medium", "low")) + ".", "",
             "| family | cases | dev | test |", "|---|---|---|---|"]
    for f in FAMILIES:
        dev = sum(1 for n, lab in labels.items() if lab["family"] == f and split_of(n) == "dev")
        lines.append(f"| `{f}` | {fam[f]} | {dev} | {fam[f] - dev} |")
    lines += ["", "| format | cases |", "|---|---|"]
    lines += [f"| `{k}` | {v} |" for k, v in sorted(fmt.items(), key=lambda kv: (-kv[1], kv[0]))]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    """Print (and optionally write) the corpus breadth."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--write", type=Path, metavar="DOC")
    ns = parser.parse_args(argv)
    text = stats()
    print(text)
    if ns.write:
        update_section(ns.write, "## The public corpus: breadth", text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
