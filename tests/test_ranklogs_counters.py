"""Two step counters in one log (DeepSpeed's optimizer ``step=N`` and the training loop's own
``step: N``) are each compared with themselves: neither makes the other look like a restart,
and a relaunch that sends both back is one restart."""

from __future__ import annotations

from pathlib import Path

import pytest

from autopsy.readers import ranklogs

STAMP = "[2023-04-18 08:48:{s:02d},035] [INFO] [logging.py:96:log_dist] [Rank 0] "


def _ds(step: int, lr: float, skipped: int = 0, s: int = 0) -> str:
    # DeepSpeed's engine line, as DeepSpeed-Chat's step 3 prints it once per engine
    return (STAMP.format(s=s % 60) + f"step={step}, skipped={skipped}, lr=[{lr}, {lr}], "
            "mom=[(0.9, 0.95), (0.9, 0.95)]")


def _timer(step: int, s: int = 0) -> str:
    # DeepSpeed's throughput timer, printed with no rank, at the same global step
    return (f"[2023-04-18 08:48:{s % 60:02d},058] [INFO] [timer.py:199:stop] epoch=0/micro_step="
            f"{step}/global_step={step}, RunningAvgSamplesPerSec=86.76512302357848, "
            "CurrSamplesPerSec=78.87912870644737, MemAllocated=10.77GB, "
            "MaxMemAllocated=20.55GB")


def _loop(step: int, loss: float) -> str:
    # DeepSpeed-Chat's own print: a 0-based count, one behind the engines' step
    return (f"epoch: 0|step: {step}|ppo_ep: 1|act_loss: {loss}|cri_loss: {loss / 2}|"
            "unsuper_loss: 0.0")


def _log(launches: list[range], every: int = 10) -> str:
    lines = []
    for steps in launches:
        for i in steps:
            if (i + 1) % every == 0:  # both engines, actor then critic, at the same step,
                lines.append(_ds(i + 1, 5.79e-07, s=i))  # before the loop prints its own
                lines.append(_timer(i + 1, s=i))
                lines.append(_ds(i + 1, 3.5e-07, s=i))
            lines.append(_loop(i, 0.2 + 0.001 * (i % 7)))
    return "\n".join(lines) + "\n"


def _segments(tmp_path: Path, text: str) -> list[int]:
    log = tmp_path / "train.log"
    log.write_text(text)
    part = ranklogs.read(log, log.name)
    return sorted(set(part.scalars["segment"].tolist()))


@pytest.mark.parametrize("steps", [40, 3000])  # a short paste, and a log the shapes read
def test_two_counters_one_behind_the_other_are_one_segment(tmp_path: Path,
                                                           steps: int) -> None:
    assert _segments(tmp_path, _log([range(steps)])) == [0]


@pytest.mark.parametrize("steps", [40, 3000])
def test_a_relaunch_that_sends_both_counters_back_is_one_restart(tmp_path: Path,
                                                                 steps: int) -> None:
    # relaunched from a checkpoint at step 20: both counters go back, once
    assert _segments(tmp_path, _log([range(steps), range(20, steps)])) == [0, 1]


def test_the_loop_alone_going_back_is_a_restart(tmp_path: Path) -> None:
    text = "\n".join(_loop(i, 0.3) for i in [*range(30), *range(10, 30)]) + "\n"
    assert _segments(tmp_path, text) == [0, 1]
