"""Which points ``rank_series`` leaves out as warm-up: the first of a process only."""

from __future__ import annotations

from slow_runs import timed_run

from autopsy.signals.steptime import rank_series


def _steps(first_step: int, n: int) -> list[int]:
    run = timed_run({None: [0.3] * n}, tags={"data_time": {None: [0.1] * n}},
                    first_step=first_step)
    return list(rank_series(run, "data_time", skip_first=1)[None].index)


def test_the_first_step_of_the_run_is_warm_up() -> None:
    assert _steps(1, 5) == [2, 3, 4, 5]


def test_a_log_that_starts_mid_run_keeps_its_first_point() -> None:
    # an excerpt (or a log that begins at step 6019): its first line is no process start
    assert _steps(6019, 5) == [6019, 6020, 6021, 6022, 6023]


def test_a_single_point_is_never_left_out() -> None:
    assert _steps(1, 1) == [1]
