"""The kernel pass inside the decode loop (``inproc.run.kernelpass``): after the window and the anatomy's pass,
never over a window step, and a pass that cannot run leaves its reason and the cell as measured.

The engine is the scripted fake (a fake clock, no model) with a forward stood in by real torch
matrix multiplies (one per running request), so torch's real profiler has operators to count.
"""
from __future__ import annotations

import itertools

import numpy as np
import pytest

from inproc.engines.base import KernelsUnavailable
from inproc.measure import metrics as m
from inproc.plan.prompts import CellPrompts, PromptFactory
from inproc.run.decode import DecodeCell, DecodeSettings
from tests.fakes.fake_engine import FakeEngine, FakeScript

torch = pytest.importorskip("torch")


class MatmulEngine(FakeEngine):
    """The fake engine, each step running one real ``torch.mm`` per running request (the known truth)."""

    x, w = torch.randn(8, 64), torch.randn(64, 64)

    def step(self):
        res = super().step()
        for _ in range(res.num_running):
            torch.mm(self.x, self.w)
        return res

    def kernel_profiler(self, trace_dir: str, name: str):
        from inproc.engines.torchprof import KernelProfiler

        return KernelProfiler("cpu", trace_dir, name)


class NoProfilerEngine(FakeEngine):
    def kernel_profiler(self, trace_dir: str, name: str):
        raise KernelsUnavailable("the model runs in worker processes here")


def _cell(engine, **settings):
    prompts = CellPrompts(PromptFactory(1000, 1), 64, 4, "distinct", 8)
    s = DecodeSettings(4, 1.25, 200, **settings)
    return DecodeCell(engine, prompts, s, itertools.count(1), engine.clock).run()


def test_the_pass_profiles_its_own_steps_after_the_anatomys_and_counts_each_steps_multiplies():
    trace = _cell(MatmulEngine(FakeScript(step_s=0.125)), anatomy_steps=4, kernel_steps=5)
    w, a, k = m.window(trace), trace.anatomy_pass, trace.kernel_pass
    assert k.note == "" and k.device == "cpu" and k.files == ()
    assert a.first_step > w.last_step and k.first_step == a.last_step + 1 and k.last_step - k.first_step + 1 == 5
    table = trace.kernels
    assert table.steps.tolist() == list(range(k.first_step, k.last_step + 1))  # the pass's steps, and no window step
    mm = [(int(s), int(c)) for s, n, c in zip(table.step, table.name, table.calls) if n == "aten::mm"]
    assert mm == [(s, int(trace.steps.num_running[s])) for s in table.steps.tolist()]
    assert set(table.category) <= {"gemm", "memory", "elementwise", "other"} and "gemm" in table.category


def test_an_engine_that_cannot_profile_keeps_its_cell_and_says_why():
    plain = _cell(FakeEngine(FakeScript(step_s=0.125)), anatomy_steps=4)
    trace = _cell(NoProfilerEngine(FakeScript(step_s=0.125)), anatomy_steps=4, kernel_steps=5)
    assert trace.kernels is None and trace.kernel_pass.note == "no kernel pass: the model runs in worker processes here"
    assert trace.kernel_pass.first_step == trace.anatomy_pass.last_step + 1
    # Nothing lost: the same steps, tokens and window as the cell measured without a pass.
    assert np.array_equal(trace.steps.t_end_s, plain.steps.t_end_s)
    assert [r.num_tokens for r in trace.requests] == [r.num_tokens for r in plain.requests]
    assert m.window(trace) == m.window(plain)


def test_no_pass_unless_asked():
    trace = _cell(MatmulEngine(FakeScript(step_s=0.125)), anatomy_steps=4)
    assert trace.kernel_pass is None and trace.kernels is None
