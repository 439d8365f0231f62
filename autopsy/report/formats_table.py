"""Render the format registry (``autopsy formats``) as text, JSON or Markdown."""

from __future__ import annotations

import json

from autopsy.readers.registry import formats


def render_formats(fmt: str = "text") -> str:
    """Every registered format, in sniffing order, as ``fmt`` (text, json or markdown)."""
    rows = formats()
    if fmt == "json":
        return json.dumps([f.as_dict(reader) for reader, f in rows], indent=2) + "\n"
    if fmt == "markdown":
        lines = ["| format | what | reads | example | reader |", "|---|---|---|---|---|"]
        lines += [f"| `{f.slug}` | {f.title} | {', '.join(f.reads)} | `{f.example}` | "
                  f"`{reader}` |" for reader, f in rows]
        return "\n".join(lines) + "\n"
    width = max(len(f.slug) for _, f in rows)
    lines = [f"{f.slug:<{width}}  {f.title}\n{'':<{width}}  reads {', '.join(f.reads)}; "
             f"e.g. {f.example}" for _, f in rows]
    return "\n".join(lines) + "\n"
