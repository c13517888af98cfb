"""The whole bisect (check of the reference, sequential calls, search, result) on simulated machines, truth known.

The sitting is ``inproc bisect``'s own (:func:`inproc.bisect.walk.walk`), its children replaced by
a measurer (``tests/bisect/sim.py``); every seed is fixed. ``scripts/bench.py bisect`` runs the
same trials by the hundred and prints the rates.
"""
from __future__ import annotations

import math
from collections import Counter
from dataclasses import replace
from pathlib import Path

import numpy as np

from inproc.bisect.child import CellSpec
from inproc.bisect.oracle import OracleSettings, regressed
from inproc.bisect.report import render_markdown, result
from inproc.bisect.runs import UNITS, RunSample
from inproc.bisect.session import Sitting, kept_pairs
from inproc.bisect.walk import walk
from tests.bisect.sim import QUIET, TWO_CLUSTERS, Drift, NoLog, Targets, Truth, bisect, trial


def test_a_10pct_regression_at_a_2pct_run_spread_is_found_within_the_default_budget():
    got = Counter(trial(k, 11, 0.10, 0.02, QUIET)[0] for k in range(60))
    assert got["wrong"] == 0
    assert got["right"] >= 54, got  # 90 %


def test_a_drifting_machine_never_makes_it_name_a_wrong_commit():
    """Runs slowed 1-6x at random and slow stretches, over regressions of 5-20 % at run spreads of 2-10 %."""
    got = Counter(trial(k, 12, (0.05, 0.10, 0.20)[k % 3], (0.02, 0.05, 0.10)[k // 3 % 3], Drift())[0]
                  for k in range(60))
    assert got["wrong"] == 0, got
    assert got["right"] >= 5 and got["insufficient"] >= 5, got  # it finds some, and says when it cannot


def test_no_change_is_rarely_a_regression_and_never_a_commit():
    called = 0
    for k in range(60):
        r, s = bisect(replace(Truth(), regression=0.0, run_sd=0.02), QUIET, 500 + k)
        assert r.first_bad is None and r.exit_code == 1
        called += regressed(s.ref)
    assert called <= 6  # the looks spend 5 % in all: at most 3 of 60 expected


def scripted(figures: dict[int, list[float]], settings: OracleSettings, count: int = 9) -> Sitting:
    """A sitting whose runs measure the given tok/s per revision, in order (the last repeated)."""
    given = {i: list(v) for i, v in figures.items()}

    def measure(i: int, n: int):
        queue = given[i if i in given else (0 if i < count // 2 else count - 1)]
        tok_s = queue.pop(0) if len(queue) > 1 else queue[0]
        return RunSample(np.ones(UNITS), np.full(UNITS, 1 / tok_s)), 15.0

    return Sitting(Targets(count), CellSpec("simulated", 256, 2), Path("."), settings, NoLog(), lambda x: None,
                   measurer=measure)


def test_a_good_revision_whose_runs_vary_5x_ends_in_insufficient_data():
    """The good runs a loaded 2-core machine measured (56.4-170 tok/s), the bad ones as loaded; a stated 10 %."""
    s = scripted({0: [56.4, 30.7, 170.0, 148.4, 63.4], 8: [40.0, 150.0, 24.0, 132.0, 58.0]},
                 OracleSettings(run_spread=0.10, max_pairs=5))
    walk(s, 0)
    r = result(s)
    assert r.exit_code == 1 and r.first_bad is None
    assert r.headline.startswith("Insufficient data: the good revision's runs varied from 30.7 to 170.0 tok/s")
    assert len(s.runs_of(8)) == 5  # re-measured, interleaved, up to --max-pairs


def test_a_pair_measured_in_a_slow_stretch_is_no_verdict_and_the_report_marks_it():
    s = scripted({0: [160.0, 161.0, 159.0, 162.0, 53.0, 160.5, 158.5, 161.5], 8: [140.0, 141.0, 139.5, 140.5],
                  4: [53.5, 160.0, 160.2]}, OracleSettings())
    for i in (8, 0, 8, 0, 8, 0, 8, 0):
        s.run(i, "bad" if i else "good")
    s.run(4, "candidate")
    s.run(0, "good")  # the stretch: the candidate and the good run after it, both 3x slower
    lv = s.levels()
    assert 9 in lv.off and kept_pairs(s, lv, 4) == ([], [])
    for _ in range(2):
        s.run(4, "candidate")
        s.run(0, "good")
    cand, good = kept_pairs(s, s.levels(), 4)  # only the run whose good neighbours are both on the level
    assert [round(r.tok_s, 1) for r in cand] == [160.2] and [round(r.tok_s, 1) for r in good] == [160.5, 158.5]
    report = render_markdown(result(s))
    assert "the good revision's level 160" in report and "53.0*" in report


def test_the_spread_comes_from_the_alarm_when_given_and_is_replaced_when_the_runs_show_more():
    quiet = scripted({0: [160.0, 161.5, 158.7, 160.2], 8: [140.0, 141.0, 139.2]},
                     OracleSettings(run_spread=0.01, spread_df=20, spread_source="history's spread of the cell"))
    walk(quiet, 0)
    assert regressed(quiet.ref) and quiet.ref.change.spread.source == "history's spread of the cell" and not quiet.ref.change.spread.switched
    noisy = scripted({0: [160.0, 190.0, 140.0, 175.0, 150.0], 8: [140.0, 120.0, 160.0, 110.0]},
                     OracleSettings(run_spread=0.01, spread_source="history's spread of the cell"))
    walk(noisy, 0)
    spread = noisy.ref.change.spread  # the spread the regression was called with
    assert spread.switched and spread.sigma > 0.05 and "more than history's spread of the cell (1.0 %)" in spread.source


def test_the_wall_time_budget_stops_the_sitting():
    budget = OracleSettings(budget_s=300.0, max_pairs=20)
    r, s = bisect(replace(Truth(), regression=0.05, run_sd=0.05), QUIET, 3, budget)
    spent = s.spent_s()
    assert r.first_bad is None
    assert 300 <= spent <= 300 + 4 * 15 * 1.3  # stops at the first look past it (a pair of children)
    assert math.isfinite(spent)


def test_a_slowdown_the_runs_cannot_rule_out_is_insufficient_data_not_no_regression():
    """The runs of a bisect of a plant of about a sixth of a step (tok/s as measured on the 2-core machine): bad
    0.82x good with an interval reaching 0.66x. "No regression" would deny what the runs allow; only an interval
    clear of the threshold says it."""
    good = [319.9, 297.3, 359.8, 268.1, 269.8, 247.3, 260.9, 306.1]
    bad = [300.4, 301.8, 264.5, 227.2, 187.8, 201.5, 184.7, 254.7]
    s = scripted({0: good, 8: bad}, OracleSettings())
    walk(s, 0)
    r = result(s)
    assert r.exit_code == 1 and r.first_bad is None and not regressed(s.ref)
    assert s.ref.change.interval.low < 0.95
    assert r.headline.startswith("Insufficient data: bad against good is 0.8"), r.headline
    assert "No regression" not in r.headline

    tight = scripted({0: [200.0, 201.0, 199.0, 200.5, 199.5, 200.2, 199.8, 200.1],
                      8: [199.0, 200.5, 198.8, 199.9, 200.3, 199.2, 199.6, 200.0]}, OracleSettings())
    walk(tight, 0)
    r = result(tight)
    assert r.exit_code == 1 and tight.ref.change.interval.low >= 0.95
    assert r.headline.startswith("No regression to bisect: bad against good is within the noise"), r.headline


def test_good_runs_in_two_clusters_end_in_insufficient_data():
    """The loaded bisect's good runs: near 96 tok/s, then near 10 (another program's load came back), and so on."""
    s = scripted({0: [96.9, 96.0, 9.4, 11.2, 116.0, 23.0, 67.0], 8: [12.0, 10.5, 60.0, 9.0, 11.0, 70.0]},
                 OracleSettings())
    walk(s, 0)
    r = result(s)
    assert r.exit_code == 1 and r.first_bad is None and not s.verdicts
    assert r.headline == "Insufficient data: the good revision's runs fall in two clusters (9.4–23.0 and 96.0–116.0 tok/s)."
    assert len(s.runs_of(0)) == 6  # stopped at the look that saw them: more pairs cannot make one level of two


def test_a_machine_loaded_half_the_time_in_spells_never_names_a_commit():
    """About half the runs 3-12x slower, at random and in spells: every sitting ends insufficient data, most of them
    naming the two clusters (``scripts/bench.py bisect`` runs 540 such trials)."""
    heads = Counter()
    for k in range(30):
        outcome, s = trial(k, 21, (0.05, 0.10, 0.20)[k % 3], (0.02, 0.05, 0.10)[k // 3 % 3], TWO_CLUSTERS)
        assert outcome == "insufficient", (k, result(s).headline)
        heads["two clusters" in result(s).headline] += 1
    assert heads[True] >= 24, heads


def test_candidates_called_before_the_clusters_showed_name_no_commit():
    """Calls made while the good runs still agreed stand on nothing once they split: the result names no commit."""
    s = scripted({0: [160.0, 161.0, 159.0, 160.5, 158.0, 160.2, 40.0, 38.0, 41.0, 39.0, 42.0, 40.5, 39.5],
                  8: [100.0, 101.0, 99.0, 100.5], 4: [100.0, 100.8, 99.5], 2: [159.0, 160.5]}, OracleSettings())
    walk(s, 0)
    r = result(s)
    assert s.verdicts[4].verdict == "bad"  # called on runs beside good runs that still agreed
    assert r.first_bad is None and r.exit_code == 1 and r.headline == (
        "Insufficient data: the good revision's runs fall in two clusters (38.0–41.0 and 158.0–161.0 tok/s).")
