#!/usr/bin/env python3
"""``scripts/bench.py verdict``: the nightly verdict's false-alarm rate and detection power on simulated nights.

Nights come from the simulator in ``tests/sim`` (a known truth: GPU-like step times of
3.6-48 ms, night-to-night noise of which half the variance is shared by a night's cells,
per-step jitter, planted slowdowns), judged two ways:

- **figure level** (``tests.sim.figures``): each row's log figure drawn directly and
  judged by ``inproc.history.judged.judge_values``, the numbers behind ``inproc history``;
  many trials, so the rates are tight;
- **end to end** (``tests.sim.nights``): step records made, derived and written by inproc's
  own writer, read back and judged by ``inproc history`` / ``inproc compare`` as a
  nightly job would; fewer trials (each is seconds), to show the figure level is the same
  judgement.

Each line prints the rate, its 95 % Wilson interval, the number of trials (sequences, or
cells for a rate over cells: a sequence's cells are not independent, so that interval is
narrower than it should be) and the target.
What counts: a sequence "exits 1" when the newest night has a slower row (history) or
the comparison regresses (compare); a slow cell is "called" when any of its metrics is
slower on the night of the plant; a "reported change" is a confirmed change called slower
or faster; a "level split" is any confirmed change (also one within the threshold).

One run against one run (``scripts/benchmarks/pairs.py``): the ``--max-spread`` rule's false-alarm
rate on clean pairs and its power, end to end and at the figure level.

Run: .venv-vllm/bin/python scripts/bench.py verdict [--trials 400] [--trials-e2e 20] [--only history|compare|pairs]
"""
from __future__ import annotations

import argparse
import math
import sys
import tempfile
import time
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from inproc.compare.verdicts import SLOWER, compare_runs  # noqa: E402
from inproc.history.build import build_history  # noqa: E402
from inproc.history.judged import judge_values, lasting  # noqa: E402
from inproc.history.nights import read_nights  # noqa: E402
from tests.sim.figures import simulate_figures  # noqa: E402
from tests.sim.nights import NightSettings, Plant, simulate, write_nights  # noqa: E402
from scripts.benchmarks.harness import rate_line  # noqa: E402
from scripts.benchmarks.pairs import SLOW_CELLS  # noqa: E402

THRESHOLD, WINDOW = 0.05, 10


@dataclass(frozen=True)
class Outcome:
    """One judged sequence: did it exit 1, how many planted cells were called slower on the plant's night, changes."""

    exit1: bool
    called: int  # planted cells called slower on the plant's night (when that night is the newest)
    lasting: int  # planted cells with a confirmed change starting at the plant's first night
    planted: int  # planted cells (0: no plant)
    plant_newest: bool  # the plant's first night is the newest night
    reported: int  # confirmed changes called slower or faster
    splits: int  # every confirmed change


def _planted(s: NightSettings) -> tuple[set[int], int | None]:
    if not s.plants:
        return set(), None
    return set(s.plants[0].cells), s.plants[0].nights[0]


def figure_trial(s: NightSettings, rng: np.random.Generator) -> Outcome:
    values, metrics = simulate_figures(s, rng)
    j = judge_values(values, metrics, WINDOW, THRESHOLD)
    slow = {r.row % s.cells for r in j.newest if r.verdict == SLOWER}
    cells, night = _planted(s)
    found = {c.row % s.cells for c in j.changes if c.departure.night == night}
    return Outcome(bool(slow), len(slow & cells), len(found & cells), len(cells), night == s.nights - 1,
                   len(lasting(j)), len(j.changes))


def e2e_trial(s: NightSettings, folder: Path) -> Outcome:
    write_nights(simulate(s), folder)
    h = build_history(read_nights([str(folder)]))
    cells, night = _planted(s)
    index = {cell: k for k, cell in enumerate(s.cell_shapes())}
    slow = {index[c.cell] for c in h.regressions}
    confirmed = [c for c in h.changes if not c.newest]
    found = {index[c.cell] for c in confirmed if c.night == night}
    # history lists the confirmed changes called slower or faster (a level split within the threshold is not listed)
    return Outcome(h.exit_code == 1, len(slow & cells), len(found & cells), len(cells), night == s.nights - 1,
                   len(confirmed), len(confirmed))


def _measure(outcomes: list[Outcome], what: str) -> tuple[float, int, float | None]:
    """(successes or total, trials or cells, sd of a count): cell rates count cells over every trial."""
    if what == "exit1":
        return sum(o.exit1 for o in outcomes), len(outcomes), None
    if what == "called":
        judged = [o for o in outcomes if o.plant_newest]
        return sum(o.called for o in judged), sum(o.planted for o in judged), None
    if what in ("lasting", "not_lasting"):
        k = sum(o.lasting for o in outcomes)
        n = sum(o.planted for o in outcomes)
        return (k if what == "lasting" else n - k), n, None
    counts = [getattr(o, what) for o in outcomes]
    return float(sum(counts)), len(counts), float(np.std(counts))


def history_settings(trials: int) -> list[tuple[str, NightSettings, list[tuple[str, str, str]]]]:
    last = 13
    plant = lambda size, nights: (Plant(size, nights, SLOW_CELLS),)  # noqa: E731
    return [
        ("clean, 2 % noise", NightSettings(), [("exit1", "newest night exits 1", "<= 5 %"),
                                               ("reported", "reported changes per history", "<= 0.1"),
                                               ("splits", "level splits per history", "(shown)")]),
        ("clean, 1 % noise", NightSettings(night_noise=0.01), [("exit1", "newest night exits 1", "<= 5 %"),
                                                               ("reported", "reported changes per history", "<= 0.1")]),
        ("clean, 5 % noise", NightSettings(night_noise=0.05), [("exit1", "newest night exits 1", "<= 5 %"),
                                                               ("reported", "reported changes per history", "<= 0.1")]),
        ("20 % slower on the newest night, 6 cells", NightSettings(plants=plant(0.2, (last,))),
         [("exit1", "exits 1", ">= 95 %"), ("called", "slow cells called slower that night", ">= 90 %")]),
        ("10 % slower from the newest night, 6 cells", NightSettings(plants=plant(0.1, (last,))),
         [("exit1", "exits 1 on its first night", ">= 90 %"), ("called", "slow cells called slower that night", "(shown)")]),
        ("3 % slower on the newest night (below 5 %)", NightSettings(plants=plant(0.03, (last,))),
         [("exit1", "exits 1", "(shown; the threshold is 5 %)")]),
        ("one bad night (night 11 of 14, 20 %), 6 cells", NightSettings(plants=plant(0.2, (10,))),
         [("not_lasting", "slow cells with no lasting change from it", ">= 90 %"),
          ("exit1", "newest night exits 1", "<= 5 %")]),
        ("10 % slower from night 9 on, 6 cells", NightSettings(plants=plant(0.1, tuple(range(8, 14)))),
         [("lasting", "slow cells with a change confirmed at night 9", "(shown)"),
          ("exit1", "newest night exits 1", "<= 5 %")]),
    ]


def run_history(trials: int, trials_e2e: int, seed: int) -> None:
    print(f"inproc history, 12 cells, 14 nights, threshold {THRESHOLD * 100:g} %, window {WINDOW} "
          f"(figure level: {trials} trials a setting; end to end: {trials_e2e})")
    for name, s, lines in history_settings(trials):
        rng = np.random.default_rng(seed)
        t0 = time.perf_counter()
        fig = [figure_trial(s, rng) for _ in range(trials)]
        t_fig = time.perf_counter() - t0
        e2e = []
        t0 = time.perf_counter()
        for k in range(trials_e2e):
            with tempfile.TemporaryDirectory() as d:
                e2e.append(e2e_trial(replace(s, seed=seed * 1000 + k), Path(d)))
        t_e2e = time.perf_counter() - t0
        print(f"{name}  ({t_fig:.0f} s figure level, {t_e2e:.0f} s end to end)")
        for what, label, target in lines:
            unit = "count" if what in ("reported", "splits") else "rate"
            for side, outcomes in (("figure level", fig), ("end to end", e2e)):
                if outcomes:
                    k, n, sd = _measure(outcomes, what)
                    print(rate_line(f"{label}, {side}", k, n, target, unit, sd))


def run_sequences(trials: int, seed: int) -> None:
    """Every night of a sequence judged as the newest (as a nightly job meets them): does any night fail?"""
    first, nights = 4, 14
    print(f"\nWhole sequences of {nights} nights, each night from night {first + 1} judged as the newest "
          f"(figure level, {trials} sequences a setting)")
    plant = lambda size: (Plant(size, tuple(range(7, nights)), SLOW_CELLS),)  # noqa: E731
    for name, s, what in (("clean", NightSettings(), "sequences failing on some night"),
                          ("3 % slower from night 8 on (below 5 %)", NightSettings(plants=plant(0.03)),
                           "sequences failing on some night"),
                          ("20 % slower from night 8 on", NightSettings(plants=plant(0.2)),
                           "sequences failing on night 8, its first")):
        rng = np.random.default_rng(seed)
        hits = 0
        for _ in range(trials):
            values, metrics = simulate_figures(s, rng)
            failed = [bool([r for r in judge_values(values[:, :n + 1], metrics, WINDOW, THRESHOLD).newest
                            if r.verdict == SLOWER]) for n in range(first, nights)]
            hits += failed[7 - first] if s.plants and "first" in what else any(failed)
        target = {"clean": "(shown: about 1 - (1 - rate a night) ^ 10)"}.get(name, "(shown)")
        print(name)
        print(rate_line(what, hits, trials, target))


def run_compare(trials_e2e: int, seed: int) -> None:
    print(f"\ninproc compare, a baseline of 5 runs against 1 new run, 12 cells, end to end ({trials_e2e * 3} trials a setting)")
    for name, plants, target_exit in (("clean", (), "<= 5 %"),
                                      ("10 % slower, 6 cells", (Plant(0.1, (5,), SLOW_CELLS),), "(shown)")):
        exits, called, planted = 0, 0, 0
        t0 = time.perf_counter()
        for k in range(trials_e2e * 3):
            s = NightSettings(nights=6, plants=plants, seed=seed * 7919 + k)
            recs = simulate(s)
            c = compare_runs(recs[:5], recs[5:])
            exits += c.exit_code == 1
            if plants:
                index = {cell: i for i, cell in enumerate(s.cell_shapes())}
                slow = {index[(r.context, r.concurrency)] for r in c.rows if r.verdict == SLOWER}
                called += len(slow & set(SLOW_CELLS))
                planted += len(SLOW_CELLS)
        print(f"{name}  ({time.perf_counter() - t0:.0f} s)")
        print(rate_line("exits 1", exits, trials_e2e * 3, target_exit))
        if plants:
            print(rate_line("slow cells called slower (n: cells)", called, planted, ">= 85 %"))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="bench.py verdict", description=__doc__.split("\n\n")[0])
    ap.add_argument("--trials", type=int, default=400, help="figure-level trials per setting")
    ap.add_argument("--trials-e2e", type=int, default=12, help="end-to-end trials per history setting (compare: 3x)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--only", choices=("history", "compare", "pairs"),
                    help="one part: history (and its sequences), compare against a baseline, or one run against one run")
    a = ap.parse_args(argv)
    if a.only in (None, "history"):
        run_history(a.trials, a.trials_e2e, a.seed)
        run_sequences(max(a.trials // 4, 10), a.seed)
    if a.only in (None, "compare"):
        run_compare(a.trials_e2e, a.seed)
    if a.only in (None, "pairs"):
        from scripts.benchmarks.pairs import run_pairs

        run_pairs(a.trials * 5, a.trials_e2e * 2, a.seed)
    return 0

