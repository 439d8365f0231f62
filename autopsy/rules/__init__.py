"""Rules: one module per rule, grouped by family in sub-packages; the registry and engine.

A rule module declares one function with :func:`autopsy.rules.registry.rule`.
Rules never read files: they see only the :class:`~autopsy.model.Run` and a
:class:`~autopsy.rules.context.RuleContext` with their thresholds.
"""

from __future__ import annotations

from autopsy.rules.context import RuleContext
from autopsy.rules.registry import REGISTRY, RuleSpec, load_rules, rule

__all__ = ["REGISTRY", "RuleContext", "RuleSpec", "load_rules", "rule"]
