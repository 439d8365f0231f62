"""The rule catalogue: ``autopsy rules``, ``autopsy explain CODE`` and ``docs/rules.md``.

``docs/rules.md`` is generated from the rules' docstrings and declarations;
regenerate it with ``python -m autopsy.rules.catalogue --write`` (a test fails
when it is stale).
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from pathlib import Path

from autopsy.rules.registry import DOC_SECTIONS, RuleSpec, load_rules

DOC_PATH = Path(__file__).resolve().parents[2] / "docs" / "rules.md"


def _requires(spec: RuleSpec) -> str:
    return ", ".join(r.replace("|", " or ") for r in spec.requires) or "nothing"


def explain_text(spec: RuleSpec) -> str:
    """A rule's documentation as plain text, for ``autopsy explain``."""
    lines = [f"{spec.code} {spec.name}: {spec.title}", "",
             f"family: {spec.family.value}",
             f"causes: {', '.join(spec.causes) or '-'}",
             f"requires: {_requires(spec)}"]
    if spec.thresholds:
        lines.append("thresholds (override with --set "
                     f"{spec.code}.NAME=VALUE or [tool.autopsy.rules.{spec.code}]):")
        lines += [f"  {k} = {v!r}" for k, v in spec.thresholds.items()]
    for heading, text in spec.sections().items():
        lines += ["", f"{heading}:"] + [f"  {line}" if line else "" for line in text.splitlines()]
    return "\n".join(lines) + "\n"


def markdown(registry: Mapping[str, RuleSpec]) -> str:
    """The whole catalogue as Markdown (the content of ``docs/rules.md``)."""
    out = [
        "# Rule catalogue",
        "",
        "Generated from the rules' docstrings by `python -m autopsy.rules.catalogue --write`;"
        " do not edit by hand. `autopsy explain CODE` prints one entry.",
        "",
        "| code | name | family | causes | title |",
        "|---|---|---|---|---|",
    ]
    for spec in registry.values():
        out.append(f"| [{spec.code}](#{spec.code.lower()}) | `{spec.name}` | "
                   f"{spec.family.value} | {', '.join(spec.causes) or '-'} | {spec.title} |")
    for spec in registry.values():
        out += ["", f"## {spec.code}", "", f"**{spec.name}** — {spec.title}", "",
                f"- family: `{spec.family.value}`",
                f"- causes: {', '.join(f'`{c}`' for c in spec.causes) or '-'}",
                f"- requires: {_requires(spec)}"]
        if spec.thresholds:
            out.append("- thresholds: " + ", ".join(
                f"`{k}` = `{v!r}`" for k, v in spec.thresholds.items()))
        sections = spec.sections()
        for heading in DOC_SECTIONS:
            if heading in sections:
                out += ["", f"### {heading}", "", sections[heading]]
    return "\n".join(out) + "\n"


def main(argv: list[str] | None = None) -> int:
    """``python -m autopsy.rules.catalogue [--write | --check]``."""
    args = sys.argv[1:] if argv is None else argv
    text = markdown(load_rules())
    if "--write" in args:
        DOC_PATH.write_text(text)
        return 0
    if "--check" in args:
        current = DOC_PATH.read_text() if DOC_PATH.exists() else ""
        if current != text:
            print(f"{DOC_PATH} is stale: run python -m autopsy.rules.catalogue --write",
                  file=sys.stderr)
            return 1
        return 0
    sys.stdout.write(text)
    return 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
