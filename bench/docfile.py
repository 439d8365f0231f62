"""Write a benchmark's figures into its own section of ``docs/performance.md``."""

from __future__ import annotations

import re
from pathlib import Path

DOC = Path(__file__).resolve().parent.parent / "docs" / "performance.md"
INTRO = "# Performance\n\nMeasured by the scripts in `bench/`.\n"


def update_section(doc: Path, heading: str, body: str, intro: str = INTRO) -> None:
    """Replace (or append) the section ``heading`` of ``doc`` with ``body``.

    A missing ``doc`` starts with ``intro``.
    """
    text = doc.read_text(encoding="utf-8") if doc.exists() else intro
    section = f"{heading}\n\n{body.strip()}\n"
    pattern = re.compile(rf"^{re.escape(heading)}\n.*?(?=^## |\Z)", re.S | re.M)
    if pattern.search(text):
        text = pattern.sub(lambda _: section + "\n", text).rstrip() + "\n"
    else:
        text = text.rstrip() + "\n\n" + section
    doc.parent.mkdir(parents=True, exist_ok=True)
    doc.write_text(text, encoding="utf-8")
