"""The kernel pass's profiler (``inproc.engines.torchprof``): real torch on the CPU, a fake event list for CUDA.

On the CPU a row is an operator's self time: a ``linear`` keeps its dispatch and the ``addmm``
inside it the multiply, and a step's rows never add up to more than the step. CUDA cannot run
here, so its path is fed a fake event list shaped like torch's (``FunctionEvent`` fields).
"""
from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from inproc.engines.torchprof import MARK, KernelProfiler, table_from_events

torch = pytest.importorskip("torch")

MATMULS = 3  # per step


def _step(x, w):
    for _ in range(MATMULS):
        y = torch.nn.functional.linear(x, w, bias=torch.ones(w.shape[0]))
    return y.add_(1.0)


def test_cpu_rows_are_operator_self_times_per_marked_step_and_add_up_to_no_more_than_the_step():
    x, w = torch.randn(64, 256), torch.randn(256, 256)
    prof = KernelProfiler("cpu")
    prof.start()
    for _ in range(3):
        prof.step(lambda: _step(x, w))
        _step(x, w)  # between marks: in no step
    table, files = prof.stop()
    assert files == () and table.device == "cpu"
    assert table.steps.tolist() == [0, 1, 2]
    for s in range(3):
        rows = {n: (int(c), int(ns)) for st, n, c, ns in zip(table.step, table.name, table.calls, table.device_ns) if st == s}
        assert rows["aten::addmm"][0] == MATMULS and rows["aten::linear"][0] == MATMULS  # the unmarked calls are not here
        assert rows["aten::addmm"][1] > rows["aten::linear"][1]  # the multiply's time is the addmm's, not its caller's
        assert rows["aten::add_"][0] == 1
    cats = dict(zip(table.name, table.category))
    assert cats["aten::addmm"] == "gemm" and cats["aten::linear"] == "gemm" and cats["aten::add_"] == "elementwise"


def test_a_steps_self_times_sum_to_its_operators_time_without_double_counting():
    x, w = torch.randn(32, 128), torch.randn(128, 128)
    prof = KernelProfiler("cpu")
    prof.start()
    prof.step(lambda: _step(x, w))
    p = prof._prof
    table, _ = prof.stop()
    events = p.events()
    mark = next(e for e in events if e.name == MARK)
    # The operators directly under the mark: their spans hold every operator moment of the step once.
    top = [e for e in mark.cpu_children if not e.is_user_annotation]
    top_ns = sum(e.time_range.end - e.time_range.start for e in top) * 1000
    assert abs(int(table.device_ns.sum()) - top_ns) <= len(table) + 1  # µs→ns rounding per row only
    assert table.device_ns.sum() <= (mark.time_range.end - mark.time_range.start) * 1000


def test_the_trace_is_kept_only_where_a_folder_is_given(tmp_path):
    prof = KernelProfiler("cpu", str(tmp_path), "ctx256-C4")
    prof.start()
    prof.step(lambda: torch.ones(4) + 1)
    _, files = prof.stop()
    assert [p.rsplit("/", 1)[-1] for p in files] == ["ctx256-C4.kernels.pt.trace.json"]
    assert (tmp_path / "ctx256-C4.kernels.pt.trace.json").stat().st_size > 0


def _ev(name, start, end, device="CPU", id=0, linked=0, annotation=False, children=()):
    """A fake of torch's FunctionEvent with the fields the pass reads (no CUDA here to make real ones)."""
    return SimpleNamespace(name=name, time_range=SimpleNamespace(start=start, end=end), device_type=SimpleNamespace(name=device),
                           id=id, linked_correlation_id=linked, is_user_annotation=annotation, is_async=False,
                           cpu_children=list(children))


def test_cuda_rows_are_device_activities_filed_by_the_step_that_launched_them():
    launch0, launch1 = _ev("cudaLaunchKernel", 10, 11, id=7), _ev("cudaGraphLaunch", 110, 112, id=8)
    events = [
        _ev(MARK, 0, 100, annotation=True, children=[launch0]), _ev(MARK, 100, 200, annotation=True, children=[launch1]),
        launch0, launch1,
        _ev("nvjet_tst_128x64_64x4_1x2_h_bz_coopA_NTT", 90, 150, "CUDA", linked=7),  # launched in step 0, runs into 1
        _ev("flash_fwd_splitkv_kernel", 205, 230, "CUDA", linked=8),  # launched in step 1, runs after it
        _ev("Memcpy HtoD (Pageable -> Device)", 120, 121.5, "CUDA", linked=8),
        _ev("unlinked_kernel", 150, 160, "CUDA"),  # its launcher was not kept: filed by its own start
        _ev("late_kernel", 250, 260, "CUDA"),  # after every step: in none
    ]
    t = table_from_events(events, "cuda")
    rows = {(int(s), n): (int(c), int(ns)) for s, n, c, ns in zip(t.step, t.name, t.calls, t.device_ns)}
    assert rows == {(0, "nvjet_tst_128x64_64x4_1x2_h_bz_coopA_NTT"): (1, 60_000), (1, "flash_fwd_splitkv_kernel"): (1, 25_000),
                    (1, "Memcpy HtoD (Pageable -> Device)"): (1, 1_500), (1, "unlinked_kernel"): (1, 10_000)}
    assert t.device == "cuda" and np.array_equal(t.steps, [0, 1])  # host events are no rows on CUDA
