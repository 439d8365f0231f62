"""Thresholds: declared once per family with why they have their value, listed by
``autopsy rules --thresholds``, named in the docs only as they exist in code, overridable."""

from __future__ import annotations

import dataclasses
import importlib
import json
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from repo_paths import REPO
from runs import synthetic_run

from autopsy.cli import cli
from autopsy.rules.catalogue import codes_text, explain_text, threshold_rows
from autopsy.rules.engine import run_rules
from autopsy.rules.registry import RuleSpec, Threshold, load_rules
from autopsy.rules.settings import Settings, _matches, load_settings

RULES = load_rules()
PAIRS = sorted((code, name) for code, spec in RULES.items() for name in spec.thresholds)
WITH_THRESHOLDS = sorted(code for code, spec in RULES.items() if spec.thresholds)


def _invoke(*args: str) -> str:
    result = CliRunner().invoke(cli, list(args))
    assert result.exit_code == 0, result.output
    return result.output


# ------------------------------------------------------------------ declarations


def test_there_are_thresholds() -> None:
    assert len(PAIRS) > 100 and len(WITH_THRESHOLDS) > 30


@pytest.mark.parametrize("code", WITH_THRESHOLDS)
def test_every_threshold_of_every_rule_has_a_why(code: str) -> None:
    spec = RULES[code]
    for name in spec.thresholds:
        why = spec.threshold_why(name)
        assert len(why.split()) >= 8, f"{code}.{name}: no why (or a few words only): {why!r}"


def _declarations(module_name: str) -> set[tuple[str, str, str]]:
    """(name, repr(default), why) of every :class:`Threshold` a thresholds module declares."""
    module = importlib.import_module(module_name)
    out = set()
    for value in vars(module).values():
        if isinstance(value, dict):
            for name, decl in value.items():
                if isinstance(decl, Threshold):
                    out.add((name, repr(decl.default), decl.why))
    return out


@pytest.mark.parametrize("code", WITH_THRESHOLDS)
def test_a_rules_thresholds_are_declared_in_its_familys_thresholds_module(code: str) -> None:
    spec = RULES[code]
    package = spec.module.rsplit(".", 1)[0]
    declared = _declarations(f"{package}.thresholds") | _declarations("autopsy.rules.thresholds")
    for name, default in spec.thresholds.items():
        assert (name, repr(default), spec.threshold_why(name)) in declared, (
            f"{code}.{name} is not declared in {package}.thresholds (nor autopsy.rules.thresholds)")


def test_a_bare_default_has_no_why_and_an_empty_why_is_refused() -> None:
    spec = dataclasses.replace(RULES["HLT001"], thresholds={"x": 1}, threshold_docs={})
    assert spec.threshold_why("x") == ""
    with pytest.raises(KeyError):
        spec.threshold_why("nope")
    with pytest.raises(Exception, match="no why"):
        Threshold(1, "  ")


# ------------------------------------------------------------------ autopsy rules --thresholds


def test_rules_thresholds_json_lists_every_threshold_with_the_registry_default() -> None:
    rows = json.loads(_invoke("rules", "--thresholds", "--format", "json"))
    listed: dict[tuple[str, str], dict[str, Any]] = {}
    for row in rows:
        assert set(row) == {"name", "default", "rules", "why"}
        for code in row["rules"]:
            assert (code, row["name"]) not in listed, f"{code}.{row['name']} listed twice"
            listed[(code, row["name"])] = row
    assert sorted(listed) == PAIRS
    for (code, name), row in listed.items():
        default = RULES[code].thresholds[name]
        assert row["default"] == default and type(row["default"]) is type(default), (code, name)
        assert row["why"] == RULES[code].threshold_why(name)


@pytest.mark.parametrize("fmt", ["text", "markdown"])
def test_rules_thresholds_text_and_markdown_name_every_threshold(fmt: str) -> None:
    out = _invoke("rules", "--thresholds", "--format", fmt)
    for row in threshold_rows(RULES):
        head = f"`{row.name}` | `{row.default!r}`" if fmt == "markdown" else \
            f"{row.name} = {row.default!r}"
        assert head in out, head
    assert "HLT001" in out and "NAN001" in out


def test_shared_declarations_are_one_row() -> None:
    rows = [r for r in threshold_rows(RULES) if r.name == "spike_ratio"]
    assert len(rows) == 1
    # every NaN rule that classifies the NaN event (NAN007 reads no event: a loss of 0 with
    # no finite grad norm from the start; NAN008 reads a capture bundle, not the curve)
    assert set(rows[0].codes) == {c for c in RULES if c.startswith("NAN")} - {"NAN007",
                                                                               "NAN008"}
    confidences = [r for r in threshold_rows(RULES) if r.name == "confidence"]
    assert len(confidences) > 1  # the same name declared by several rules, each its own why
    assert codes_text(("CFG003", "NAN001", "NAN002", "NAN003", "NAN005", "NAN006")) == \
        "CFG003, NAN001-NAN003, NAN005, NAN006"


def test_explain_shows_the_why_beside_each_threshold() -> None:
    text = _invoke("explain", "FLAT004")
    flat = " ".join(text.split())
    for name in RULES["FLAT004"].thresholds:
        assert f"{name} = " in text
        assert " ".join(RULES["FLAT004"].threshold_why(name).split()) in flat, name
    assert explain_text(RULES["HLT001"]).count("      ") >= 3


# ------------------------------------------------------------------ the docs name real thresholds

#: Placeholders the docs use for a code or a name (``--set CODE.name=VALUE``).
PLACEHOLDERS = {"CODE", "NAME", "name"}
_BACKTICKS = re.compile(r"`+([^`]+?)`+")
_CODE_NAME = re.compile(r"(?<![\w.])([A-Za-z][A-Za-z_]*\d{0,3})\.([a-z][a-z0-9_]*)\b")
_TOML_TABLE = re.compile(r"^\[tool\.autopsy\.rules\.([^\]]+)\]\s*$")
_TOML_KEY = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)\s*=")


def _group(selector: str, registry: Mapping[str, RuleSpec]) -> list[RuleSpec]:
    """The rules ``selector`` (a code, a code prefix, a family) sets a threshold on."""
    spec = registry.get(selector.upper())
    if spec is not None:
        return [spec]
    return [s for s in registry.values() if _matches(s, selector)]


def _known(selector: str, name: str, registry: Mapping[str, RuleSpec]) -> bool:
    """Whether ``--set selector.name=...`` names a threshold that exists."""
    return any(name in s.thresholds for s in _group(selector, registry))


def _is_code_like(word: str) -> bool:
    return bool(re.fullmatch(r"[A-Z]{2,5}\d{3}|[A-Z]{2,5}", word))


def unknown_threshold_names(text: str, registry: Mapping[str, RuleSpec]) -> list[str]:
    """Threshold names ``text`` (Markdown) uses that do not exist in code.

    Looked at: ``CODE.name`` inside backticks (``--set NAN.spike_ratio=20`` too: a code, a
    code prefix or a family, as ``--set`` takes it); the rows of a table whose header has a
    ``threshold`` column (with its ``rules`` column when it has one); the keys of
    ``[tool.autopsy.rules.CODE]`` tables in fenced blocks.
    """
    bad: list[str] = []
    for span in _BACKTICKS.findall(text):
        for sel, name in _CODE_NAME.findall(span):
            if sel in PLACEHOLDERS or name in PLACEHOLDERS:
                continue
            if not (_is_code_like(sel) or any(s.family.value == sel for s in registry.values())):
                continue  # a file name or a dotted Python name, not CODE.name
            if not _known(sel, name, registry):
                bad.append(f"{sel}.{name}")
    header: list[str] | None = None
    table: str | None = None
    for raw in text.splitlines():
        line = raw.strip()
        if line.startswith("|"):
            cells = [c.strip() for c in line.strip("|").split("|")]
            if header is None:
                header = [c.lower() for c in cells]
            elif "threshold" in header and not set(line) <= set("|-: "):
                name = cells[header.index("threshold")].strip("`")
                codes = (re.findall(r"[A-Z]{2,5}\d{3}", cells[header.index("rules")])
                         if "rules" in header else [])
                if not codes and not any(name in s.thresholds for s in registry.values()):
                    bad.append(name)
                bad += [f"{c}.{name}" for c in codes if not _known(c, name, registry)]
        else:
            header = None
        if m := _TOML_TABLE.match(line):
            table = m.group(1).strip('"')
        elif line.startswith("[") or line.startswith("```"):
            table = None
        elif table is not None and (m := _TOML_KEY.match(line)):
            if not _known(table, m.group(1), registry):
                bad.append(f"{table}.{m.group(1)}")
    return bad


DOCS = [*sorted((REPO / "docs").glob("*.md")), REPO / "README.md"]


@pytest.mark.parametrize("path", DOCS, ids=lambda p: p.name)
def test_every_threshold_named_in_the_docs_exists_in_code(path: Path) -> None:
    assert unknown_threshold_names(path.read_text(), RULES) == []


def test_the_docs_have_a_thresholds_table_naming_every_threshold() -> None:
    text = (REPO / "docs" / "rules.md").read_text()
    assert "| threshold | default | rules | why |" in text
    for code, name in PAIRS:
        assert re.search(rf"^\| `{name}` \| [^|]+ \| [^|]*\b{code}\b", text, re.M), (code, name)


def test_a_made_up_threshold_name_in_the_docs_is_caught() -> None:
    good = ("Use `--set NAN.spike_ratio=20`, `HLT001.min_points` or `nan_inf.spike_ratio`; "
            "see `docs/rules.md` and `autopsy.rules.settings`; `--set CODE.name=VALUE`.\n\n"
            "| threshold | default | rules | why |\n|---|---|---|---|\n"
            "| `min_drop` | `0.05` | HLT001 | because |\n\n"
            "```toml\n[tool.autopsy.rules.HLT001]\nmin_points = 20\n```\n")
    assert unknown_threshold_names(good, RULES) == []
    bad = ("Tune `HLT001.min_pointz` and `--set NAN.spike_ration=3`.\n\n"
           "| threshold | default | rules | why |\n|---|---|---|---|\n"
           "| `made_up_limit` | `1` | HLT001 | invented |\n"
           "| `orphan_name` | `1` | | no rule |\n\n"
           "```toml\n[tool.autopsy.rules.NAN001]\nspike_rati = 2\n```\n")
    assert sorted(unknown_threshold_names(bad, RULES)) == sorted([
        "HLT001.min_pointz", "NAN.spike_ration", "HLT001.made_up_limit", "orphan_name",
        "NAN001.spike_rati"])


# ------------------------------------------------------------------ overrides still work


def _other(value: Any) -> Any:
    if isinstance(value, bool):
        return not value
    if isinstance(value, int):
        return value + 7
    if isinstance(value, float):
        return value * 2 + 0.5
    return value + "x"


@pytest.mark.parametrize("code", WITH_THRESHOLDS)
def test_set_changes_what_the_rule_sees(code: str) -> None:
    spec = RULES[code]
    name = next(reversed(list(spec.thresholds)))
    default = spec.thresholds[name]
    new = _other(default)
    raw = str(new).lower() if isinstance(new, bool) else str(new)
    settings = load_settings(RULES, sets=[f"{code}.{name}={raw}"], search_from=Path("/"))
    seen: list[Mapping[str, Any]] = []

    def spy(run: Any, ctx: Any) -> None:
        seen.append(dict(ctx.thresholds))

    probe = dataclasses.replace(spec, func=spy, requires=())
    run_rules(synthetic_run({"loss": [3.0, 2.0, 1.0]}), settings, {code: probe})
    assert seen, "the rule did not run"
    assert seen[0][name] == new and type(seen[0][name]) is type(default)
    assert {k: v for k, v in seen[0].items() if k != name} == {
        k: v for k, v in spec.thresholds.items() if k != name}
    untouched: list[Mapping[str, Any]] = []
    probe = dataclasses.replace(spec, func=lambda run, ctx: untouched.append(dict(ctx.thresholds)),
                                requires=())
    run_rules(synthetic_run({"loss": [3.0, 2.0, 1.0]}), Settings(), {code: probe})
    assert untouched == [dict(spec.thresholds)]


def test_a_family_override_reaches_every_rule_sharing_the_declaration() -> None:
    settings = load_settings(RULES, sets=["not_decreasing.chance_tol=0.07"],
                             search_from=Path("/"))
    flat = [c for c, s in RULES.items() if "chance_tol" in s.thresholds]
    assert len(flat) == 5
    assert all(settings.thresholds(RULES[c])["chance_tol"] == 0.07 for c in flat)


@pytest.mark.parametrize("command", ["analyze", "ranks", "ckpt", "rules", "explain",
                                     "timeline", "formats"])
def test_every_threshold_named_in_a_help_text_exists_in_code(command: str) -> None:
    from click.testing import CliRunner

    from autopsy.cli import cli

    text = CliRunner().invoke(cli, [command, "--help"]).output
    text += CliRunner().invoke(cli, ["--help"]).output
    assert text.strip()
    assert _unknown_in_plain_text(text) == []


def _unknown_in_plain_text(text: str) -> list[str]:
    """``--set SELECTOR.name=`` references (no backticks: a help text) whose threshold does
    not exist; ``CODE.name`` is the placeholder the help itself uses."""
    bad = []
    for selector, name in re.findall(r"--set\s+([A-Za-z_]+\d{0,3})\.([a-z_0-9]+)=", text):
        if (selector, name) != ("CODE", "name") and not _known(selector, name, RULES):
            bad.append(f"{selector}.{name}")
    return bad


def test_a_made_up_threshold_name_in_a_help_text_is_caught() -> None:
    assert _unknown_in_plain_text("e.g. --set NAN001.spike_ratio=20; same as --set "
                                  "SLOW005.gpu=NAME") == []
    assert _unknown_in_plain_text("e.g. --set NAN001.spike_ratiox=20") == ["NAN001.spike_ratiox"]
