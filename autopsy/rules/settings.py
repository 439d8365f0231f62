"""Rule selection and threshold overrides: ``--set``, ``--select``/``--ignore``, pyproject.

In a ``pyproject.toml`` (the one given with ``--config``, else the nearest one
from the current directory upwards that has a ``[tool.autopsy]`` table)::

    [tool.autopsy]
    select = ["NAN", "diverging"]      # codes, code prefixes, families or rule names
    ignore = ["CFG004"]

    [tool.autopsy.rules.NAN001]
    spike_ratio = 20

On the command line, ``--set NAN001.spike_ratio=20`` wins over the file. A code
prefix or a family sets the threshold on every matching rule that has it
(``--set NAN.spike_ratio=20``, ``[tool.autopsy.rules.nan_inf]``): rules of one family
that classify an event together should be tuned together.
Unknown keys, codes and threshold names are errors, never silently ignored.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from autopsy.errors import UsageError
from autopsy.rules.registry import CODE_RE, RuleSpec, ThresholdValue

#: Keys allowed in ``[tool.autopsy]``.
TOP_LEVEL_KEYS = frozenset({"select", "ignore", "rules"})


@dataclass(frozen=True)
class Settings:
    """Which rules run, and with which thresholds."""

    overrides: Mapping[str, Mapping[str, ThresholdValue]] = field(default_factory=dict)
    select: tuple[str, ...] = ()
    ignore: tuple[str, ...] = ()
    source: str | None = None

    def thresholds(self, spec: RuleSpec) -> dict[str, ThresholdValue]:
        """The effective thresholds of ``spec``: defaults, then overrides."""
        merged = dict(spec.thresholds)
        merged.update(self.overrides.get(spec.code, {}))
        return merged

    def selected(self, spec: RuleSpec) -> bool:
        """Whether ``spec`` runs under ``select``/``ignore``."""
        if self.select and not any(_matches(spec, s) for s in self.select):
            return False
        return not any(_matches(spec, s) for s in self.ignore)


def _matches(spec: RuleSpec, selector: str) -> bool:
    s = selector.strip()
    return (
        spec.code == s.upper()
        or (s.isalpha() and s.isupper() and spec.code.startswith(s))
        or spec.family.value == s
        or spec.name == s
    )


def _coerce(code: str, name: str, default: ThresholdValue, raw: Any) -> ThresholdValue:
    where = f"{code}.{name}"
    if isinstance(default, bool):
        if isinstance(raw, bool):
            return raw
        text = str(raw).strip().lower()
        if text in ("true", "1", "yes", "on"):
            return True
        if text in ("false", "0", "no", "off"):
            return False
        raise UsageError(f"{where} expects true or false, got {raw!r}")
    try:
        if isinstance(default, int):
            if isinstance(raw, float) and not raw.is_integer():
                raise ValueError
            return int(raw)
        if isinstance(default, float):
            return float(raw)
    except (TypeError, ValueError):
        kind = type(default).__name__
        raise UsageError(f"{where} expects {'an' if kind == 'int' else 'a'} {kind}, "
                         f"got {raw!r}") from None
    return str(raw)


def _check_selectors(items: Iterable[str], registry: Mapping[str, RuleSpec], what: str) -> None:
    for item in items:
        if not any(_matches(spec, item) for spec in registry.values()):
            raise UsageError(f"{what}: no rule matches {item!r} (see `autopsy rules`)")


def _add_override(out: dict[str, dict[str, ThresholdValue]], registry: Mapping[str, RuleSpec],
                  code: str, name: str, raw: Any) -> None:
    """Set ``name`` on rule ``code``; a prefix (``NAN``) or family sets every rule having it."""
    spec = registry.get(code.upper())
    if spec is not None:
        if name not in spec.thresholds:
            known = ", ".join(sorted(spec.thresholds)) or "none"
            raise UsageError(f"{spec.code} has no threshold {name!r} (it has: {known})")
        out.setdefault(spec.code, {})[name] = _coerce(spec.code, name, spec.thresholds[name],
                                                      raw)
        return
    group = [s for s in registry.values() if _matches(s, code) and not CODE_RE.match(code)]
    if not group:
        raise UsageError(f"unknown rule code {code!r} (see `autopsy rules`)")
    having = [s for s in group if name in s.thresholds]
    if not having:
        raise UsageError(f"no rule matching {code!r} has a threshold {name!r}")
    for s in having:
        out.setdefault(s.code, {})[name] = _coerce(s.code, name, s.thresholds[name], raw)


def parse_set(items: Iterable[str]) -> list[tuple[str, str, str]]:
    """Split ``CODE.name=value`` items; raise :class:`UsageError` on bad syntax."""
    parsed = []
    for item in items:
        key, sep, value = item.partition("=")
        code, dot, name = key.strip().partition(".")
        if not sep or not dot or not code or not name:
            raise UsageError(f"--set expects CODE.name=value, got {item!r}")
        parsed.append((code.strip(), name.strip(), value.strip()))
    return parsed


def find_pyproject(start: Path) -> Path | None:
    """The nearest ``pyproject.toml`` from ``start`` upwards with a ``[tool.autopsy]`` table."""
    for directory in (start, *start.parents):
        candidate = directory / "pyproject.toml"
        if candidate.is_file():
            try:
                if "autopsy" in _read_toml(candidate).get("tool", {}):
                    return candidate
            except UsageError:
                return candidate  # let the caller report the broken file
    return None


def _read_toml(path: Path) -> dict[str, Any]:
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover - exercised on 3.10 only
        import tomli as tomllib
    try:
        with open(path, "rb") as fh:
            return tomllib.load(fh)
    except OSError as exc:
        raise UsageError(f"cannot read {path}: {exc.strerror}") from None
    except tomllib.TOMLDecodeError as exc:
        raise UsageError(f"{path}: invalid TOML: {exc}") from None


def load_settings(
    registry: Mapping[str, RuleSpec],
    *,
    sets: Iterable[str] = (),
    select: Iterable[str] = (),
    ignore: Iterable[str] = (),
    config: Path | None = None,
    search_from: Path | None = None,
) -> Settings:
    """Build the settings from a pyproject ``[tool.autopsy]`` table and the CLI options.

    Raises:
        UsageError: an unknown key, code, threshold, or a value of the wrong type.
    """
    overrides: dict[str, dict[str, ThresholdValue]] = {}
    file_select: list[str] = []
    file_ignore: list[str] = []
    path = config if config is not None else find_pyproject(search_from or Path.cwd())
    if config is not None and not config.is_file():
        raise UsageError(f"no such config file: {config}")
    if path is not None:
        table = _read_toml(path).get("tool", {}).get("autopsy", {})
        unknown = set(table) - TOP_LEVEL_KEYS
        if unknown:
            raise UsageError(f"{path}: unknown key(s) in [tool.autopsy]: "
                             f"{', '.join(sorted(unknown))} (allowed: select, ignore, rules)")
        for key, target in (("select", file_select), ("ignore", file_ignore)):
            value = table.get(key, [])
            if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
                raise UsageError(f"{path}: [tool.autopsy] {key} must be a list of strings")
            target.extend(value)
        rules = table.get("rules", {})
        if not isinstance(rules, dict):
            raise UsageError(f"{path}: [tool.autopsy.rules] must be a table")
        for code, values in rules.items():
            if not isinstance(values, dict):
                raise UsageError(f"{path}: [tool.autopsy.rules.{code}] must be a table")
            for name, raw in values.items():
                _add_override(overrides, registry, code, name, raw)
    for code, name, raw in parse_set(sets):
        _add_override(overrides, registry, code, name, raw)
    chosen = tuple(select) or tuple(file_select)
    dropped = tuple(file_ignore) + tuple(ignore)
    _check_selectors(chosen, registry, "select")
    _check_selectors(dropped, registry, "ignore")
    return Settings(overrides=overrides, select=chosen, ignore=dropped,
                    source=None if path is None else str(path))
