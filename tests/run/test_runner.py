"""The runner on the real engines: a failing cell becomes Error and the matrix goes on."""
from __future__ import annotations

from dataclasses import replace

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


def test_error_cell_then_matrix_goes_on(engine, driver, tmp_path, monkeypatch):
    runner = make_runner(engine, tmp_path / "r.json")
    fault = StepFault(engine, fail_at=3)
    monkeypatch.setattr(engine, "step", fault)
    rec = runner.run()
    first, second = rec.decode
    assert first.status == st.ERROR and "injected fault at step 3" in first.reason
    assert first.figures is None and first.error
    assert second.status == st.VALID and second.figures.output_tokens > 0
    assert not engine.has_unfinished() and rec.notes == ()  # drained, no rebuild needed
    assert rec.finished


def test_engine_rebuilt_when_it_cannot_recover(engine, driver, tmp_path, monkeypatch):
    import inproc.run.runner as runner_mod

    # The engine keeps failing for 20,000 steps: draining gives up, so the runner rebuilds.
    fault = StepFault(engine, fail_at=3, times=20_000)
    rebuilt = []

    def rebuild(launch):  # hands back the same engine, healed (one engine per test process)
        monkeypatch.setattr(engine, "step", fault.real)
        rebuilt.append(launch.engine)
        return engine

    monkeypatch.setattr(runner_mod, "build_engine", rebuild)
    runner = make_runner(engine, tmp_path / "r.json")
    monkeypatch.setattr(engine, "step", fault)
    monkeypatch.setattr(engine, "shutdown", lambda: None)  # keep the shared engine alive
    rec = runner.run()
    assert rebuilt == [engine.info.name]
    assert rec.decode[0].status == st.ERROR
    assert rec.decode[1].status == st.VALID
    assert any(n.startswith("engine rebuilt after RuntimeError") for n in rec.notes)
    assert not engine.has_unfinished()
