"""Measure what calling scipy's own estimators would cost against autopsy's small copies.

autopsy fits a Theil–Sen line (``autopsy.signals.theilsen``, the same estimator and interval
as ``scipy.stats.theilslopes``) and a one-dimensional bounded minimum
(``schedule_fit._golden_min``, in place of ``scipy.optimize.minimize_scalar``). Each is
measured in a fresh interpreter that has already imported what autopsy's rules import (numpy,
pandas and both copies), so the figures are what scipy would add to an autopsy process: the
import's wall time, the peak resident memory it adds, and one call on a 500-point series; the
results are compared so the copies are shown to agree. Writes ``## scipy's estimators``
in ``docs/performance.md``.

Usage: ``python bench/scipy_copies.py [--runs 5] [--no-write]`` (needs scipy, in the test extra)
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import subprocess
import sys

from docfile import DOC, update_section

HEADING = "## scipy's estimators"

_PRELUDE = """
import json, resource, time, numpy as np, pandas
import autopsy.signals.schedule_fit, autopsy.signals.theilsen
def rss(): return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
rng = np.random.default_rng(0)
x = np.arange(500, dtype=float); y = 0.01 * x + rng.standard_normal(500)
f = lambda c: (c - 0.3) ** 2 + 1.0
r0 = rss(); t0 = time.perf_counter()
"""

CASES = {
    "scipy.stats.theilslopes": """
from scipy.stats import theilslopes
t1 = time.perf_counter(); r1 = rss(); out = tuple(theilslopes(y, x, alpha=0.95))""",
    "autopsy.signals.theilsen.theilslopes": """
from autopsy.signals.theilsen import theilslopes
t1 = time.perf_counter(); r1 = rss(); out = tuple(theilslopes(y, x, 0.95))""",
    "scipy.optimize.minimize_scalar": """
from scipy.optimize import minimize_scalar
t1 = time.perf_counter(); r1 = rss()
out = (float(minimize_scalar(f, bounds=(0.0, 1.0), method='bounded',
                             options={'xatol': 1e-6}).fun),)""",
    "autopsy.signals.schedule_fit._golden_min": """
from autopsy.signals.schedule_fit import _golden_min
t1 = time.perf_counter(); r1 = rss(); out = (_golden_min(f, 0.0, 1.0),)""",
}

_REPORT = """
t2 = time.perf_counter()
print(json.dumps({"import_s": t1 - t0, "call_s": t2 - t1, "rss_mb": r1 - r0,
                  "out": [float(v) for v in out]}))
"""


def measure(body: str) -> dict:
    """One fresh interpreter: import cost, added peak RSS, call time and result."""
    done = subprocess.run([sys.executable, "-c", _PRELUDE + body + _REPORT],
                          capture_output=True, text=True, check=True)
    return json.loads(done.stdout)


def main() -> None:
    """Run each case ``--runs`` times and write the table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--no-write", action="store_true")
    args = parser.parse_args()
    rows, outs = [], {}
    for name, body in CASES.items():
        got = [measure(body) for _ in range(args.runs)]
        outs[name] = got[0]["out"]
        rows.append((name, statistics.median(g["import_s"] for g in got),
                     statistics.median(g["rss_mb"] for g in got),
                     statistics.median(g["call_s"] for g in got)))
    agree_ts = max(abs(a - b) for a, b in zip(outs["scipy.stats.theilslopes"],
                                              outs["autopsy.signals.theilsen.theilslopes"],
                                              strict=True))
    agree_min = abs(outs["scipy.optimize.minimize_scalar"][0]
                    - outs["autopsy.signals.schedule_fit._golden_min"][0])
    lines = [
        f"`python bench/scipy_copies.py --runs {args.runs}`: median of {args.runs} fresh "
        f"interpreters that have imported numpy, pandas and autopsy's copies "
        f"({platform.python_version()}, {platform.machine()}): an import row is what it adds "
        "to an autopsy process (the copies' own rows are already paid).",
        "",
        "| estimator | import | memory the import adds | one call (500 points) |",
        "|---|---|---|---|",
        *[f"| `{n}` | {i * 1000:.0f} ms | {m:.0f} MB | {c * 1000:.1f} ms |"
          for n, i, m, c in rows],
        "",
        f"The results agree: the Theil–Sen lines (slope, intercept, interval) differ by at most "
        f"{agree_ts:.1e}, the minima by {agree_min:.1e} (`tests/signals/test_theilsen.py` and "
        "`tests/signals/test_schedule_fit.py` check both against scipy on many inputs). "
        "scipy is therefore not a runtime dependency: it is in the test extra, as the "
        "reference the copies are checked against.",
    ]
    body = "\n".join(lines)
    print(body)
    if not args.no_write:
        update_section(DOC, HEADING, body)


if __name__ == "__main__":
    main()
