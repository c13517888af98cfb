"""A step watchdog for unattended runs: a step that does not return ends the run, saved, with its own exit code.

A worker that dies mid-run leaves the head blocked in its next collective (the engines
wait, by design, with no timeout of their own), so a nightly job would hang until the
workflow's limit. Where the transport notices the dead peer instead (gloo on the CPU), the
step fails, and the runner's rebuild of the engine then waits for ranks that never come.
The watchdog is a thread that watches every ``Engine.step()`` (:class:`WatchedEngine`:
the runner's driver steps the engine through it, armed around each step) and the runner's
rebuild. A decode cell's loop does not arm it per step: it hands the watchdog its count of
steps made (:meth:`StepWatchdog.watching`), and the thread, on its own schedule, sees that
count stand still (nothing of the watchdog's runs on the stepping thread between two steps). When
one outlives its limit, the watchdog thread:

1. dumps every thread's stack (``faulthandler``) to stderr and to ``RESULTS.hang.txt``;
2. calls ``on_hang`` (the runner: the cell in progress becomes Error "hung in step N
   after S s (limit L s)" and the results file is saved, atomically, under the runner's
   save lock);
3. ends the process's own children (the engine's local ranks) and exits with
   :data:`HUNG_EXIT_CODE`, from this thread: the main thread is blocked inside the
   collective and would never reach a Python signal handler.

The limit (``--step-timeout``): a number of seconds, ``off``, or ``auto`` (the default):
max(:data:`FLOOR_S`, :data:`FACTOR` × the longest step this run has made so far), so
it follows the run's own step times (a long prefill raises it) and never falls below
the floor (the first steps of a run, or a cell of a longer context than any before).
"""
from __future__ import annotations

import os
import sys
import threading
import time
from dataclasses import dataclass
from typing import Callable

from inproc.run.hang import dump_stacks, end_own_children, stacks_path_for  # noqa: F401 - stacks_path_for: the runner's

#: The process exit code after a hung step (0 ok, 1 regression, 2 bad input, 130 Ctrl-C).
HUNG_EXIT_CODE = 3
#: ``auto``: never less than this many seconds (a healthy step on any machine this project runs on is far shorter).
FLOOR_S = 300.0
#: ``auto``: this many times the longest step the run has made so far.
FACTOR = 20.0
#: The watchdog thread looks at what is armed this often (arming never wakes it: that would cost the timed step).
POLL_S = 0.5
#: A rebuild after a failure may take this many times the run's first build (and at least the step limit).
REBUILD_FACTOR = 3.0


@dataclass(frozen=True)
class StepTimeout:
    """``--step-timeout``: ``seconds`` fixed, or None for ``auto``; ``enabled`` False for ``off``."""

    seconds: float | None = None
    enabled: bool = True
    floor_s: float = FLOOR_S
    factor: float = FACTOR

    def limit_s(self, longest_step_s: float) -> float:
        """The limit of the next step, given the longest step so far (0 before the first)."""
        if self.seconds is not None:
            return self.seconds
        return max(self.floor_s, self.factor * longest_step_s)

    def describe(self) -> str:
        if not self.enabled:
            return "off"
        if self.seconds is not None:
            return f"{self.seconds:g} s"
        return f"auto (max({self.floor_s:g} s, {self.factor:g} x the longest step so far))"


def parse_step_timeout(text: str) -> StepTimeout:
    """``auto``, ``off`` or seconds (``90`` or ``90s``, above 0); a ValueError names the bad value."""
    t = text.strip().lower()
    if t == "auto":
        return StepTimeout()
    if t == "off":
        return StepTimeout(enabled=False)
    try:
        seconds = float(t.removesuffix("s"))
    except ValueError:
        seconds = -1.0
    if not seconds > 0 or seconds == float("inf"):
        raise ValueError(f"Bad --step-timeout {text!r}. Give auto, off, or seconds above 0, e.g. 600 or 90s.")
    return StepTimeout(seconds)


@dataclass(frozen=True)
class Hang:
    """A call that did not return: which (``step 4``: the 4th step of the entry; ``the engine rebuild``), how long, its limit."""

    what: str
    elapsed_s: float
    limit_s: float

    def reason(self) -> str:
        return f"hung in {self.what} after {self.elapsed_s:.0f} s (limit {round(self.limit_s, 1):g} s)"


class StepWatchdog:
    """One daemon thread that polls what is armed; :meth:`arm_step` / :meth:`disarm_step` around one engine
    step, or :meth:`watching` around a loop of steps that counts its own.

    Arming and disarming are plain attribute writes, no lock and no wake-up: whoever times
    the step calls them outside its clock reads (``Driver.run_to_completion``). A decode cell's
    loop does not even that: the thread reads the loop's step count each :data:`POLL_S`, and a
    count that has not moved for the limit is a hung step (so a hang is caught within
    :data:`POLL_S` of its limit either way). Steps longer than a poll are seen by the thread as
    the count standing still; they feed ``auto``, and the loop hands over its longest step when
    it ends. Only the stepping thread writes the counters.
    """

    def __init__(self, timeout: StepTimeout, on_hang: Callable[[Hang], None], stacks_path: str | None = None,
                 clock: Callable[[], float] = time.monotonic, exit: Callable[[int], None] = os._exit,
                 end_children: Callable[[], None] | None = None) -> None:
        self.timeout, self.on_hang, self.stacks_path = timeout, on_hang, stacks_path
        self.clock, self._exit = clock, exit
        self._end_children = end_children or end_own_children
        self.longest_s = 0.0
        self.cell_steps = 0  # steps since :meth:`new_cell`
        self._wake = threading.Event()  # set only by :meth:`stop`
        # (what, start, limit): ``what`` is the step's number in the cell, or a name. One tuple
        # assigned whole, so the watchdog thread never reads half of it.
        self._armed: tuple[int | str, float, float] | None = None
        self._stopped = False
        # A loop of steps being watched: (its step count, the cell's steps before it), and the
        # count the thread last saw with when it first saw it.
        self._loop: tuple[Callable[[], int], int] | None = None
        self._seen: tuple[int, float] = (-1, 0.0)
        self.fired: Hang | None = None
        self._thread = threading.Thread(target=self._watch, name="inproc-step-watchdog", daemon=True)
        self._thread.start()

    def new_cell(self) -> None:
        """Steps are counted from here (the message names the step of the cell in progress)."""
        self.cell_steps = 0

    def arm_step(self) -> None:
        """Armed for the engine step about to be made (its limit from the steps so far)."""
        self.cell_steps += 1
        self._armed = (self.cell_steps, self.clock(), self.timeout.limit_s(self.longest_s))

    def disarm_step(self, step_s: float) -> None:
        """The step returned after ``step_s`` seconds (as its caller timed it); that feeds ``auto``."""
        self._armed = None
        if step_s > self.longest_s:
            self.longest_s = step_s

    def watching(self, steps_made: Callable[[], int]) -> "LoopWatch":
        """A context in which the thread watches a loop's own step count (``steps_made()``, read from
        the thread: a plain attribute read); the loop arms nothing per step."""
        return LoopWatch(self, steps_made)

    def step(self, fn: Callable[[], object]) -> object:
        """``fn()`` (one engine step) with the watchdog armed around it, for callers that do not time the step."""
        self.arm_step()
        start = self.clock()
        try:
            return fn()
        finally:
            self.disarm_step(self.clock() - start)

    def rebuild(self, fn: Callable[[], object], build_s: float) -> object:
        """``fn()`` (an engine rebuild after a failure) under the watchdog: a multi-node rebuild waits for
        every node's ranks, which never come when a worker died. Its limit: the step limit, or
        :data:`REBUILD_FACTOR` × the run's first build, whichever is longer."""
        return self.guard(fn, "the engine rebuild", max(self.timeout.limit_s(self.longest_s), REBUILD_FACTOR * build_s))

    def guard(self, fn: Callable[[], object], what: str, limit_s: float) -> object:
        """``fn()`` with the watchdog armed: if it outlives ``limit_s``, the watchdog ends the process."""
        self._armed = (what, self.clock(), limit_s)
        try:
            return fn()
        finally:
            self._armed = None

    def stop(self) -> None:
        self._stopped = True
        self._wake.set()
        self._thread.join(timeout=5)

    def _due(self) -> Hang | None:
        armed = self._armed  # one read: the stepping thread may disarm meanwhile
        if self.fired is not None:
            return None
        if armed is None:
            armed = self._loop_armed()
            if armed is None:
                return None
        what, start, limit = armed
        elapsed = self.clock() - start
        if elapsed < limit:
            return None
        self.fired = Hang(f"step {what}" if isinstance(what, int) else what, elapsed, limit)
        return self.fired

    def _loop_armed(self) -> tuple[int, float, float] | None:
        """A watched loop's step in progress as (its number in the cell, since when the count stood, its limit)."""
        loop = self._loop
        if loop is None:
            return None
        steps_made, before = loop
        n, now = steps_made(), self.clock()
        seen, since = self._seen
        if n != seen:
            if seen >= 0 and n == seen + 1:  # one step ended after standing at least since ``since``
                self.longest_s = max(self.longest_s, now - since - POLL_S)
            self._seen = (n, now)
            return None
        return before + n + 1, since, self.timeout.limit_s(self.longest_s)

    def _watch(self) -> None:
        while True:
            self._wake.wait(POLL_S)
            self._wake.clear()
            if self._stopped:
                return
            hang = self._due()
            if hang is not None:
                self._expire(hang)
                return

    def _expire(self, hang: Hang) -> None:
        """Stacks, the save, the children, the exit: in that order, each attempted whatever the one before did."""
        print(f"inproc: step watchdog: {hang.reason()}; stacks of every thread follow", file=sys.stderr, flush=True)
        dump_stacks(self.stacks_path, hang)
        try:
            self.on_hang(hang)
        except BaseException as e:  # noqa: BLE001 - the exit must happen anyway
            print(f"inproc: step watchdog: saving the results failed: {e!r}", file=sys.stderr, flush=True)
        self._end_children()
        self._exit(HUNG_EXIT_CODE)


class LoopWatch:
    """:meth:`StepWatchdog.watching`'s context: on entry the thread starts reading the loop's count; on
    exit the loop's steps are added to the cell's and its longest step (``longest_step_s``, set by the
    loop before it exits) feeds ``auto``."""

    def __init__(self, dog: StepWatchdog, steps_made: Callable[[], int]) -> None:
        self.dog, self.steps_made = dog, steps_made
        self.longest_step_s = 0.0

    def __enter__(self) -> "LoopWatch":
        self.dog._seen = (-1, 0.0)
        self.dog._loop = (self.steps_made, self.dog.cell_steps)
        return self

    def __exit__(self, *exc) -> None:
        dog = self.dog
        dog._loop = None
        dog.cell_steps += self.steps_made()
        dog.longest_s = max(dog.longest_s, self.longest_step_s)


class WatchedEngine:
    """The engine, with every ``step()`` made under the watchdog; everything else passes through.

    A caller that times its steps arms the watchdog itself, outside its clock reads
    (:func:`watched_step`), and steps ``unwatched``.
    """

    def __init__(self, engine, watchdog: StepWatchdog) -> None:
        self._engine, self.watchdog, self.unwatched = engine, watchdog, engine

    def step(self):
        return self.watchdog.step(self._engine.step)

    def __getattr__(self, name: str):
        return getattr(self._engine, name)


def watched_step(engine) -> tuple[StepWatchdog | None, Callable[[], object]]:
    """(the watchdog to arm around each step, or None; the engine's step without the watchdog)."""
    if isinstance(engine, WatchedEngine):
        return engine.watchdog, engine.unwatched.step
    return None, engine.step
