"""The runner on the real engines: a failing cell becomes Error and the matrix goes on."""
from __future__ import annotations

from dataclasses import replace

import pytest

from inproc import types as st
from inproc.plan.matrix import make_plan
from inproc.profiles.spec import load_profile
from inproc.record.schema import Machine, RunPlan
from inproc.run.progress import Progress
from inproc.run.runner import RunContext, Runner
from inproc.run.session import new_record
from tests.conftest import DEFAULT_PROFILES


class StepFault:
    """Fault injection (a stand-in for an engine crash, not for its arithmetic): raise on step N."""

    def __init__(self, engine, fail_at: int, times: int = 1) -> None:
        self.engine, self.real, self.fail_at, self.times, self.calls = engine, engine.step, fail_at, times, 0

    def __call__(self):
        self.calls += 1
        if self.fail_at <= self.calls < self.fail_at + self.times:
            raise RuntimeError(f"injected fault at step {self.calls}")
        return self.real()


def make_runner(engine, out, concurrency=(1, 2), telemetry=None, **settings):
    """A runner over a small plan on the session engine of ``engine``'s kind (sampled by ``telemetry``, wired
    as a run wires it: its window edges marked by the driver)."""
    profile = load_profile(DEFAULT_PROFILES[engine.info.name])
    s = replace(profile.matrix, **{"contexts": (128,), "concurrency": concurrency, "window_s": 0.4, "max_output": 16,
                                   "prefill_contexts": (), **settings})
    plan = make_plan(s, engine.info.capacity, seed=3)
    record = new_record(profile, RunPlan(s, 3), engine.info, 0.0, 0.0, "test", Machine())
    return Runner(RunContext(profile.launch, str(out), Progress(len(plan.cells))), engine, plan, record, telemetry)


def fault_after_first_entry(runner, fault: "StepFault", steps: int = 3) -> None:
    """Arm ``fault`` for the ``steps``-th engine step after the runner's first entry is kept: a cell that fails
    once something was measured (a failing first entry ends the run instead: test_first_entry_failing_...)."""
    append = runner._append

    def armed(entry):
        append(entry)
        if len(runner.record.decode) == 1:
            fault.fail_at = fault.calls + steps

    runner._append = armed


def test_error_cell_then_matrix_goes_on(engine, driver, tmp_path, monkeypatch):
    runner = make_runner(engine, tmp_path / "r.json", concurrency=(1, 2, 4))
    fault = StepFault(engine, fail_at=10**9)
    monkeypatch.setattr(engine, "step", fault)
    fault_after_first_entry(runner, fault)
    rec = runner.run()
    first, failed, third = rec.decode
    assert first.status == st.VALID and first.figures.output_tokens > 0
    assert failed.status == st.ERROR and f"injected fault at step {fault.fail_at}" in failed.reason
    assert failed.figures is None and failed.error
    assert third.status == st.VALID and third.figures.output_tokens > 0
    assert not engine.has_unfinished() and rec.notes == ()  # drained, no rebuild needed
    assert rec.finished


def test_first_entry_failing_is_one_line_and_no_results_file(engine, driver, tmp_path, monkeypatch):
    # Nothing measured yet: the engine's failure ends the run as one line naming it (exit 2 at the CLI), no file.
    # Would fail: the first entry kept as an Error entry (the old way), or a manifest begun before it.
    from inproc.errors import EngineFailed

    out = tmp_path / "r.json"
    runner = make_runner(engine, out)
    monkeypatch.setattr(engine, "step", StepFault(engine, fail_at=3))
    with pytest.raises(EngineFailed) as failed:
        runner.run()
    assert "in its first measured entry: RuntimeError: injected fault at step 3" in str(failed.value)
    assert "\n" not in str(failed.value)
    # Nothing written but the claim's lock file, which stays by design (record/claim.py).
    assert [p.name for p in tmp_path.iterdir()] in ([], [".r.json.lock"])


def test_first_entry_failing_over_nodes_is_recovered_before_it_is_blamed_on_the_settings(engine, driver, tmp_path,
                                                                                          monkeypatch):
    # Ranks on another node: a failing step may be that node lost, which only the recovery tells (its rebuild
    # waits for the lost ranks until the step watchdog ends the run, exit 3). Here the recovery succeeds, so the
    # failure was the engine's own: one line, no file. Would fail: the one-line error raised before recovering
    # (a killed worker then reads as bad settings, exit 2), or the first entry kept as an Error entry.
    from inproc.errors import EngineFailed

    out = tmp_path / "r.json"
    runner = make_runner(engine, out)
    assert not runner.spans_nodes()  # the engine of the session runs on this node alone
    runner.record = replace(runner.record, placement=st.Placement(2, 2, ((0,), (1,)), 0, "mp", "127.0.0.1:29501"))
    assert runner.spans_nodes()
    recovered = []
    real_recover = runner._recover
    monkeypatch.setattr(runner, "_recover", lambda error: (recovered.append(str(error)), real_recover(error)))
    monkeypatch.setattr(engine, "step", StepFault(engine, fail_at=3))
    with pytest.raises(EngineFailed) as failed:
        runner.run()
    assert recovered == ["injected fault at step 3"]
    assert "in its first measured entry: RuntimeError: injected fault at step 3" in str(failed.value)
    assert not engine.has_unfinished()  # the recovery drained the engine before the run ended
    assert [p.name for p in tmp_path.iterdir()] in ([], [".r.json.lock"])


def test_engine_rebuilt_when_it_cannot_recover(engine, driver, tmp_path, monkeypatch):
    import inproc.run.runner as runner_mod

    # The engine keeps failing for 20,000 steps: draining gives up, so the runner rebuilds.
    fault = StepFault(engine, fail_at=10**9, times=20_000)
    rebuilt = []

    def rebuild(launch):  # hands back the same engine, healed (one engine per test process)
        monkeypatch.setattr(engine, "step", fault.real)
        rebuilt.append(launch.engine)
        return engine

    monkeypatch.setattr(runner_mod, "build_engine", rebuild)
    runner = make_runner(engine, tmp_path / "r.json", concurrency=(1, 2, 4))
    monkeypatch.setattr(engine, "step", fault)
    monkeypatch.setattr(engine, "shutdown", lambda: None)  # keep the shared engine alive
    fault_after_first_entry(runner, fault)
    rec = runner.run()
    assert rebuilt == [engine.info.name]
    assert [e.status for e in rec.decode] == [st.VALID, st.ERROR, st.VALID]
    assert any(n.startswith("engine rebuilt after RuntimeError") for n in rec.notes)
    assert not engine.has_unfinished()
