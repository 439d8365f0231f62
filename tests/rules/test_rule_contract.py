"""Every rule keeps the house contract: code, docs sections, tests, catalogue."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from autopsy.rules.catalogue import DOC_PATH, markdown
from autopsy.rules.registry import DOC_SECTIONS, load_rules

RULES = load_rules()
TESTS = Path(__file__).resolve().parent


def test_there_are_rules() -> None:
    assert RULES


@pytest.mark.parametrize("code", sorted(RULES))
def test_rule_docstring_has_every_section(code: str) -> None:
    spec = RULES[code]
    assert spec.title and len(spec.title) < 100
    sections = spec.sections()
    for heading in DOC_SECTIONS:
        assert sections.get(heading), f"{code} lacks a '{heading}:' section"


@pytest.mark.parametrize("code", sorted(RULES))
def test_rule_declaration_is_well_formed(code: str) -> None:
    spec = RULES[code]
    assert re.fullmatch(r"[A-Z]{2,5}\d{3}", spec.code)
    for cause in spec.causes:
        assert re.fullmatch(r"[a-z][a-z0-9_]*", cause), cause
    module_file = spec.module.rsplit(".", 1)[-1]
    assert module_file.startswith(code.lower()), f"{spec.module} should be named {code.lower()}_*"


@pytest.mark.parametrize("code", sorted(RULES))
def test_rule_has_a_failing_and_a_near_miss_test(code: str) -> None:
    path = TESTS / f"test_{code.lower()}.py"
    assert path.exists(), f"{code} needs tests in {path.name}"
    names = [n.name for n in ast.walk(ast.parse(path.read_text()))
             if isinstance(n, ast.FunctionDef) and n.name.startswith("test_")]
    assert any("fail" in n or "fires" in n for n in names), f"{path.name}: no failing case"
    assert any("near_miss" in n or "pass" in n for n in names), f"{path.name}: no near miss"


def test_docs_rules_md_is_not_stale() -> None:
    assert DOC_PATH.read_text() == markdown(RULES), (
        "docs/rules.md is stale: run python -m autopsy.rules.catalogue --write")


def test_the_shipped_catalogue_is_the_registrys() -> None:
    from autopsy.rules.catalogue import LISTING_PATH, listing_json

    assert LISTING_PATH.read_text() == listing_json(RULES), (
        "autopsy/rules/catalogue.json is stale: run python -m autopsy.rules.catalogue --write")


def test_rules_listing_imports_neither_the_rules_nor_pandas() -> None:
    import subprocess
    import sys

    code = ("import sys, runpy\n"
            "sys.argv = ['autopsy', 'rules']\n"
            "try:\n"
            "    runpy.run_module('autopsy', run_name='__main__')\n"
            "except SystemExit as exc:\n"
            "    assert not exc.code, exc.code\n"
            "print('HEAVY', [m for m in ('pandas', 'numpy', 'autopsy.rules.registry')\n"
            "                if m in sys.modules], file=sys.stderr)\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=60, check=False)
    assert proc.returncode == 0, proc.stderr
    assert "HEAVY []" in proc.stderr
    assert "NAN001" in proc.stdout and "HLT001" in proc.stdout


def test_checkpoint_checks_are_in_the_catalogue_with_documented_causes() -> None:
    import json
    import subprocess
    import sys

    from corpus_labels import guide_causes

    from autopsy.ckpt.checks import CHECKS

    out = subprocess.run([sys.executable, "-m", "autopsy", "rules", "--format", "json"],
                         capture_output=True, text=True, timeout=60, check=True).stdout
    rows = json.loads(out)
    checks = {r["code"]: r for r in rows if r["kind"] == "check"}
    rules = {r["code"] for r in rows if r["kind"] == "rule"}
    assert set(checks) == set(CHECKS) and rules == set(RULES)
    resume_causes = guide_causes()["resume"]
    for code, row in checks.items():
        assert row["family"] == "resume" and row["causes"] == [CHECKS[code].cause]
        assert CHECKS[code].cause in resume_causes, (code, CHECKS[code].cause)
    text = DOC_PATH.read_text()
    assert all(f"| {code} | `{CHECKS[code].name}` |" in text for code in CHECKS)
