"""A disturbed cell is left out of compare's, history's and sweep's verdicts, and each says which and why
(real CPU runs as fixtures; the disturbance set on one cell as the rule would have set it)."""
from __future__ import annotations

import dataclasses

from inproc import types as st
from inproc.compare.verdicts import NOT_COMPARABLE, compare_runs
from inproc.history.build import build_history
from inproc.history.nights import read_nights
from inproc.record.io import load_results
from inproc.render.history.formats import render_history_text
from inproc.render.sweep.view import cell_values
from inproc.sweep.summary import CellSummary, VariantCell, _mark_best
from inproc.telemetry.disturbed import Disturbance
from tests.conftest import FIXTURES

RUNS = [str(FIXTURES / "compare" / f"run-{i}.json") for i in (1, 2, 3)]
CAUSE = "other processes used 1.20 cores of 2 (60 %) during the window"


def disturb(rec, cell=(256, 1)):
    def one(e):
        if (e.context, e.concurrency) != cell:
            return e
        return dataclasses.replace(e, telemetry=dataclasses.replace(
            e.telemetry, disturbance=Disturbance(other_cores=1.2, host_cores=2.0, causes=(CAUSE,))))
    return dataclasses.replace(rec, decode=tuple(one(e) for e in rec.decode))


def test_compare_calls_a_disturbed_cell_not_comparable_naming_the_side_and_the_cause():
    base = [load_results(p) for p in RUNS[:2]]
    new = disturb(load_results(RUNS[2]))
    rows = compare_runs(base, [new]).rows
    hit = [r for r in rows if (r.context, r.concurrency) == (256, 1)]
    assert hit and all(r.verdict == NOT_COMPARABLE and r.reason == f"disturbed in the new run: {CAUSE}"
                       for r in hit)
    others = [r for r in rows if (r.context, r.concurrency) != (256, 1)]
    assert others and all(r.verdict != NOT_COMPARABLE or "disturbed" not in r.reason for r in others)


def test_history_leaves_the_nights_cell_out_and_lists_it():
    nights = read_nights(RUNS)
    nights[1] = dataclasses.replace(nights[1], record=disturb(nights[1].record))
    h = build_history(nights)
    points = h.series[((256, 1), "tok_s")]
    assert points[1].figure is None and points[0].figure is not None and points[2].figure is not None
    assert f"256 x 1 at {nights[1].label} left out: disturbed: {CAUSE}" in render_history_text(h)


def test_a_disturbed_variant_is_marked_and_never_best():
    rows = _mark_best([VariantCell(1, "v=1", "1", st.VALID, total_tok_s=100.0),
                       VariantCell(2, "v=2", "2", st.VALID, total_tok_s=900.0, disturbed=f"disturbed: {CAUSE}")])
    cell = CellSummary(256, 1, rows)
    assert cell.best.index == 1 and cell.spread is None
    shown = cell_values(rows[1])
    assert shown[1] == "Valid ~ disturbed" and shown[-1] == f"disturbed: {CAUSE}"
