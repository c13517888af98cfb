"""A run in which no cell was measured ends with its own exit code, never 0."""
from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from inproc.cli.options import exit_code
from inproc.measure.judge import Verdict
from inproc.record.io import load_results
from inproc.run.outcome import NOTHING_MEASURED_EXIT_CODE, nothing_measured
from inproc.types import ERROR, EXCEEDS_MAX_LEN, LOOPED, OVER_CAPACITY, QUEUED, VALID

FIXTURE = Path(__file__).parents[1] / "fixtures" / "cpu-vllm-small.json"


def with_statuses(prefill: list[str], decode: list[str]):
    rec = load_results(FIXTURE)
    assert len(rec.prefill) >= len(prefill) and len(rec.decode) >= len(decode)
    return dataclasses.replace(
        rec,
        prefill=tuple(dataclasses.replace(e, verdict=Verdict(s, "", ())) for e, s in zip(rec.prefill, prefill)),
        decode=tuple(dataclasses.replace(e, verdict=Verdict(s, "", ())) for e, s in zip(rec.decode, decode)))


def test_the_exit_code_is_none_of_the_others():
    assert NOTHING_MEASURED_EXIT_CODE not in (0, 1, 2, 3, 130)


def test_every_cell_error_is_nothing_measured(capsys):
    rec = with_statuses([ERROR], [ERROR, ERROR, OVER_CAPACITY])
    assert nothing_measured(rec) == "3 Error, 1 Over capacity"
    assert exit_code(rec) == NOTHING_MEASURED_EXIT_CODE
    assert "No cell was measured (3 Error, 1 Over capacity)" in capsys.readouterr().err


def test_cells_decided_without_running_measure_nothing():
    assert nothing_measured(with_statuses([], [OVER_CAPACITY, EXCEEDS_MAX_LEN])) is not None
    assert nothing_measured(with_statuses([], [])) == "the plan holds no cell"


@pytest.mark.parametrize("measured", [VALID, QUEUED, LOOPED])
def test_one_measured_entry_is_success(measured, capsys):
    assert nothing_measured(with_statuses([], [ERROR, measured])) is None
    assert nothing_measured(with_statuses([measured], [ERROR])) is None  # a prefill row counts too
    assert exit_code(with_statuses([], [measured, ERROR])) == 0
    assert capsys.readouterr().err == ""
