"""The schedule fit's one-dimensional search finds what scipy.optimize.minimize_scalar finds."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.optimize import minimize_scalar

from autopsy.signals.schedule_fit import _cosine_rms, _golden_min


@pytest.mark.parametrize("centre", [0.0, 0.13, 0.5, 0.91, 1.0])
def test_golden_min_equals_scipy_bounded_on_unimodal_functions(centre: float) -> None:
    for f in (lambda c: (c - centre) ** 2 + 1.0, lambda c: abs(c - centre) ** 1.5 - 2.0,
              lambda c: math.cosh(4 * (c - centre))):
        ref = minimize_scalar(f, bounds=(0.0, 1.0), method="bounded",
                              options={"xatol": 1e-9}).fun
        assert _golden_min(f, 0.0, 1.0) == pytest.approx(ref, abs=1e-9)


def test_golden_min_on_the_cosine_fit_it_is_used_for() -> None:
    u = np.linspace(0.0, 1.0, 200)
    for period in (0.6, 1.0, 1.7):
        v = 0.5 * (1 + np.cos(np.pi * u / period))
        def rms(c: float, v: np.ndarray = v) -> float:
            return _cosine_rms(u, v, c)

        ours = _golden_min(rms, 0.4, 2.5)
        ref = minimize_scalar(rms, bounds=(0.4, 2.5),
                              method="bounded", options={"xatol": 1e-9}).fun
        assert ours <= ref + 1e-6
        assert ours < 1e-3  # the period it was made with fits
