"""The rule catalogue: ``autopsy rules``, ``autopsy explain CODE`` and ``docs/rules.md``.

``docs/rules.md`` is generated from the rules' docstrings and declarations;
regenerate it with ``python -m autopsy.rules.catalogue --write`` (a test fails
when it is stale). :func:`threshold_rows` is the thresholds table
(``autopsy rules --thresholds`` and the last section of ``docs/rules.md``): every
threshold with its default, the rules that declare it and why it has that value.
"""

from __future__ import annotations

import json
import sys
import textwrap
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from autopsy.rules.registry import DOC_SECTIONS, RuleSpec, ThresholdValue, load_rules

DOC_PATH = Path(__file__).resolve().parents[2] / "docs" / "rules.md"


def _requires(spec: RuleSpec) -> str:
    return ", ".join(r.replace("|", " or ") for r in spec.requires) or "nothing"


@dataclass(frozen=True)
class ThresholdRow:
    """One threshold declaration and the rules that declare it.

    Attributes:
        name: the threshold's name (``--set CODE.name=VALUE``).
        default: its default value.
        codes: the rules that declare it with this default and why, in code order.
        why: why it has that value.
    """

    name: str
    default: ThresholdValue
    codes: tuple[str, ...]
    why: str

    def as_dict(self) -> dict[str, Any]:
        """The row as JSON-able data (``autopsy rules --thresholds --format json``)."""
        return {"name": self.name, "default": self.default, "rules": list(self.codes),
                "why": self.why}


def threshold_rows(registry: Mapping[str, RuleSpec]) -> list[ThresholdRow]:
    """Every threshold of every rule, one row per declaration: rules that share a
    declaration (same name, default and why: a family's shared classification) share a
    row; the same name declared otherwise by another rule is another row. Rows come in
    the order of their first rule's code, then of its declaration."""
    rows: dict[tuple[str, str, str, str], list[str]] = {}
    values: dict[tuple[str, str, str, str], ThresholdValue] = {}
    for spec in registry.values():
        for name, default in spec.thresholds.items():
            why = spec.threshold_docs.get(name, "")
            key = (name, type(default).__name__, repr(default), why)
            rows.setdefault(key, []).append(spec.code)
            values[key] = default
    return [ThresholdRow(name=k[0], default=values[k], codes=tuple(codes), why=k[3])
            for k, codes in rows.items()]


def codes_text(codes: tuple[str, ...]) -> str:
    """``NAN001-NAN006`` for a run of consecutive codes of one prefix, else a list."""
    groups: list[list[str]] = []
    for code in codes:
        prev = groups[-1][-1] if groups else None
        if prev is not None and prev[:-3] == code[:-3] and int(code[-3:]) == int(prev[-3:]) + 1:
            groups[-1].append(code)
        else:
            groups.append([code])
    return ", ".join(", ".join(g) if len(g) < 3 else f"{g[0]}-{g[-1]}" for g in groups)


def thresholds_text(rows: list[ThresholdRow], width: int = 88) -> str:
    """The thresholds table as plain text: ``name = default  (rules)`` and the why below."""
    out = ["Thresholds (override with --set CODE.name=VALUE, a prefix or family for all its "
           "rules,", "or [tool.autopsy.rules.CODE] in pyproject.toml):", ""]
    for r in rows:
        out.append(f"{r.name} = {r.default!r}  ({codes_text(r.codes)})")
        out.append(textwrap.fill(r.why or "-", width=width, initial_indent="    ",
                                 subsequent_indent="    ", break_on_hyphens=False))
    return "\n".join(out) + "\n"


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def thresholds_markdown(rows: list[ThresholdRow]) -> str:
    """The thresholds table as Markdown (also the last section of ``docs/rules.md``)."""
    out = ["| threshold | default | rules | why |", "|---|---|---|---|"]
    for r in rows:
        out.append(f"| `{r.name}` | `{r.default!r}` | {', '.join(r.codes)} | {_cell(r.why)} |")
    return "\n".join(out) + "\n"


def explain_text(spec: RuleSpec) -> str:
    """A rule's documentation as plain text, for ``autopsy explain``."""
    lines = [f"{spec.code} {spec.name}: {spec.title}", "",
             f"family: {spec.family.value}",
             f"causes: {', '.join(spec.causes) or '-'}",
             f"requires: {_requires(spec)}"]
    if spec.thresholds:
        lines.append("thresholds (override with --set "
                     f"{spec.code}.NAME=VALUE or [tool.autopsy.rules.{spec.code}]):")
        for k, v in spec.thresholds.items():
            lines.append(f"  {k} = {v!r}")
            why = spec.threshold_docs.get(k, "")
            if why:
                lines += textwrap.wrap(why, width=88, initial_indent="      ",
                                       subsequent_indent="      ", break_on_hyphens=False)
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
            out.append("- thresholds ([why each](#thresholds)): " + ", ".join(
                f"`{k}` = `{v!r}`" for k, v in spec.thresholds.items()))
        sections = spec.sections()
        for heading in DOC_SECTIONS:
            if heading in sections:
                out += ["", f"### {heading}", "", sections[heading]]
    out += ["", "## Thresholds", "",
            "Every threshold of every rule, with its default and why it has that value "
            "(`autopsy rules --thresholds` prints this table; `autopsy explain CODE` shows one "
            "rule's). Each family declares its thresholds in one module, "
            "`autopsy/rules/<family>/thresholds.py`, and the LR ranges several families use in "
            "`autopsy/rules/thresholds.py`. Rules that judge one event together share a "
            "declaration and a row: override it on all of them with a prefix or a family "
            "(`--set NAN.spike_ratio=4`, `[tool.autopsy.rules.nan_inf]`), on one rule with "
            "`--set CODE.name=VALUE` or `[tool.autopsy.rules.CODE]`.",
            "", thresholds_markdown(threshold_rows(registry)).rstrip("\n")]
    out += ["", "## Checkpoint checks", "",
            "The checks of `autopsy ckpt` (and of the checkpoints `autopsy analyze` audits), "
            "in the same catalogue: family `resume`, each with the cause it names. `autopsy "
            "explain CKPTnnn` prints one; `docs/ckpt.md` says what each component's status "
            "means.", "",
            "| code | name | family | cause | title |", "|---|---|---|---|---|"]
    for check in _checks():
        out.append(f"| {check['code']} | `{check['name']}` | resume | {check['causes'][0]} | "
                   f"{check['title']} |")
    return "\n".join(out) + "\n"


def _checks() -> list[dict[str, object]]:
    """The checkpoint checks (:data:`autopsy.ckpt.checks.CHECKS`) as catalogue rows."""
    from autopsy.ckpt.checks import CHECKS

    return [{"kind": "check", "code": c.code, "name": c.name, "family": "resume",
             "causes": [c.cause], "requires": ["checkpoint"], "thresholds": {},
             "title": c.title} for c in sorted(CHECKS.values(), key=lambda c: c.code)]


#: The catalogue's list as data, shipped with the package: ``autopsy rules`` prints it
#: without importing the rules (and pandas with them). Written by ``--write``; a test
#: checks it against the registry.
LISTING_PATH = Path(__file__).resolve().parent / "catalogue.json"


def listing(registry: Mapping[str, RuleSpec]) -> list[dict[str, object]]:
    """One object per rule and per checkpoint check: ``kind`` (``rule`` or ``check``),
    ``code``, ``name``, ``family``, ``causes``, ``requires``, ``thresholds`` (name ->
    default) and ``title`` (the ``autopsy rules --format json`` rows)."""
    return [*({"kind": "rule", "code": s.code, "name": s.name, "family": s.family.value,
               "causes": list(s.causes), "requires": list(s.requires),
               "thresholds": dict(s.thresholds), "title": s.title}
              for s in registry.values()), *_checks()]


def listing_json(registry: Mapping[str, RuleSpec]) -> str:
    """:func:`listing` as the text of :data:`LISTING_PATH`."""
    return json.dumps(listing(registry), indent=2) + "\n"


def main(argv: list[str] | None = None) -> int:
    """``python -m autopsy.rules.catalogue [--write | --check]``."""
    args = sys.argv[1:] if argv is None else argv
    registry = load_rules()
    text = markdown(registry)
    if "--write" in args:
        DOC_PATH.write_text(text)
        LISTING_PATH.write_text(listing_json(registry))
        return 0
    if "--check" in args:
        current = DOC_PATH.read_text() if DOC_PATH.exists() else ""
        shipped = LISTING_PATH.read_text() if LISTING_PATH.exists() else ""
        if current != text or shipped != listing_json(registry):
            print(f"{DOC_PATH} or {LISTING_PATH.name} is stale: run python -m "
                  "autopsy.rules.catalogue --write", file=sys.stderr)
            return 1
        return 0
    sys.stdout.write(text)
    return 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
