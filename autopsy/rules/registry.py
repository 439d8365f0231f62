"""The rule registry and the ``@rule`` decorator.

A rule is one function in one module, declared with :func:`rule`: its permanent
code, kebab-case name, family, the causes it can name, the signals it requires,
and its thresholds with defaults. The function's docstring is the user
documentation: the first line is the title, the rest has the sections of
:data:`DOC_SECTIONS`.

Thresholds are declared once per family, as :class:`Threshold` (a default and why it
has that value), in ``autopsy/rules/<family>/thresholds.py`` (the cross-family ones in
:mod:`autopsy.rules.thresholds`); a rule passes the family's declarations to
:func:`rule`. :attr:`RuleSpec.thresholds` maps each name to its default (what
``--set`` and the pyproject overrides start from) and :attr:`RuleSpec.threshold_docs`
to its why.

``requires`` entries are canonical scalar tags (``"loss"``), config keys
(``"config:fp16"``), or alternatives joined by ``|`` (``"loss|eval_loss"``).
A rule whose requirements the run does not meet is not run; the engine records
it as skipped, with the reason.
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from autopsy.model.finding import Family, Finding

if TYPE_CHECKING:  # pragma: no cover
    from autopsy.model.run import Run
    from autopsy.rules.context import RuleContext

#: Sections every rule docstring has, in this order.
DOC_SECTIONS: tuple[str, ...] = ("What happened", "Why it happens", "How to fix", "Evidence shown")

CODE_RE = re.compile(r"^[A-Z]{2,5}\d{3}$")
NAME_RE = re.compile(r"^[a-z0-9]+(-[a-z0-9]+)*$")

RuleFunc = Callable[["Run", "RuleContext"], Iterable[Finding] | Finding | None]
ThresholdValue = float | int | bool | str


class RuleDefinitionError(Exception):
    """A rule was declared wrongly (a bug in autopsy, caught by the tests)."""


@dataclass(frozen=True)
class Threshold:
    """One threshold's declaration: its default value and why it has that value.

    Attributes:
        default: the value a rule uses unless ``--set CODE.name=VALUE`` or a pyproject
            ``[tool.autopsy.rules.CODE]`` table overrides it; its type is the type an
            override is coerced to.
        why: what the threshold guards against and where its value comes from, for
            ``autopsy explain``, ``autopsy rules --thresholds`` and ``docs/rules.md``.
    """

    default: ThresholdValue
    why: str

    def __post_init__(self) -> None:
        if not isinstance(self.default, (bool, int, float, str)):
            raise RuleDefinitionError(f"threshold default {self.default!r} is not a "
                                      "float, int, bool or str")
        if not self.why.strip():
            raise RuleDefinitionError(f"threshold default {self.default!r} has no why")


@dataclass(frozen=True)
class RuleSpec:
    """A registered rule."""

    code: str
    name: str
    family: Family
    causes: tuple[str, ...]
    requires: tuple[str, ...]
    thresholds: Mapping[str, ThresholdValue]
    func: RuleFunc = field(repr=False, compare=False)
    module: str = ""
    #: threshold name -> why it has its default (see :class:`Threshold`).
    threshold_docs: Mapping[str, str] = field(default_factory=dict, repr=False, compare=False)

    def threshold_why(self, name: str) -> str:
        """Why threshold ``name`` has its default ("" when it was declared without one).

        Raises:
            KeyError: the rule has no threshold ``name``.
        """
        if name not in self.thresholds:
            raise KeyError(f"{self.code} has no threshold {name!r}")
        return self.threshold_docs.get(name, "")

    @property
    def doc(self) -> str:
        """The rule's whole docstring, dedented."""
        return inspect.cleandoc(self.func.__doc__ or "")

    @property
    def title(self) -> str:
        """The docstring's first line."""
        return self.doc.splitlines()[0].strip() if self.doc else ""

    def sections(self) -> dict[str, str]:
        """The docstring's sections, ``{heading: text}``, in the order written."""
        out: dict[str, str] = {}
        current: str | None = None
        for line in self.doc.splitlines()[1:]:
            heading = line.strip().rstrip(":")
            if line.strip().endswith(":") and heading in DOC_SECTIONS:
                current = heading
                out[current] = ""
            elif current is not None:
                out[current] += (line[4:] if line.startswith("    ") else line.strip()) + "\n"
        return {k: v.strip() for k, v in out.items()}


#: code -> rule, filled as rule modules are imported (see :func:`load_rules`).
REGISTRY: dict[str, RuleSpec] = {}


def rule(
    *,
    code: str,
    name: str,
    family: Family,
    causes: Iterable[str] = (),
    requires: Iterable[str] = (),
    thresholds: Mapping[str, Threshold | ThresholdValue] | None = None,
) -> Callable[[RuleFunc], RuleFunc]:
    """Declare a rule (see the module docstring).

    ``thresholds`` maps each name to its :class:`Threshold` declaration (a bare value
    declares a default without a why, which the tests reject for registered rules).
    """
    declared = dict(thresholds or {})
    defaults = {k: v.default if isinstance(v, Threshold) else v for k, v in declared.items()}
    docs = {k: v.why for k, v in declared.items() if isinstance(v, Threshold)}

    def decorate(func: RuleFunc) -> RuleFunc:
        if not CODE_RE.match(code):
            raise RuleDefinitionError(f"bad rule code {code!r}")
        if not NAME_RE.match(name):
            raise RuleDefinitionError(f"{code}: name must be kebab-case, got {name!r}")
        existing = REGISTRY.get(code)
        if existing is not None and existing.module != func.__module__:
            raise RuleDefinitionError(f"rule code {code} used twice ({existing.module})")
        REGISTRY[code] = RuleSpec(
            code=code,
            name=name,
            family=Family(family),
            causes=tuple(causes),
            requires=tuple(requires),
            thresholds=defaults,
            func=func,
            module=func.__module__,
            threshold_docs=docs,
        )
        return func

    return decorate


def load_rules() -> dict[str, RuleSpec]:
    """Import every rule module under ``autopsy.rules.<family>`` and return the registry."""
    import importlib
    import pkgutil

    import autopsy.rules as package

    for info in pkgutil.walk_packages(package.__path__, prefix="autopsy.rules."):
        if info.ispkg or info.name.count(".") >= 3:
            importlib.import_module(info.name)
    return dict(sorted(REGISTRY.items()))


def unmet_requirements(spec: RuleSpec, tags: set[str], config_keys: set[str],
                       parts: set[str] | None = None) -> list[str]:
    """The ``requires`` entries the run does not meet (empty: the rule can run).

    An entry is a canonical tag (``loss``), ``config:KEY``, or ``run:PART`` for a
    part of the run other than scalars (``run:checkpoints``: checkpoint audits,
    ``run:events``: log events), ``|`` separating alternatives; ``parts`` names
    the parts the run has.
    """
    missing = []
    have = parts or set()
    for req in spec.requires:
        options = req.split("|")
        ok = False
        for opt in options:
            if opt.startswith("config:"):
                ok = ok or opt[len("config:"):] in config_keys
            elif opt.startswith("run:"):
                ok = ok or opt[len("run:"):] in have
            else:
                ok = ok or opt in tags
        if not ok:
            missing.append(req)
    return missing
