"""Simulated bisects whose truth is known: the real sitting, oracle and search, driven by a simulated machine.

A range of revisions 0..last has a change planted at a known commit: from it on, every
step takes ``1 + regression`` times as long. Each run's Total tok/s is the revision's true
rate × a run factor (log-normal, the run spread) × the machine's drift, cut into
:data:`inproc.bisect.runs.UNITS` sub-windows. The drift (:class:`Drift`) slows whole runs
1–6x at random, and slow stretches of several runs in a row, as another job on the machine
does. Nothing here decides: the sitting (:func:`inproc.bisect.walk.walk`) and the report's
result (:func:`inproc.bisect.report.result`) are the code ``inproc bisect`` runs, with a
measurer (:data:`inproc.bisect.session.Measurer`) in place of the child process.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from inproc.bisect.child import CellSpec
from inproc.bisect.oracle import OracleSettings
from inproc.bisect.report import Result, result
from inproc.bisect.runs import UNITS, RunSample
from inproc.bisect.session import Sitting
from inproc.bisect.walk import walk

BASE_TOK_S = 160.0
CHILD_S = 15.0  # a quiet child's wall time (the tiny profile's, on a 2-core machine)


@dataclass(frozen=True)
class Drift:
    """The machine's drift: whole runs slowed, and slow stretches of runs in a row."""

    p_slow: float = 0.10  # the chance that a run is slowed on its own
    slow_max: float = 6.0  # ... by a factor drawn uniformly in [1, slow_max]
    p_stretch: float = 0.03  # the chance that a slow stretch starts at a run (the stretch is slowed alike)
    stretch_runs: tuple[int, int] = (3, 6)  # its length in runs (uniform, both ends in)
    p_load: float = 0.0  # the share of runs made while another program loads the machine (in spells: load_stay)
    load_stay: float = 0.0  # the chance that the load lasts from one run to the next (mean spell 1 / (1 - this))
    load_range: tuple[float, float] = (3.0, 12.0)  # a loaded run is slowed by a factor drawn log-uniformly in this


QUIET = Drift(0.0, 1.0, 0.0)
#: A busy machine: about half the runs several times slower, at random and in spells of 2.5 runs on average, so a
#: revision's runs fall in two clusters (the loaded bisect: the good revision's runs 9.4-23 and 67-116 tok/s).
TWO_CLUSTERS = Drift(0.0, 1.0, 0.0, p_load=0.5, load_stay=0.6)


class Machine:
    """The drift's state over a sitting: the stretch in progress, if any."""

    def __init__(self, drift: Drift, rng: np.random.Generator) -> None:
        self.drift, self.rng, self.left, self.factor = drift, rng, 0, 1.0
        self.loaded = bool(drift.p_load and rng.random() < drift.p_load)

    def load(self) -> float:
        """The load's factor on this run (1: none): a two-state chain whose loaded share is ``p_load``."""
        d, rng = self.drift, self.rng
        if not d.p_load:
            return 1.0
        start = d.p_load * (1 - d.load_stay) / (1 - d.p_load)  # the chance a spell starts: keeps the share p_load
        self.loaded = rng.random() < (d.load_stay if self.loaded else start)
        lo, hi = np.log(d.load_range)
        return float(np.exp(rng.uniform(lo, hi))) if self.loaded else 1.0

    def slowdown(self) -> float:
        """This run's factor (≥ 1) on its seconds."""
        d, rng = self.drift, self.rng
        if self.left == 0 and rng.random() < d.p_stretch:
            self.left, self.factor = int(rng.integers(d.stretch_runs[0], d.stretch_runs[1] + 1)), rng.uniform(1, d.slow_max)
        f = 1.0
        if self.left:
            self.left, f = self.left - 1, self.factor
        if rng.random() < d.p_slow:
            f *= rng.uniform(1, d.slow_max)
        return f * self.load()


class Targets:
    """Revisions 0..last, named c0.., measured by the simulation (nothing to check out)."""

    def __init__(self, count: int) -> None:
        self.ids = [f"c{i}" for i in range(count)]

    def label(self, i: int) -> str:
        return self.ids[i]

    def subject(self, i: int) -> str:
        return f"revision {i}"

    def details(self, i: int) -> str:
        return ""

    def origin(self) -> dict:
        return {}

    def restore(self, origin) -> None:
        pass


class NoLog:
    """The log's writer, writing nothing (thousands of sittings)."""

    def header(self, header) -> None:
        pass

    def run(self, line) -> None:
        pass

    def verdict(self, v) -> None:
        pass


@dataclass(frozen=True)
class Truth:
    count: int = 9  # revisions, good and bad included
    first_bad: int = 6
    regression: float = 0.10  # each step takes 1 + this longer from first_bad on
    run_sd: float = 0.02  # the run spread: σ of a quiet run's log tok/s
    unit_sd: float = 0.01  # σ of a sub-window's log seconds inside a run


def measurer(truth: Truth, drift: Drift, rng: np.random.Generator):
    """A measurer of the simulated machine: (index, run number) -> (sample, wall seconds)."""
    machine = Machine(drift, rng)

    def measure(i: int, n: int) -> tuple[RunSample, float]:
        slow = (1 + truth.regression) if i >= truth.first_bad else 1.0
        factor = slow * machine.slowdown() * float(np.exp(rng.normal(0, truth.run_sd)))
        seconds = factor / BASE_TOK_S * np.exp(rng.normal(0, truth.unit_sd, UNITS))
        return RunSample(np.ones(UNITS), seconds), CHILD_S * factor

    return measure


def bisect(truth: Truth, drift: Drift, seed: int, settings: OracleSettings = OracleSettings()) -> tuple[Result, Sitting]:
    """One simulated bisect at ``settings``, seeded: its result (what ``inproc bisect`` prints) and its sitting."""
    rng = np.random.default_rng(seed)
    spec = CellSpec("simulated", 256, 2)
    s = Sitting(Targets(truth.count), spec, Path("."), settings, NoLog(), lambda x: None,
                measurer=measurer(truth, drift, rng))
    walk(s, 0)
    return result(s), s


def outcome(truth: Truth, r: Result) -> str:
    """"right", "wrong" (another commit named) or "insufficient" (exit 1, nothing named)."""
    if r.first_bad is None:
        return "insufficient"
    return "right" if r.first_bad.index == truth.first_bad else "wrong"


def trial(k: int, seed: int, regression: float, run_sd: float, drift: Drift,
          settings: OracleSettings = OracleSettings()) -> tuple[str, Sitting]:
    """Trial ``k``: the change planted at a commit drawn from 1..8, the rest as given."""
    rng = np.random.default_rng([seed, k])
    truth = replace(Truth(), first_bad=int(rng.integers(1, 9)), regression=regression, run_sd=run_sd)
    r, s = bisect(truth, drift, int(rng.integers(2 ** 31)), settings)
    return outcome(truth, r), s
