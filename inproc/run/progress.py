"""Where a run stands: entry k of N, time elapsed, time left; shown through a sink.

The sink is whatever shows lines to a person (the CLI's terminal printer); it may
overwrite a line that ends with ``...`` when it is ``live`` (a terminal). The runner
reports through a :class:`Progress` and never formats times itself.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Callable, Protocol


class Sink(Protocol):
    """Shows progress lines; ``live``: a terminal, where a line ending in ``...`` is overwritten."""

    live: bool

    def __call__(self, line: str) -> None: ...


@dataclass
class QuietSink:
    """Shows nothing (library use, tests)."""

    live: bool = False

    def __call__(self, line: str) -> None:
        pass


def clock_text(seconds: float) -> str:
    """``42 s``, ``3m05s``, ``1h02m``."""
    s = int(round(seconds))
    if s < 60:
        return f"{s} s"
    if s < 3600:
        return f"{s // 60}m{s % 60:02d}s"
    return f"{s // 3600}h{s % 3600 // 60:02d}m"


@dataclass
class Progress:
    """Entry ``done`` of ``total`` to measure, the time since the start, and an estimate of the rest.

    The estimate is the mean time of the entries measured so far times the entries left
    (cells decided beforehand, such as Over capacity, are not counted: they take no time).
    """

    total: int
    sink: Sink = field(default_factory=QuietSink)
    clock: Callable[[], float] = time.perf_counter
    done: int = 0
    started_s: float | None = None
    label: str = ""  # the entry in progress

    def __post_init__(self) -> None:
        if self.started_s is None:
            self.started_s = self.clock()

    @property
    def elapsed_s(self) -> float:
        return self.clock() - self.started_s

    @property
    def eta_s(self) -> float | None:
        """Seconds left at the mean pace so far; None before the first entry is done."""
        if self.done == 0:
            return None
        return self.elapsed_s / self.done * max(self.total - self.done, 0)

    def position(self) -> str:
        """``[3/18, 1m02s elapsed, ~4m10s left]``."""
        eta = self.eta_s
        left = f", ~{clock_text(eta)} left" if eta is not None and self.done < self.total else ""
        return f"[{min(self.done + 1, self.total)}/{self.total}, {clock_text(self.elapsed_s)} elapsed{left}]"

    def begin(self, label: str) -> None:
        """An entry starts: show it as in progress."""
        self.label = label
        self.sink(f"{self.position()} {label} ...")

    def tick(self, text: str) -> None:
        """Live status inside the entry in progress (a terminal only)."""
        if self.sink.live:
            self.sink(f"{self.position()} {self.label}{text}")

    def end(self, line: str) -> None:
        """An entry is measured: count it and show its result line."""
        self.done += 1
        self.label = ""
        self.sink(line)

    def note(self, line: str) -> None:
        """A line that is not an entry (a cell decided beforehand, a rebuild)."""
        self.sink(line)


def tick_line(s, open_s: float | None, now_s: float, res) -> str:
    """One live status line of a decode cell (``s``: its ``DecodeSettings``; ends with '...': a terminal overwrites it)."""
    if open_s is None:
        phase = f"warm-up {now_s:.1f} s"
    elif s.window_steps:
        phase = f"window {now_s - open_s:.1f} s ({s.window_steps} steps)"
    else:
        phase = f"window {now_s - open_s:.1f}/{s.window_s:g} s"
    return f"  {phase}, {res.num_running} running, {res.num_waiting} waiting ..."
