"""Other programs' compute processes on a sampled GPU, through FakeNvml (a FAKE: no GPU here)."""
from __future__ import annotations

import os

from inproc.telemetry.gpu_procs import other_compute_processes, own_pids
from inproc.telemetry.sampler import open_telemetry
from tests.fakes.fake_nvml import FakeGpu, FakeNvml, FakeNvmlError

ME = os.getpid()


def _nvml(*procs_per_gpu):
    return FakeNvml([FakeGpu(uuid=f"GPU-fake-{i}", replay={"compute_processes": [list(p)]})
                     for i, p in enumerate(procs_per_gpu)])


def test_a_process_not_of_this_tree_is_named_with_its_gpu_and_memory():
    nvml = _nvml([(ME, 2**30), (4242, 3 * 2**30)], [(5151, None)])
    handles = [(i, nvml.nvmlDeviceGetHandleByIndex(i)) for i in range(2)]
    assert other_compute_processes(nvml, handles, {ME}) == ("GPU 0: pid 4242 (3,072 MiB)",
                                                            "GPU 1: pid 5151 (memory not reported)")


def test_only_this_tree_is_nothing():
    nvml = _nvml([(ME, 2**30), (ME + 1, 2**30)])
    assert other_compute_processes(nvml, [(0, nvml.nvmlDeviceGetHandleByIndex(0))], {ME, ME + 1}) == ()


def test_pids_of_another_namespace_are_not_judged():
    """In a container NVML lists host PIDs: none is this tree's, so none is called foreign."""
    nvml = _nvml([(900001, 2**30), (900002, 2**30)])
    assert other_compute_processes(nvml, [(0, nvml.nvmlDeviceGetHandleByIndex(0))], {ME}) == ()


def test_a_gpu_that_does_not_answer_is_left_out():
    nvml = FakeNvml([FakeGpu(replay={"compute_processes": [FakeNvmlError(3)]}),
                     FakeGpu(uuid="GPU-fake-1", replay={"compute_processes": [[(ME, 1), (7, 1)]]})])
    handles = [(i, nvml.nvmlDeviceGetHandleByIndex(i)) for i in range(2)]
    assert other_compute_processes(nvml, handles, {ME}) == ("GPU 1: pid 7 (0 MiB)",)


def test_each_entry_trace_carries_them_and_this_process_is_its_own():
    assert ME in own_pids()
    nvml = _nvml([(ME, 2**30), (4242, 2**30)])
    tel = open_telemetry(nvml=nvml, host=False)
    tel.start_cell(background=False)
    trace = tel.stop_cell()
    tel.close()
    assert trace.gpu_others == ("GPU 0: pid 4242 (1,024 MiB)",)
    assert type(trace).from_dict(trace.to_dict()).gpu_others == trace.gpu_others
