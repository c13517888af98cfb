"""A bisect never counts a disturbed run, and measures it again (``--retry-disturbed``, default 2)."""
from __future__ import annotations

import dataclasses
from pathlib import Path
from types import SimpleNamespace

from inproc.bisect.child import CellSpec
from inproc.bisect.oracle import OracleSettings
from inproc.bisect.runs import DISTURBED, read_outcome
from inproc.bisect.session import Sitting
from inproc.record.io import load_results, write_results
from inproc.telemetry.disturbed import Disturbance

FIXTURE = Path(__file__).resolve().parent.parent / "fixtures" / "cpu-vllm-small.json"
CAUSE = "other processes used 0.94 cores of 2 (47 %) during the window"


def test_a_disturbed_cell_gives_no_sample_and_names_its_cause(tmp_path):
    rec = load_results(str(FIXTURE))
    e = next(x for x in rec.decode if x.telemetry is not None and x.figures is not None)
    assert read_outcome(str(FIXTURE), e.context, e.concurrency).run is not None  # measured quiet: counted
    tel = dataclasses.replace(e.telemetry, disturbance=Disturbance(other_cores=0.94, causes=(CAUSE,)))
    decode = tuple(dataclasses.replace(x, telemetry=tel) if x is e else x for x in rec.decode)
    write_results(tmp_path / "r.json", dataclasses.replace(rec, decode=decode))
    got = read_outcome(str(tmp_path / "r.json"), e.context, e.concurrency)
    assert got.status == DISTURBED and got.run is None and got.reason == CAUSE


def test_the_log_line_of_a_disturbed_run_names_it_disturbed_once_then_its_cause(tmp_path, monkeypatch):
    """The run's outcome read from a results file whose cell the rule flagged, as a child's would be, then logged
    and echoed by the sitting. Wrong code this fails: the reason repeating the status ("disturbed: disturbed: ...")."""
    from inproc.bisect import session as session_mod
    from inproc.bisect.child import Measured
    from inproc.bisect.log import LogWriter, read_log

    rec = load_results(str(FIXTURE))
    e = next(x for x in rec.decode if x.telemetry is not None and x.figures is not None)
    tel = dataclasses.replace(e.telemetry, disturbance=Disturbance(other_cores=0.94, causes=(CAUSE,)))
    write_results(tmp_path / "r.json", dataclasses.replace(rec, decode=(dataclasses.replace(e, telemetry=tel),)))
    monkeypatch.setattr(session_mod, "measure", lambda spec, python, path, env: Measured(
        read_outcome(str(tmp_path / "r.json"), e.context, e.concurrency), 0, 1.0))
    targets = SimpleNamespace(ids=["a"], label=lambda i: "a", prepare=lambda i: SimpleNamespace(python="python"))
    echoed: list[str] = []
    writer = LogWriter(tmp_path / "bisect.jsonl")
    writer.header({})
    s = Sitting(targets, CellSpec("p", e.context, e.concurrency), tmp_path, OracleSettings(), writer, echoed.append)
    line = s.run_once(0, "good")
    assert echoed == [f"bisect: run 1 good a: disturbed: {CAUSE} (1 s)"]
    assert (line.status, line.reason) == (DISTURBED, CAUSE)
    assert [(r.status, r.reason) for r in read_log(tmp_path / "bisect.jsonl").runs] == [(DISTURBED, CAUSE)]


def _sitting(statuses: list[str], retry: int) -> tuple[Sitting, list[int]]:
    calls: list[int] = []
    s = Sitting(SimpleNamespace(ids=["a"]), CellSpec("p", 256, 1), Path("."), OracleSettings(retry_disturbed=retry),
                None, lambda x: None)

    def run_once(i, role):
        calls.append(i)
        return SimpleNamespace(status=statuses[len(calls) - 1])

    s.run_once = run_once
    return s, calls


def test_a_disturbed_run_is_measured_again_until_one_is_not():
    s, calls = _sitting([DISTURBED, DISTURBED, "Valid"], retry=2)
    assert s.run(0, "good").status == "Valid" and len(calls) == 3


def test_the_retries_end_at_the_count_and_zero_measures_once():
    s, calls = _sitting([DISTURBED] * 5, retry=2)
    assert s.run(0, "good").status == DISTURBED and len(calls) == 3
    s, calls = _sitting([DISTURBED] * 5, retry=0)
    assert s.run(0, "good").status == DISTURBED and len(calls) == 1


def test_a_machine_that_disturbs_every_run_ends_in_insufficient_data_never_a_call():
    from inproc.bisect.oracle import INSUFFICIENT
    from inproc.bisect.walk import measure_regression

    s = Sitting(SimpleNamespace(ids=["a", "b"]), CellSpec("p", 256, 1), Path("."),
                OracleSettings(retry_disturbed=1, max_pairs=3), None, lambda x: None)

    def run_once(i, role):
        line = SimpleNamespace(index=i, status=DISTURBED, tok_s=None, reason=CAUSE, wall_s=1.0)
        s.lines.append(line)
        s.samples.append(None)
        return line

    s.run_once = run_once
    ref = measure_regression(s)
    assert ref.verdict == INSUFFICIENT and ref.change is None
    assert ref.reason.startswith("insufficient data: 8 runs disturbed") and CAUSE in ref.reason
    assert len(s.lines) == 8  # two rounds of (bad, its retry, good, its retry): past 2 × max_pairs; none counted
