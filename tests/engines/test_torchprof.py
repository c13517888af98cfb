"""The kernel pass's profiler (``inproc.engines.torchprof``): real torch on the CPU.

On the CPU a row is an operator's self time: a ``linear`` keeps its dispatch and the ``addmm``
inside it the multiply, and a step's rows never add up to more than the step; and every row
equals what torch's own event tree says (``FunctionEvent.cpu_children``), computed here as an
independent oracle. CUDA cannot run here: the recorded H200 traces drive the same reader
(``tests/kernels/test_filing.py``).
"""
from __future__ import annotations

import numpy as np
import pytest

from inproc.engines.torchprof import MARK, KernelProfiler

torch = pytest.importorskip("torch")

MATMULS = 3  # per step


def _step(x, w):
    for _ in range(MATMULS):
        y = torch.nn.functional.linear(x, w, bias=torch.ones(w.shape[0]))
    return y.add_(1.0)


def test_cpu_rows_are_operator_self_times_per_marked_step_and_add_up_to_no_more_than_the_step():
    # Each multiply milliseconds long: a preemption of the process (a few ms on a busy machine) landing in a
    # linear's own microseconds cannot outweigh a step's three multiplies.
    x, w = torch.randn(256, 1024), torch.randn(1024, 1024)
    prof = KernelProfiler("cpu")
    prof.start()
    for _ in range(3):
        prof.step(lambda: _step(x, w))
        _step(x, w)  # between marks: in no step
    filed, files = prof.stop()
    table = filed.table
    assert files == () and table.device == "cpu" and filed.filed == filed.unfiled == 0
    assert table.steps.tolist() == [0, 1, 2]
    addmm_ns, linear_ns = [], []
    for s in range(3):
        rows = {n: (int(c), int(ns)) for st, n, c, ns in zip(table.step, table.name, table.calls, table.device_ns) if st == s}
        assert rows["aten::addmm"][0] == MATMULS and rows["aten::linear"][0] == MATMULS  # the unmarked calls are not here
        assert rows["aten::add_"][0] == 1
        addmm_ns.append(rows["aten::addmm"][1])
        linear_ns.append(rows["aten::linear"][1])
    print("addmm ns", addmm_ns, "linear ns", linear_ns)
    assert np.median(addmm_ns) > 10 * np.median(linear_ns)  # the multiply's time is the addmm's, not its caller's
    cats = dict(zip(table.name, table.category))
    assert cats["aten::addmm"] == "gemm" and cats["aten::linear"] == "gemm" and cats["aten::add_"] == "elementwise"


def test_a_steps_self_times_sum_to_its_operators_time_without_double_counting():
    x, w = torch.randn(32, 128), torch.randn(128, 128)
    prof = KernelProfiler("cpu")
    prof.start()
    prof.step(lambda: _step(x, w))
    p = prof._prof
    table = prof.stop()[0].table
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


def _oracle(events) -> dict[tuple[int, str], tuple[int, int]]:
    """Per (step, operator): calls and self ns from torch's own tree: span less the nearest operators inside
    (through annotations), filed under the mark holding its start. Independent of the product's reader."""
    marks = sorted((e for e in events if e.name == MARK and e.device_type.name == "CPU"), key=lambda e: e.time_range.start)
    is_op = lambda e: e.device_type.name == "CPU" and not e.is_user_annotation and not e.is_async  # noqa: E731

    def self_ns(e) -> int:
        own, todo = e.time_range.end - e.time_range.start, list(e.cpu_children)
        while todo:
            c = todo.pop()
            if is_op(c):
                own -= c.time_range.end - c.time_range.start
            else:
                todo.extend(c.cpu_children)
        return round(own * 1000)

    out: dict[tuple[int, str], list[int]] = {}
    for e in events:
        step = next((i for i, m in enumerate(marks) if m.time_range.start <= e.time_range.start < m.time_range.end), -1)
        if is_op(e) and step >= 0:
            r = out.setdefault((step, e.name), [0, 0])
            r[0] += 1
            r[1] += self_ns(e)
    return {k: (c, ns) for k, (c, ns) in out.items()}


def test_cpu_rows_equal_torchs_own_event_tree_row_for_row():
    # Each multiply milliseconds long: a preemption of the process (a few ms on a busy machine) landing in a
    # linear's own microseconds cannot outweigh a step's three multiplies.
    x, w = torch.randn(256, 1024), torch.randn(1024, 1024)
    prof = KernelProfiler("cpu")
    prof.start()
    for _ in range(4):
        prof.step(lambda: _step(x, w).sum())
        _step(x, w)
    p = prof._prof
    table = prof.stop()[0].table
    want = _oracle(p.events())
    got = {(int(s), n): (int(c), int(ns)) for s, n, c, ns in zip(table.step, table.name, table.calls, table.device_ns)}
    assert got.keys() == want.keys() and len(got) >= 4 * 5
    for key, (calls, ns) in want.items():
        assert got[key][0] == calls, key
        assert abs(got[key][1] - ns) <= 2 * calls, (key, got[key], ns)  # µs floats in the tree: ≤ 1 ns per end
