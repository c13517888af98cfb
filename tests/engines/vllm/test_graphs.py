"""What vLLM's graph capture took: the value its capture_model() returns, kept while the engine is built."""
from __future__ import annotations

import types

from inproc.engines.vllm import graphs
from inproc.engines.vllm.graphs import capture_memory, runner_classes
from tests.conftest import needs_vllm


class _Runner:
    """Stands in for a model runner class: capture_model returns bytes, as vLLM's do, after a while."""

    clock = [0.0]  # a fake clock: capture takes 3 s, a sizing capture 10 s

    def capture_model(self, *, profile_only: bool = False) -> int:
        self.clock[0] += 10.0 if profile_only else 3.0
        return 111 if profile_only else 2 * 2**30


def test_the_last_real_capture_is_kept_and_the_class_restored(monkeypatch):
    monkeypatch.setattr(graphs, "time", types.SimpleNamespace(perf_counter=lambda: _Runner.clock[0]))
    original = _Runner.__dict__["capture_model"]
    with capture_memory([_Runner]) as seen:
        assert seen.bytes is None
        runner = _Runner()
        assert runner.capture_model(profile_only=True) == 111 and seen.bytes is None  # sizing captures do not count
        assert runner.capture_model() == 2 * 2**30
    assert seen.bytes == 2 * 2**30
    assert seen.seconds == 3.0  # the real capture's own wall time, not the sizing capture's
    assert _Runner.__dict__["capture_model"] is original
    with capture_memory([_Runner]):
        assert "_keeping" in _Runner.__dict__["capture_model"].__qualname__  # what the real-engine test looks for


@needs_vllm
def test_cpu_engine_captures_nothing_and_leaves_vllm_as_it_was(vllm_engine):
    classes = runner_classes()
    assert classes and all("_keeping" not in c.__dict__["capture_model"].__qualname__ for c in classes)
    s = vllm_engine.info.settings
    assert s.graph_capture_memory_bytes is None and s.graph_capture_s is None  # no CUDA graph on the CPU
    assert s.graph_capture_sizes == ()  # vLLM resolved no capture size for it to use
