"""inproc history on real nights whose newest one it could not judge: three quiet nights of the CPU default, and a
fourth measured beside a 0.5-core burner of another program, whose cells the disturbance rule flagged.

Fixtures: ``tests/fixtures/history-disturbed/`` (compact summaries of those four runs; see its README). What the
tests assert comes from the files: which cells of the newest night carry a cause, and which were measured.
"""
from __future__ import annotations

import pytest

from inproc.history.build import build_history
from inproc.history.nights import read_nights
from inproc.render.history.formats import render_history_markdown, render_history_text
from inproc.render.history.lines import verdict_line
from inproc.units import format_tokens
from tests.cli.test_cli import inproc
from tests.conftest import FIXTURES

pytestmark = pytest.mark.engine_free  # its CLI test runs a command that builds no engine

FOLDER = FIXTURES / "history-disturbed"
QUIET = [str(FOLDER / f"quiet-{i}.summary.json") for i in (1, 2, 3)]
BURNT = str(FOLDER / "burner.summary.json")


def _flagged(path: str) -> set[tuple[int, int]]:
    """The Valid cells of a night the rule flagged, read from the file."""
    (night,) = read_nights([path], at_least=1)
    return {(e.context, e.concurrency) for e in night.record.decode if e.status == "Valid" and e.disturbed}


def test_the_fixtures_are_what_the_tests_need():
    # The newest night: every cell flagged for the burner's CPU (the quiet nights may have a cell flagged for steal).
    (night,) = read_nights([BURNT], at_least=1)
    assert _flagged(BURNT) == {(e.context, e.concurrency) for e in night.record.decode} != set()
    assert all(e.disturbed.startswith("disturbed: other processes used ") for e in night.record.decode)


def test_a_newest_night_with_cells_it_could_not_judge_exits_3_and_names_them():
    """Wrong code this fails: the left-out cells forgotten in the exit code (0) or the verdict ("not slower"),
    a cell named that the file does not flag, a flagged cell not named."""
    h = build_history(read_nights(QUIET + [BURNT]))
    flagged = _flagged(BURNT)
    assert h.regressions == () and h.exit_code == 3
    assert {cell for cell, why in h.unjudged if why.startswith("disturbed: ")} == flagged
    line = verdict_line(h)
    assert line.startswith("Insufficient data: burner could not be judged in any cell: "), line
    for text in (render_history_text(h), render_history_markdown(h)):
        assert line in text and "not slower" not in text and "No regression" not in text
        for cell in flagged:
            assert f"{format_tokens(cell[0])} x {cell[1]} (disturbed: other processes used " in text


def test_a_newest_night_with_one_cell_left_out_names_it_and_the_rest_as_insufficient():
    """The quiet nights alone: the third's 256 x 1 was flagged (another program and steal), its 256 x 4 has too few
    nights beside it (the second night's 256 x 4 was flagged)."""
    assert _flagged(QUIET[-1]) == {(256, 1)} and _flagged(QUIET[1]) == {(256, 4)}
    h = build_history(read_nights(QUIET))
    assert [cell for cell, _ in h.unjudged] == [(256, 1)] and h.exit_code == 3
    line = verdict_line(h)
    assert line.startswith("Insufficient data: quiet-3 could not be judged in any cell: 256 x 1 (disturbed: "), line
    assert "; the other 1: insufficient data (" in line


@pytest.mark.engine  # starts `python -m inproc`
def test_the_history_command_exits_3():
    p = inproc("history", *QUIET, BURNT)
    assert p.returncode == 3, p.stderr
    assert "not slower" not in p.stdout and "left out: disturbed: " in p.stdout
