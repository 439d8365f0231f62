"""Where a log starts in its run, in logging intervals (``autopsy.signals.interval``)."""

from __future__ import annotations

import math

from autopsy.signals.interval import logging_interval, start_in_intervals


def test_an_excerpt_from_the_middle_of_a_run() -> None:
    steps = [1050, 1100, 1150, 1200, 1250]
    assert logging_interval(steps) == 50
    assert start_in_intervals(steps) == 21


def test_a_log_from_the_start_and_repeated_steps() -> None:
    # a step logged twice (a bar and its epoch summary) is one step, not a gap of 0
    assert logging_interval([10, 10, 20, 30, 30, 40]) == 10
    assert start_in_intervals([10, 10, 20, 30, 30, 40]) == 1


def test_unknown_without_two_distinct_steps() -> None:
    assert logging_interval([5]) == 0.0
    assert start_in_intervals([7, 7]) is None
    assert start_in_intervals([]) is None
    assert start_in_intervals([math.nan, 3, 6]) == 1
