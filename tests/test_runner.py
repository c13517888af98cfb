"""The runner on the real engine: a failing cell becomes Error and the matrix goes on."""
from __future__ import annotations

from dataclasses import replace


from inproc import status as st
from inproc.plan import make_plan
from inproc.profile import load_profile
from inproc.runner import RunContext, Runner, new_record
from tests.conftest import DEFAULT_PROFILE, needs_vllm

pytestmark = needs_vllm


class StepFault:
    """Fault injection (a stand-in for an engine crash, not for its arithmetic): raise on step N."""

    def __init__(self, engine, fail_at: int, times: int = 1) -> None:
        self.engine, self.real, self.fail_at, self.times, self.calls = engine, engine.step, fail_at, times, 0

    def __call__(self):
        self.calls += 1
        if self.fail_at <= self.calls < self.fail_at + self.times:
            raise RuntimeError(f"injected fault at step {self.calls}")
        return self.real()


def _runner(engine, tmp_path, concurrency=(1, 2)):
    profile = load_profile(DEFAULT_PROFILE)
    settings = replace(profile.matrix, contexts=(128,), concurrency=concurrency, window_s=0.4, max_output=16,
                       prefill_contexts=())
    plan = make_plan(settings, engine.info.capacity, seed=3)
    record = new_record(profile, plan, engine, "test", {})
    return Runner(RunContext(profile, str(tmp_path / "r.json")), engine, plan, record)


def test_error_cell_then_matrix_goes_on(vllm_engine, tmp_path, monkeypatch):
    runner = _runner(vllm_engine, tmp_path)
    runner.warm_up()  # the fault is for the cells, not the warm-up
    assert runner.record.engine["warmup_s"] > 0
    fault = StepFault(vllm_engine, fail_at=3)
    monkeypatch.setattr(vllm_engine, "step", fault)
    rec = runner.run()
    first, second = rec.decode
    assert first.status == st.ERROR and "injected fault at step 3" in first.reason
    assert first.figures is None and first.error
    assert second.status == st.VALID and second.figures.output_tokens > 0
    assert not vllm_engine.has_unfinished() and rec.notes == []  # drained, no rebuild needed
    assert rec.finished


def test_engine_rebuilt_when_it_cannot_recover(vllm_engine, tmp_path, monkeypatch):
    import inproc.runner as runner_mod

    # The engine keeps failing for 20,000 steps: draining gives up, so the runner rebuilds.
    fault = StepFault(vllm_engine, fail_at=3, times=20_000)
    monkeypatch.setattr(vllm_engine, "step", fault)
    rebuilt = []

    def rebuild(profile):  # hands back the same engine, healed (one engine per test process)
        monkeypatch.setattr(vllm_engine, "step", fault.real)
        rebuilt.append(profile.name)
        return vllm_engine

    monkeypatch.setattr(runner_mod, "build_engine", rebuild)
    runner = _runner(vllm_engine, tmp_path)
    monkeypatch.setattr(vllm_engine, "step", fault.real)
    runner.warm_up()
    monkeypatch.setattr(vllm_engine, "step", fault)
    monkeypatch.setattr(vllm_engine, "shutdown", lambda: None)  # keep the shared engine alive
    rec = runner.run()
    assert rebuilt == ["cpu-vllm-tiny-llama"]
    assert rec.decode[0].status == st.ERROR
    assert rec.decode[1].status == st.VALID
    assert any(n.startswith("engine rebuilt after RuntimeError") for n in rec.notes)
    assert not vllm_engine.has_unfinished()
