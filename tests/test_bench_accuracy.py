"""``bench/accuracy.py``'s read table: what autopsy read of a case, by class."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent.parent / "bench" / "accuracy.py"


def _bench() -> Any:
    if str(BENCH.parent) not in sys.path:  # the script imports its sibling corpus_stats
        sys.path.insert(0, str(BENCH.parent))
    spec = importlib.util.spec_from_file_location("bench_accuracy", BENCH)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["bench_accuracy"] = module
    spec.loader.exec_module(module)
    return module


def _outcome(mod: Any, family: str, verdict: str | None, run: dict[str, Any] | None) -> Any:
    case = mod.Case("c", Path("c"), {"family": family})
    return mod.Outcome(case, None if verdict is None else {"family": verdict}, None, 0.1, run)


def _tag(tag: str, points: int, first: int, last: int) -> dict[str, Any]:
    return {"tag": tag, "points": points, "first_step": first, "last_step": last}


def test_read_class_of_each_kind_of_report() -> None:
    mod = _bench()
    assert mod.read_class(_outcome(mod, "oom", None, None)) == "no report"
    assert mod.read_class(_outcome(mod, "oom", "oom", {"tags": [], "events": 0})) == \
        "nothing read"
    assert mod.read_class(_outcome(mod, "oom", "oom", {"tags": [], "events": 3})) == \
        "log events only"
    assert mod.read_class(_outcome(mod, "slow", "unknown",
                                   {"tags": [_tag("step_time", 9, 1, 9)]})) == \
        "other scalars only"
    assert mod.read_class(_outcome(mod, "slow", "unknown",
                                   {"tags": [_tag("loss", 3, 1, 1)]})) == "curve of one step"
    assert mod.read_class(_outcome(mod, "healthy", "healthy",
                                   {"tags": [_tag("loss", 5, 1, 5)]})) == \
        "short curve (2-7 points)"
    assert mod.read_class(_outcome(mod, "healthy", "healthy",
                                   {"tags": [_tag("loss", 5, 1, 5),
                                             _tag("eval_loss", 8, 1, 8)]})) == \
        "curve (8+ points)"


def test_read_table_counts_cases_and_unknowns() -> None:
    mod = _bench()
    short = {"tags": [_tag("loss", 4, 1, 4)]}
    outs = [_outcome(mod, "healthy", "healthy", short),
            _outcome(mod, "slow", "unknown", short),
            _outcome(mod, "oom", None, None)]
    table = mod.read_table(outs)
    assert table[:2] == ["| what was read | cases | family | unknown |", "|---|---|---|---|"]
    assert "| no report | 1 | 0% (0/1) | 0% (0/1) |" in table
    assert "| short curve (2-7 points) | 2 | 50% (1/2) | 50% (1/2) |" in table
    assert len(table) == 4
