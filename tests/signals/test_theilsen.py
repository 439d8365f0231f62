"""Our Theil–Sen line equals scipy.stats.theilslopes, ties and all."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from autopsy.signals.theilsen import theilslopes


@pytest.mark.parametrize("seed", range(6))
def test_same_as_scipy_on_noisy_lines_with_ties(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n = int(rng.integers(3, 400))
    x = np.sort(rng.integers(0, n, size=n)).astype(float)  # repeated x: ties
    y = 0.3 * x + rng.standard_cauchy(n)
    y[rng.integers(0, n, size=n // 5)] = 1.0  # repeated y: ties
    for alpha in (0.95, 0.9, 0.05):
        ours = theilslopes(y, x, alpha)
        ref = stats.theilslopes(y, x, alpha=alpha)
        np.testing.assert_allclose(ours, tuple(ref), rtol=1e-12, atol=1e-12)


def test_identical_x_is_an_error() -> None:
    with pytest.raises(ValueError):
        theilslopes(np.array([1.0, 2.0]), np.array([3.0, 3.0]))


def test_reading_and_diagnosing_imports_neither_scipy_stats_nor_optimize() -> None:
    import subprocess
    import sys

    from repo_paths import SAMPLE_RUNS

    code = (
        "import sys, autopsy\n"
        f"autopsy.diagnose(autopsy.load_run({str(SAMPLE_RUNS / 'healthy_hf_trainer')!r}))\n"
        "print([m for m in ('scipy.stats', 'scipy.optimize') if m in sys.modules])\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120, check=True).stdout.strip()
    assert out == "[]"
