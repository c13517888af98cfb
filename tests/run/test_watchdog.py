"""The step watchdog's rules without an engine: the limit, the parse, and what happens when a step does not return."""
from __future__ import annotations

import threading

import pytest

from inproc.run.watchdog import (FACTOR, FLOOR_S, HUNG_EXIT_CODE, Hang, StepTimeout, StepWatchdog, WatchedEngine,
                                 parse_step_timeout, stacks_path_for)


def test_auto_follows_the_longest_step_above_a_floor():
    auto = StepTimeout()
    assert auto.limit_s(0.0) == FLOOR_S and auto.limit_s(1.0) == FLOOR_S  # 20 x 1 s is under the floor
    assert auto.limit_s(40.0) == FACTOR * 40.0 == 800.0
    assert StepTimeout(30.0).limit_s(100.0) == 30.0  # a fixed limit ignores the run's steps
    assert parse_step_timeout("auto") == auto and parse_step_timeout("90s") == StepTimeout(90.0)
    assert parse_step_timeout(" 2.5 ") == StepTimeout(2.5) and not parse_step_timeout("off").enabled
    for bad in ("0", "-3", "soon", "inf", "nan"):
        with pytest.raises(ValueError, match=f"Bad --step-timeout {bad!r}. Give auto, off, or seconds"):
            parse_step_timeout(bad)
    assert stacks_path_for("out/r.json") == "out/r.hang.txt" and stacks_path_for(None) is None


class FakeEngine:
    """Stands in for an engine's step(): returns at once, or blocks until released (a dead peer)."""

    def __init__(self) -> None:
        self.block, self.release, self.steps = False, threading.Event(), 0
        self.info = "engine info"

    def step(self):
        self.steps += 1
        if self.block:
            self.release.wait(30)
        return self.steps


def test_a_step_that_does_not_return_is_reported_saved_and_exited(tmp_path):
    engine, hangs, codes, ended = FakeEngine(), [], [], []
    stacks = tmp_path / "r.hang.txt"

    def exit_(code: int) -> None:  # instead of os._exit: record, and let the blocked step go
        codes.append(code)
        engine.release.set()

    dog = StepWatchdog(StepTimeout(0.3), hangs.append, str(stacks), exit=exit_, end_children=lambda: ended.append(1))
    watched = WatchedEngine(engine, dog)
    assert watched.info == "engine info"  # everything but step() passes through
    dog.new_cell()
    assert [watched.step() for _ in range(3)] == [1, 2, 3] and not hangs  # quick steps: nothing
    engine.block = True
    watched.step()  # the 4th step of the cell blocks until the watchdog has fired
    dog._thread.join(timeout=5)
    assert codes == [HUNG_EXIT_CODE] == [3] and ended == [1]
    (hang,) = hangs
    assert hang.what == "step 4" and hang.limit_s == 0.3 and 0.3 <= hang.elapsed_s < 5
    assert hang.reason() == f"hung in step 4 after {hang.elapsed_s:.0f} s (limit 0.3 s)"
    text = stacks.read_text()
    assert text.startswith("inproc step watchdog: hung in step 4") and "test_watchdog.py" in text  # the blocked frame


def test_a_failed_save_still_exits_and_a_stopped_watchdog_never_fires():
    engine, codes = FakeEngine(), []

    def boom(hang: Hang) -> None:
        raise OSError("disk full")

    dog = StepWatchdog(StepTimeout(0.2), boom, None, exit=lambda c: (codes.append(c), engine.release.set()),
                       end_children=lambda: None)
    engine.block = True
    WatchedEngine(engine, dog).step()
    dog._thread.join(timeout=5)
    assert codes == [HUNG_EXIT_CODE]
    calm = StepWatchdog(StepTimeout(0.2), boom, None, exit=codes.append, end_children=lambda: None)
    calm.stop()
    assert not calm._thread.is_alive() and codes == [HUNG_EXIT_CODE]


def test_a_rebuild_that_never_returns_is_named_as_such():
    engine, hangs, codes = FakeEngine(), [], []
    dog = StepWatchdog(StepTimeout(0.1), hangs.append, None, exit=lambda c: (codes.append(c), engine.release.set()),
                       end_children=lambda: None)
    engine.block = True
    dog.rebuild(engine.step, build_s=0.1)  # limit max(0.1 s step limit, 3 x 0.1 s first build) = 0.3 s
    dog._thread.join(timeout=5)
    (hang,) = hangs
    assert codes == [HUNG_EXIT_CODE] and hang.what == "the engine rebuild" and hang.limit_s == pytest.approx(0.3)


@pytest.mark.engine  # starts `inproc cell`
def test_a_bad_step_timeout_is_one_line_and_exit_2(tmp_path):
    from tests.cli.test_cli import inproc
    from tests.conftest import DEFAULT_PROFILE

    p = inproc("cell", str(DEFAULT_PROFILE), "--context", "256", "--concurrency", "1", "--step-timeout", "soon",
               "--out", str(tmp_path / "r.json"))
    lines = [ln for ln in p.stderr.splitlines() if ln.strip()]
    assert p.returncode == 2 and len(lines) == 1 and "Bad --step-timeout 'soon'" in lines[0], p.stderr[-2000:]
    assert not (tmp_path / "r.json").exists()
