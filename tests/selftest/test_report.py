"""The selftest's report: the table, the verdict, the JSON record (saved records as the checks write them)."""
from __future__ import annotations

import json

import pytest

from inproc.errors import UsageError
from inproc.selftest.report import Check, SelftestReport, load, save, table


def _report(*oks: bool) -> SelftestReport:
    checks = tuple(Check(f"mode: capability {i}", ok, f"reason {i}") for i, ok in enumerate(oks))
    return SelftestReport("eng", "Eng", "1.2.3", "abc123", "CPU", checks, 12.5)


def test_the_table_marks_each_capability_and_the_verdict_follows_the_rows():
    good, bad = _report(True, True), _report(True, False)
    assert good.passed and not bad.passed and not _report().passed
    text = table(bad)
    assert text.splitlines()[0] == "Eng 1.2.3 · commit abc123 · CPU"
    assert "mode: capability 0  ✓  reason 0" in text and "mode: capability 1  ✗  reason 1" in text
    assert "selftest FAILED (mode: capability 1): 1/2 checks on Eng 1.2.3 (commit abc123), CPU" in text
    assert good.summary().startswith("selftest passed: 2/2 checks")


def test_the_record_round_trips_and_a_foreign_file_is_one_line(tmp_path):
    path = tmp_path / "st.json"
    save(_report(True, False), str(path))
    assert load(str(path)) == _report(True, False)
    assert json.loads(path.read_text())["passed"] is False and json.loads(path.read_text())["format"] == 1
    (tmp_path / "other.json").write_text('{"schema_version": 7}')
    with pytest.raises(UsageError, match=r"other\.json is not an `inproc selftest --out` record"):
        load(str(tmp_path / "other.json"))


def test_a_row_not_checked_neither_passes_nor_fails():
    checks = (Check("a", True, "held"), Check("b", None, "not forced here"))
    report = SelftestReport("eng", "Eng", "1", "c", "CPU", checks, 1.0)
    assert report.passed and "b  –  not forced here" in table(report) and "1/1 checks" in report.summary()
    assert not SelftestReport("eng", "Eng", "1", "c", "CPU", checks[1:], 1.0).passed
