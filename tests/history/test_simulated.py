"""inproc history and compare on simulated nights whose truth is known (``tests.sim``), written by inproc's writer.

Each case is one seeded sequence, read back from the files as ``inproc history`` reads a
store. The rates over many sequences are ``scripts/bench.py verdict``'s; these hold the
behaviours: the night a change is called on, what it is blamed on, outliers, the diagnosis.
"""
from __future__ import annotations

from pathlib import Path

import pytest

from inproc.compare.verdicts import SLOWER, compare_runs
from inproc.history.build import build_history
from inproc.history.nights import read_nights
from inproc.render.history.formats import render_history_text
from tests.sim.nights import NightSettings, Plant, simulate, write_nights

SLOW = (0, 2, 4, 6, 8, 10)


def history(tmp_path: Path, s: NightSettings, results_files: bool = False):
    write_nights(simulate(s), tmp_path, summaries=not results_files)
    return build_history(read_nights([str(tmp_path)]))


def cells(s: NightSettings, idx) -> set[tuple[int, int]]:
    shapes = s.cell_shapes()
    return {shapes[k] for k in idx}


def test_a_clean_sequence_is_quiet(tmp_path):
    s = NightSettings(seed=3)
    h = history(tmp_path, s)
    assert h.exit_code == 0 and h.changes == ()
    # Each row's newest night is judged against the last 10 nights of its level, an outlier night left out.
    for c in h.newest:
        dropped = {o.night for o in h.outliers if (o.cell, o.metric) == (c.cell, c.metric)}
        assert c.before == tuple(i for i in range(13) if i not in dropped)[-10:]
    assert len(h.newest) == 36 and len(h.outliers) <= 4
    tok = [sp for (cell, m), sp in h.spreads.items() if m == "tok_s"]
    assert all(0.012 < sp.log_sd < 0.03 for sp in tok)  # the simulated 2 % night-to-night noise, learned


def test_a_slowdown_on_the_newest_night_is_called_on_it_and_blamed_on_nothing_before(tmp_path):
    s = NightSettings(seed=5, plants=(Plant(0.2, (13,), SLOW),))
    h = history(tmp_path, s)
    assert h.exit_code == 1 and {c.cell for c in h.regressions} == cells(s, SLOW)
    assert all(c.newest and c.night == 13 for c in h.changes)  # night 12 was clean: nothing starts there
    c = next(c for c in h.regressions if c.metric == "tok_s")
    assert 0.78 < c.estimate.ratio < 0.88 and c.estimate.at_least > 1.05
    assert c.diagnosis.startswith("forward time per step +"), c.diagnosis  # the planted part, named first
    assert "Regression: night-14 starts a regression in 6 cell(s)" in render_history_text(h)


def test_a_host_slowdown_is_named_as_host_time(tmp_path):
    s = NightSettings(seed=6, plants=(Plant(0.2, (13,), SLOW, part="host"),))
    h = history(tmp_path, s)
    c = next(c for c in h.regressions if c.metric == "tok_s")
    assert c.diagnosis.startswith("host time per step +"), c.diagnosis


def test_a_single_bad_night_is_an_outlier_and_not_a_lasting_change(tmp_path):
    s = NightSettings(seed=7, plants=(Plant(0.2, (10,), SLOW),))
    h = history(tmp_path, s)
    assert h.exit_code == 0 and not [c for c in h.changes if not c.newest]
    assert {o.cell for o in h.outliers if o.night == 10} == cells(s, SLOW)
    assert all(10 not in c.before for c in h.newest if c.cell in cells(s, SLOW))  # the level held without it
    assert "night-11 +" in render_history_text(h) or "night-11 −" in render_history_text(h)


def test_a_lasting_slowdown_is_a_change_from_its_first_night_and_fails_only_that_night(tmp_path):
    s = NightSettings(seed=8, plants=(Plant(0.15, tuple(range(8, 14)), SLOW),))
    h = history(tmp_path, s)
    lasting = [c for c in h.changes if not c.newest]
    assert {c.cell for c in lasting if c.verdict == SLOWER} == cells(s, SLOW)
    assert {(c.night, c.confirmed_by) for c in lasting} == {(8, 9)}
    assert h.exit_code == 0  # the newest night continues the slow level: it does not fail every night after
    first = history(tmp_path / "first", NightSettings(seed=8, nights=9, plants=s.plants))
    assert first.exit_code == 1 and {c.cell for c in first.regressions} == cells(s, SLOW)


def test_results_files_give_the_same_history_as_their_summaries(tmp_path):
    s = NightSettings(seed=9, nights=6, cells=4, plants=(Plant(0.2, (5,), (1, 3)),))
    a = history(tmp_path / "a", s)
    b = history(tmp_path / "b", s, results_files=True)
    assert [(c.cell, c.metric, c.verdict) for c in a.changes] == [(c.cell, c.metric, c.verdict) for c in b.changes]
    for x, y in zip(a.newest, b.newest):
        assert (x.estimate is None) == (y.estimate is None)
        if x.estimate is not None:
            assert x.estimate.ratio == pytest.approx(y.estimate.ratio, rel=1e-12)


def test_a_baseline_of_five_runs_learns_its_spread_and_calls_a_ten_percent_slowdown():
    s = NightSettings(nights=6, seed=11, plants=(Plant(0.1, (5,), SLOW),))
    recs = simulate(s)
    c = compare_runs(recs[:5], recs[5:])
    slow = {(r.context, r.concurrency) for r in c.rows if r.verdict == SLOWER}
    assert c.exit_code == 1 and slow <= cells(s, SLOW) and len(slow) >= 4
    assert all(r.estimate.spread_source.startswith("learned from 5 baseline runs and 1 new run") for r in c.rows)
    clean = compare_runs(recs[:4], recs[4:5])  # night 5 is clean
    assert clean.exit_code == 0
