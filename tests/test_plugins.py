"""``tests/plugins.py``'s :func:`step_sized`: a plant sees the median of the clean steps before it, never its own time.

The plugin module's ``_before`` runs here on a fake clock (its ``time`` replaced), without vLLM.
"""
from __future__ import annotations

import pytest

from tests.plugins import step_sized, wrapping_module


class FakeTime:
    """``time.perf_counter`` and ``time.sleep`` on a clock that moves only when told."""

    def __init__(self) -> None:
        self.now_s = 0.0

    def perf_counter(self) -> float:
        return self.now_s

    def sleep(self, seconds: float) -> None:
        self.now_s += seconds


def test_the_plant_is_a_multiple_of_the_last_clean_steps_and_never_counts_itself():
    plant = "SEEN.append((n, step_s))\nif step_s is not None and n % 10 == 0:\n    time.sleep(5 * step_s)"
    module: dict = {}
    exec(compile(wrapping_module(step_sized(plant, clean_gaps=2)), "plant", "exec"), module)
    clock, seen = FakeTime(), []
    module.update(time=clock, SEEN=seen)
    slept = {}
    for n in range(1, 31):
        before = clock.now_s
        module["_before"](n)
        slept[n] = clock.now_s - before
        clock.now_s += 0.010 if n < 15 else 0.030  # the rest of the step, then the loop to the next call
    step_s = dict(seen)
    assert [n for n, s in step_s.items() if s is None] == [1, 2]  # two gaps timed by the 3rd call
    # The median of the last two gaps: the 50 ms planted at n = 10 is in none (the clock restarts after it).
    assert [step_s[n] for n in range(3, 16)] == pytest.approx([0.010] * 13)
    assert [step_s[n] for n in (16, 17, 20, 30)] == pytest.approx([0.020, 0.030, 0.030, 0.030])  # it follows the steps
    assert slept == pytest.approx({n: (5 * step_s[n] if n in (10, 20, 30) else 0.0) for n in range(1, 31)})
