"""The text-log patterns never put two ``\\s*`` around an optional separator.

``epoch\\s*[:=#]?\\s*(\\d+)`` lets both ``\\s*`` share a run of spaces: on a line of
``epoch`` and 64,000 spaces (lines are kept up to 64 KiB) the engine tries every split,
quadratic (56 s a line) or worse. The same language written ``epoch\\s*(?:[:=#]\\s*)?(\\d+)``
(each optional separator takes the spaces after it) is linear. This checks the shape of
every pattern of the modules that parse log lines, so the slow form cannot come back.
"""

from __future__ import annotations

import re

import pytest

from autopsy.readers.ranklogs import adapters, metrics, structured

#: ``\s*``, then an optional one-character separator or bracket, then ``\s*`` again.
_SHARED_SPACES = re.compile(r"\\s\*(?:\[[^\]]*\]|\\\[|\\\]|[:=#,/])\?\\s\*")


def _patterns() -> list[tuple[str, str]]:
    out = []
    for mod in (adapters, metrics, structured):
        for name, value in vars(mod).items():
            values = value if isinstance(value, tuple) else (value,)
            for i, v in enumerate(values):
                if isinstance(v, re.Pattern) and isinstance(v.pattern, str):
                    out.append((f"{mod.__name__}.{name}[{i}]", v.pattern))
    return out


PATTERNS = _patterns()


def test_there_are_patterns_to_check() -> None:
    assert len(PATTERNS) > 40


@pytest.mark.parametrize(("name", "pattern"), PATTERNS, ids=[n for n, _ in PATTERNS])
def test_no_two_space_runs_around_an_optional_separator(name: str, pattern: str) -> None:
    assert _SHARED_SPACES.search(pattern) is None, pattern


def test_the_check_catches_the_slow_form() -> None:
    assert _SHARED_SPACES.search(r"(?i)\bepoch\s*[:=#]?\s*(\d+)")
    assert _SHARED_SPACES.search(r"iter\s*\[?\s*(\d+)")
    assert not _SHARED_SPACES.search(r"(?i)\bepoch\s*(?:[:=#]\s*)?(\d+)")
