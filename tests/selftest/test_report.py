"""The selftest's report: the table, the verdict, the JSON record (saved records as the checks write them)."""
from __future__ import annotations

import dataclasses
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


def test_a_run_attaches_the_record_to_its_results_notes(tmp_path):
    """``inproc run --selftest FILE`` notes the verdict; a record of another build says so (saved results file)."""
    import shutil

    from inproc.record.io import load_results
    from inproc.selftest.report import attach
    from tests.conftest import FIXTURES

    path = tmp_path / "r.json"
    shutil.copy(FIXTURES / "cpu-vllm-small.json", path)
    record = load_results(path)
    same = SelftestReport(record.engine.name, "X", record.engine.version, "c", "CPU", (Check("a", True, "ok"),), 1.0)
    attach(record, same, str(path))
    assert load_results(path).notes[-1] == same.summary()
    other = dataclasses.replace(same, version="0.0.1")
    cells = {p: (p.stat().st_mtime_ns, p.read_bytes()) for p in (tmp_path / "r.cells").iterdir()}
    cell_files = [p for p in cells if p.name.endswith(".json.gz")]  # each beside its Parquet tables
    assert len(cell_files) == len(record.prefill) + len(record.decode)  # the older inline file got its cell files, once
    attach(load_results(path), other, str(path))
    assert load_results(path).notes[-1].endswith("not the build the selftest checked")
    assert {p: (p.stat().st_mtime_ns, p.read_bytes()) for p in (tmp_path / "r.cells").iterdir()} == cells  # manifest only


def test_a_bad_selftest_file_is_one_line_before_anything_is_built(tmp_path, capsys):
    from inproc.cli.main import main
    from tests.conftest import DEFAULT_PROFILE

    bad = tmp_path / "bad.json"
    bad.write_text("[]")
    with pytest.raises(SystemExit) as e:
        main(["run", str(DEFAULT_PROFILE), "--selftest", str(bad), "--out", str(tmp_path / "r.json")])
    assert e.value.code == 2 and not (tmp_path / "r.json").exists()
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert line.startswith("Error: ") and "bad.json is not an `inproc selftest --out` record" in line
