"""The kernel pass's one reader (``inproc.kernels.filing``) on what a GPU really gives: four traces recorded on an
H200 (``tests/fixtures/h200``), read as a saved trace and through the pass's own profiler, and small traces built
for the cases those do not show (a launch outside every mark, a missing launcher, colliding ids)."""
from __future__ import annotations

import gzip
import json
import shutil

import numpy as np
import pytest

from inproc.engines.torchprof import KernelProfiler
from inproc.kernels.categories import OTHER
from inproc.kernels.chrome import TraceError, events_of, load_trace
from inproc.kernels.filing import MARK, file_events
from tests.conftest import FIXTURES

H200 = FIXTURES / "h200"
#: Device activities per step and the share of device time per category, as recorded (the fixtures' README).
TRACES = {"eager_sync": 59, "graph_async": 58, "compiled_graph_async": 54, "tf_llama": 187}
#: Activities whose own start lies outside every step mark: what filing by start lost.
OWN_START_OUTSIDE = {"eager_sync": 0, "graph_async": 214, "compiled_graph_async": 197, "tf_llama": 0}


class RecordedProfile:
    """A fake of torch's profiler object for a machine without CUDA: its export writes a trace recorded on the
    H200, so :meth:`KernelProfiler.stop` (the live pass's path) reads real GPU output."""

    def __init__(self, recorded) -> None:
        self.recorded, self.stopped = recorded, False

    def stop(self) -> None:
        self.stopped = True

    def export_chrome_trace(self, path: str) -> None:
        with gzip.open(self.recorded, "rb") as src, open(path, "wb") as dst:
            shutil.copyfileobj(src, dst)


def live(name: str, tmp_path=None):
    prof = KernelProfiler("cuda", str(tmp_path) if tmp_path else "", name)
    prof._prof = RecordedProfile(H200 / f"{name}.json.gz")
    return prof.stop()


@pytest.mark.parametrize("name", sorted(TRACES))
def test_each_step_of_each_h200_trace_gets_exactly_its_own_activities_through_both_entry_points(name, tmp_path):
    saved = file_events(load_trace(str(H200 / f"{name}.json.gz")))
    through_pass, files = live(name)
    assert files == ()
    for f in (saved, through_pass):
        assert f.table.device == "cuda" and f.steps == 4
        assert f.per_step_activities().tolist() == [TRACES[name]] * 4
        assert f.unfiled == 0 and f.filed == 4 * TRACES[name]
        assert MARK not in f.table.name  # the device-side copy of the mark is no row
        by = f.table.ns_per_step_by_category()
        assert by[OTHER] <= 0.002 * sum(by.values())  # ≤ 0.2 % unnamed, as recorded
        assert by["gemm"] > 0 and by["attention"] > 0
    assert np.array_equal(saved.table.device_ns, through_pass.table.device_ns) and saved.table.name == through_pass.table.name


def test_a_kept_trace_of_the_pass_reads_back_to_the_same_table(tmp_path):
    filed, files = live("graph_async", tmp_path)
    again = file_events(load_trace(files[0]))
    assert again.table.name == filed.table.name and np.array_equal(again.table.device_ns, filed.table.device_ns)


def _device_truth(events) -> list[dict[str, tuple[int, int]]]:
    """Each step's device activities as the profiler itself placed them on the H200's timeline: those lying inside
    the step's device-side mark (``gpu_user_annotation``, the span Kineto drew over the step's kernels), by name:
    (calls, device ns). Read from where and when the GPU ran them, not from the launch ids the filing code joins."""
    marks = sorted((e for e in events if e.cat == "gpu_user_annotation" and e.name == MARK), key=lambda e: e.start_ns)
    out: list[dict[str, tuple[int, int]]] = [{} for _ in marks]
    for e in events:
        if e.cat in ("kernel", "gpu_memcpy", "gpu_memset"):
            (step,) = [i for i, m in enumerate(marks) if m.start_ns <= e.start_ns and e.end_ns <= m.end_ns]
            calls, ns = out[step].get(e.name, (0, 0))
            out[step][e.name] = (calls + 1, ns + e.dur_ns)
    return out


@pytest.mark.parametrize("name", sorted(TRACES))
def test_each_step_gets_what_the_gpus_own_timeline_put_in_it_the_late_async_activities_included(name):
    """The filing code's rows against the recorded truth, name by name: calls and device time per step.

    Wrong code this fails: filing an activity by its own start (the async traces lose 214 and 197 of their
    activities), by the host mark open when it ran (a graph replay's kernels run during the next step's host
    mark: each one step late), steps numbered off by one, the launching call's time in place of the device's,
    or a memcpy left out."""
    events = load_trace(str(H200 / f"{name}.json.gz"))
    truth = _device_truth(events)
    filed = file_events(events)
    got: list[dict[str, tuple[int, int]]] = [{} for _ in range(filed.steps)]
    for step, kernel, calls, ns in zip(filed.table.step, filed.table.name, filed.table.calls, filed.table.device_ns):
        got[int(step)][kernel] = (int(calls), int(ns))
    assert len(truth) == 4 and got == truth
    # What makes these the hard case (the fixtures' README): the activities that ran after every host mark had
    # closed, which the filing code must still give to their own steps.
    marks = [e for e in events if e.cat == "user_annotation" and e.name == MARK]
    late = [e for e in events if e.cat in ("kernel", "gpu_memcpy", "gpu_memset")
            and not any(m.start_ns <= e.start_ns < m.end_ns for m in marks)]
    assert len(late) == OWN_START_OUTSIDE[name] and filed.unfiled == 0


def _x(cat, name, ts, dur, corr=None, tid=1, pid=1):
    e = {"ph": "X", "cat": cat, "name": name, "pid": pid, "tid": tid, "ts": ts, "dur": dur, "args": {}}
    if corr is not None:
        e["args"]["correlation"] = corr
    return e


def _trace(*events):
    return events_of({"traceEvents": list(events)})


def test_a_graph_replays_kernels_running_after_every_mark_closed_go_to_the_launching_step():
    events = _trace(
        _x("user_annotation", MARK, "100.000", "10.000"), _x("user_annotation", MARK, "110.000", "10.000"),
        _x("cuda_runtime", "cudaGraphLaunch", "101.000", "2.000", 7), _x("cuda_runtime", "cudaGraphLaunch", "111.000", "2.000", 8),
        *[_x("kernel", f"k{i}", f"{200 + i}.000", "1.000", 7, tid=7, pid=0) for i in range(3)],
        *[_x("kernel", f"k{i}", f"{300 + i}.000", "1.500", 8, tid=7, pid=0) for i in range(3)],
        _x("gpu_user_annotation", MARK, "200.000", "103.000", tid=7, pid=0))
    f = file_events(events)
    assert f.per_step_activities().tolist() == [3, 3] and f.unfiled == 0
    rows = {(int(s), n): int(ns) for s, n, ns in zip(f.table.step, f.table.name, f.table.device_ns)}
    assert rows == {**{(0, f"k{i}"): 1000 for i in range(3)}, **{(1, f"k{i}"): 1500 for i in range(3)}}


def test_a_cpu_operator_sharing_a_kernels_id_never_takes_it_from_its_runtime_launch():
    events = _trace(
        _x("user_annotation", MARK, "0.000", "10.000"), _x("user_annotation", MARK, "10.000", "10.000"),
        _x("cpu_op", "aten::mm", "1.000", "3.000", 42),  # another counter's 42, in step 0
        _x("cuda_runtime", "cudaLaunchKernel", "12.000", "1.000", 42),  # the kernel's launch, in step 1
        _x("kernel", "nvjet_tst_64x8_64x16_4x1_v_bz_TNN", "15.000", "4.000", 42, pid=0, tid=7))
    f = file_events(events)
    assert f.table.step.tolist() == [1] and f.unfiled == 0


def test_activities_launched_outside_every_mark_or_without_a_launcher_are_counted_never_guessed():
    events = _trace(
        _x("user_annotation", MARK, "0.000", "10.000"),
        _x("cuda_driver", "cuLaunchKernel", "2.000", "1.000", 1), _x("kernel", "triton_poi_fused_add_0", "3.000", "1.000", 1, pid=0),
        _x("cuda_runtime", "cudaMemcpyAsync", "20.000", "1.000", 2), _x("gpu_memcpy", "Memcpy DtoH (Device -> Pinned)", "21.000", "2.000", 2, pid=0),
        _x("kernel", "orphan_kernel", "5.000", "0.500", 99, pid=0))
    f = file_events(events)
    assert f.filed == 1 and f.unfiled_outside == 1 and f.unfiled_no_launcher == 1 and f.unfiled_ns == 2500
    assert f.unfiled_text() == ("2 of 3 device activities not filed to a step (1 launched outside every step mark; "
                                "1 whose launching call the trace lacks; 0.0025 ms of device time)")


def test_a_glob_names_the_steps_and_a_mark_inside_a_mark_is_not_another_step():
    events = _trace(
        _x("user_annotation", "ProfilerStep#3", "0.000", "10.000"), _x("user_annotation", "ProfilerStep#4", "10.000", "10.000"),
        _x("user_annotation", "ProfilerStep#9", "12.000", "2.000"),  # nested in #4: not a step
        _x("cuda_runtime", "cudaLaunchKernel", "13.000", "1.000", 5), _x("kernel", "k", "30.000", "1.000", 5, pid=0))
    f = file_events(events, "ProfilerStep#*")
    assert f.steps == 2 and f.step_ns.tolist() == [10_000, 10_000] and f.table.step.tolist() == [1]


def test_timestamps_are_read_as_exact_nanoseconds_where_a_double_would_round():
    events = _trace(_x("user_annotation", MARK, "5541288705913.648", "0.001"),
                    _x("cpu_op", "aten::add", "5541288705913.648", "0.001"))
    assert events[0].start_ns == 5541288705913648 and events[0].dur_ns == 1
    assert file_events(events).table.calls.tolist() == [1]


def test_a_file_that_is_no_trace_is_one_line(tmp_path):
    bad = tmp_path / "x.json"
    bad.write_text("[1, 2")
    with pytest.raises(TraceError, match="not a torch profiler trace"):
        load_trace(str(bad))
    bad.write_text(json.dumps({"a": 1}))
    with pytest.raises(TraceError, match="no traceEvents"):
        load_trace(str(bad))
    with pytest.raises(TraceError, match="no such file"):
        load_trace(str(tmp_path / "none.json.gz"))


def test_older_torch_category_names_are_read_as_todays():
    events = _trace(
        _x("user_annotation", MARK, "0.000", "10.000"),
        _x("Runtime", "cudaLaunchKernel", "2.000", "1.000", 3), _x("Kernel", "ampere_bf16_s16816gemm_bf16_128x64", "30.000", "2.000", 3, pid=0),
        _x("Runtime", "cudaMemcpyAsync", "3.000", "1.000", 4), _x("Memcpy", "Memcpy HtoD (Pageable -> Device)", "31.000", "1.000", 4, pid=0))
    f = file_events(events)
    assert f.table.device == "cuda" and f.filed == 2 and f.unfiled == 0
    assert dict(zip(f.table.name, f.table.category)) == {"ampere_bf16_s16816gemm_bf16_128x64": "gemm",
                                                         "Memcpy HtoD (Pageable -> Device)": "memory"}
