"""The labelling guide (``docs/labels.md``) as data: families, causes per family, format slugs.

The guide is the one catalogue of what a label may say; the corpus tests read it from there
instead of keeping a second copy.
"""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

from repo_paths import REPO

GUIDE = REPO / "docs" / "labels.md"
PUBLIC = REPO / "sample_runs" / "public"
LABEL_KEYS = ("family", "cause", "first_bad_step", "step_tolerance", "culprit_rank",
              "confidence", "evidence", "format", "command", "source", "license")


def _section(text: str, title: str) -> str:
    start = text.index(f"## {title}\n")
    end = text.find("\n## ", start + 1)
    return text[start:end if end >= 0 else len(text)]


def guide_causes() -> dict[str, set[str]]:
    """family -> the causes the guide allows for it."""
    text = _section(GUIDE.read_text(encoding="utf-8"), "Causes")
    out: dict[str, set[str]] = {}
    for item in re.split(r"\n- ", text)[1:]:
        m = re.match(r"`(\w+)`:", item)
        if m:
            body = re.sub(r"\([^)]*\)", "", item[m.end():])  # explanations hold examples
            out[m.group(1)] = set(re.findall(r"`(\w+)`", body)) - {"null"}
    return out


def guide_formats() -> set[str]:
    """The format slugs of the guide's table."""
    text = _section(GUIDE.read_text(encoding="utf-8"), "Formats")
    return set(re.findall(r"^\| `(\w+)` \|", text, flags=re.MULTILINE))


def guide_families() -> set[str]:
    """The families of the guide's table."""
    text = _section(GUIDE.read_text(encoding="utf-8"), "Families")
    return set(re.findall(r"^\| `(\w+)` \|", text, flags=re.MULTILINE))


def split_of(name: str) -> str:
    """``test`` when the first hex digit of sha256(name) is even, else ``dev``."""
    return "test" if int(hashlib.sha256(name.encode("utf-8")).hexdigest()[0], 16) % 2 == 0 \
        else "dev"


def case_dirs() -> list[Path]:
    """Every case folder of the public corpus."""
    return sorted(p for p in PUBLIC.iterdir() if p.is_dir() and not p.name.startswith("."))
