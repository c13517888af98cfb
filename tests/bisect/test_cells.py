"""The cells an alarm flags, read as bisect reads them: compare's JSON, and the nights history judges."""
from __future__ import annotations

import json

from inproc.bisect.cells import from_compare, from_history, parse_cell
from inproc.compare.estimate import StatSettings
from inproc.compare.verdicts import SLOWER, CompareSettings, compare_runs
from inproc.history.build import build_history
from inproc.history.nights import read_nights_checked
from inproc.record.baseline import load_runs
from inproc.render.compare.data import render_compare_json
from inproc.cli.compare_cmd import parse_run_spread
from tests.conftest import FIXTURES


def test_the_cells_of_compares_slower_rows(tmp_path):
    base, new = load_runs(str(FIXTURES / "compare" / "run-1.json")), load_runs(str(FIXTURES / "compare" / "hog.json"))
    c = compare_runs(base.runs, new.runs, CompareSettings(tests=StatSettings(run_spread=parse_run_spread("10%"))))
    path = tmp_path / "compare.json"
    path.write_text(render_compare_json(c))
    slower = sorted({(r.context, r.concurrency) for r in c.rows if r.verdict == SLOWER})
    flagged = from_compare(str(path))
    assert slower and sorted(flagged) == slower
    assert json.loads(path.read_text())["exit_code"] == 1
    rows = {(r.context, r.concurrency): r for r in c.rows if r.metric == "tok_s"}
    for cell, alarm in flagged.items():  # the spread compare's test used for the cell's tok/s
        assert alarm.sigma == rows[cell].estimate.run_spread == 0.10 and "baseline's spread" in alarm.source
    # Judged against --max-spread (one run each, nothing stated): the cells are flagged, but a maximum is no
    # measured spread, so the bisect learns its own.
    bound = compare_runs(base.runs, new.runs)
    path.write_text(render_compare_json(bound))
    flagged = from_compare(str(path))
    assert sorted(flagged) == sorted({(r.context, r.concurrency) for r in bound.rows if r.verdict == SLOWER})
    assert flagged and all(alarm is None for alarm in flagged.values())


def test_the_cells_of_the_newest_nights_regressions():
    """Three ordinary nights, then one under a CPU hog: every cell regressed on the newest night."""
    nights = [str(FIXTURES / "compare" / f"{n}.json") for n in ("run-1", "run-2", "run-3", "hog")]
    found, _ = read_nights_checked(nights)
    expected = sorted({c.cell for c in build_history(found).regressions})
    assert expected == [(256, 1), (256, 4), (1024, 1), (1024, 4)]
    flagged = from_history(nights)
    assert sorted(flagged) == expected
    spreads = build_history(found).spreads
    for cell, alarm in flagged.items():  # the spread history learned for the cell's tok/s from these nights
        assert alarm.sigma == spreads[(cell, "tok_s")].log_sd and alarm.df == spreads[(cell, "tok_s")].df
        assert "history's spread" in alarm.source
    assert from_history([str(FIXTURES / "history")]) == {}  # seven nights without a regression on the newest


def test_a_cell_as_people_write_it():
    assert parse_cell("4Kx8") == (4096, 8)
    assert parse_cell("256X2") == (256, 2)
