"""The GPU sampler in its own process, through the FAKE H200-cost binding (tests/fakes/h200_nvml.py).

Real process, real pipes, real clock: only NVML is a stand-in (it talks to no GPU, and burns the
H200's measured per-call CPU with the GIL released).
"""

from __future__ import annotations

import math
import os
import signal
import threading
import time

import psutil
import pytest

from inproc.telemetry.gpu_sampler import spare_cores
from inproc.telemetry.sampler import open_telemetry
from inproc.telemetry.window import over_window
from tests.fakes import h200_nvml

BINDING = "tests.fakes.h200_nvml"


@pytest.fixture
def gpus(monkeypatch):
    def set_count(n: int) -> int:
        monkeypatch.setenv("INPROC_FAKE_NVML_GPUS", str(n))
        return n
    return set_count


def _cell(tel, before_s: float, window_s: float, after_s: float = 0.05):
    tel.start_cell()
    time.sleep(before_s)
    t_open = time.perf_counter()
    tel.mark("open", t_open)
    time.sleep(window_s)
    t_close = time.perf_counter()
    tel.mark("close", t_close)
    time.sleep(after_s)
    return tel.stop_cell(), t_open, t_close


def test_the_stand_in_burns_its_cost_with_the_gil_released():
    """What the benchmark relies on: a call uses the calling thread's CPU for ~3 ms, as on the H200, and
    other Python threads run meanwhile (a ctypes call releases the GIL; time.sleep would not burn)."""
    handle = h200_nvml.nvmlDeviceGetHandleByIndex(0)
    cpu0 = time.thread_time()
    for _ in range(10):
        h200_nvml.nvmlDeviceGetTotalEnergyConsumption(handle)
    per_call_ms = (time.thread_time() - cpu0) * 100.0
    assert 2.0 <= per_call_ms <= 20.0, per_call_ms
    ticks, stop = [0], threading.Event()

    def other():
        while not stop.is_set():
            ticks[0] += 1

    t = threading.Thread(target=other)
    t.start()
    time.sleep(0.01)
    before = ticks[0]
    for _ in range(20):
        h200_nvml.nvmlDeviceGetTotalEnergyConsumption(handle)
    during = ticks[0] - before
    stop.set()
    t.join()
    assert during > 1000  # the other thread kept running through 60 ms of calls


@pytest.mark.parametrize("n", [1, 4])
def test_window_energy_from_edge_reads_is_exact_to_the_counter_resolution(gpus, n):
    gpus(n)
    tel = open_telemetry(hz=10.0, binding=BINDING)
    try:
        assert tel.gpu_absent_reason is None and tel.gpu_indices == tuple(range(n))
        for window_s in (0.35, 1.3):
            trace, t_open, t_close = _cell(tel, 0.15, window_s)
            assert "exited" not in (trace.sampler_note or "")  # lag may be named: it is niced on a busy machine
            fig = over_window(trace, t_open, t_close, 1000).figures
            for g in fig.gpus:
                reads = {r.label: r for r in trace.energy_reads if r.gpu == g.index}
                assert set(reads) == {"start", "open", "close", "stop"} and g.energy_source == "edges"
                # The counter's own steps between the two reads: exactly what the figure says.
                period = h200_nvml.COUNTER_PERIOD_S
                lo = math.floor(reads["close"].t_s / period) - math.floor(reads["open"].t_end_s / period)
                hi = math.floor(reads["close"].t_end_s / period) - math.floor(reads["open"].t_s / period)
                step_j = h200_nvml.counter_resolution_j(g.index)
                assert lo * step_j - 1e-6 <= g.energy_j <= hi * step_j + 1e-6
                # Against the truth over the window: off by at most one counter update, plus the reads' lag.
                lag_s = max(abs(reads["open"].t_end_s - t_open), abs(reads["close"].t_end_s - t_close))
                truth = h200_nvml.true_energy_j(g.index, t_open, t_close)
                assert abs(g.energy_j - truth) <= step_j + h200_nvml.power_w(g.index) * lag_s + 1e-6
            assert fig.energy_j == pytest.approx(sum(g.energy_j for g in fig.gpus))
            assert fig.joules_per_token == pytest.approx(fig.energy_j / 1000)
    finally:
        tel.close()


def test_the_series_throttle_and_costs_come_from_the_sampler_process(gpus):
    n = gpus(8)
    tel = open_telemetry(hz=10.0, binding=BINDING)
    try:
        assert psutil.Process(tel._gpu._proc.pid).nice() >= 10  # below the engine's priority
        trace, t_open, t_close = _cell(tel, 0.2, 1.0)
    finally:
        tel.close()
    assert len(trace.gpus) == n and all(g.series.num_samples >= 10 for g in trace.gpus)
    assert trace.gpus[0].field_latency_us["75"] == 875  # each field's latencyUsec, as NVML gave it
    w = over_window(trace, t_open, t_close, 100)
    fig = w.figures
    assert w.throttle_passed is True and "sw_power_cap in 100.0% of samples" in w.throttle_reason
    assert fig.mean_power_w == pytest.approx(sum(h200_nvml.power_w(i) for i in range(n)))
    assert fig.gpus[0].violation_s["power"] == pytest.approx(t_close - t_open, abs=0.05)  # read at both edges
    for g in trace.gpus:  # each edge has a full sample just after it, the energy just read in it (not read again)
        for column in ("violation_power_ns", "energy_mj"):
            t_read, _ = g.series.valid(column)
            assert all(((t_read >= edge) & (t_read < edge + 0.2)).any() for edge in (t_open, t_close)), column
    # The cost moved: 8 GPUs x 4 edges x 3.1 ms of energy reads were burnt in the sampler's process ...
    assert trace.sampler_cpu_s >= 0.5 * n * 4 * h200_nvml.ENERGY_MS / 1000
    # ... while the engine's process spent a pipe write per mark (not 8 x 3.1 ms each), and no host sample:
    assert 0.0 < fig.inproc_gpu_cpu_s < 0.002
    assert fig.inproc_host_cpu_s == 0.0
    assert fig.inproc_cpu_pct == pytest.approx(100 * fig.inproc_gpu_cpu_s / (t_close - t_open))
    # The host was sampled by the sampler process: this process's CPU and RSS, read from outside ...
    host = trace.host
    assert host is not None and host.num_samples >= 10
    t, cpu = host.valid("process_cpu_s")
    assert 0.0 < cpu[-1] <= sum(os.times()[:2]) + 0.011  # cumulative, at most what this process has used (ticks)
    _, rss = host.valid("rss_bytes")
    assert rss.max() == pytest.approx(psutil.Process().memory_info().rss, rel=0.5)
    # ... with an edge sample at each window edge, and the sampler itself among this process's children:
    assert min(abs(t - t_open)) < 0.1 and min(abs(t - t_close)) < 0.1
    _, children = host.valid("children_cpu_s")
    assert children[-1] - children[0] >= 0.5 * trace.sampler_cpu_s
    assert "nice +10" in trace.sampler_placement


def test_a_sampler_killed_mid_window_costs_the_cell_nothing_but_its_gap(gpus):
    gpus(2)
    tel = open_telemetry(hz=10.0, binding=BINDING)
    try:
        tel.start_cell()
        time.sleep(0.2)
        t_open = time.perf_counter()
        tel.mark("open", t_open)
        time.sleep(0.5)
        os.kill(tel._gpu._proc.pid, signal.SIGKILL)
        t_kill = time.perf_counter()
        time.sleep(0.3)
        t_close = time.perf_counter()
        tel.mark("close", t_close)  # the pipe is broken: nothing raised
        trace = tel.stop_cell()
        # The next cell: the sampler is gone, the host part goes on (in this process), the gap is named again.
        tel.start_cell()
        time.sleep(0.15)
        later = tel.stop_cell()
    finally:
        tel.close()
    assert trace.sampler_note.startswith("GPU telemetry: sampler exited at ")
    assert "exit code -9" in trace.sampler_note and "kept" in trace.sampler_note
    for g in trace.gpus:  # everything it wrote before it died is kept
        t = g.series.t_s
        assert g.series.num_samples >= 5 and t[-1] < t_kill
    assert {r.label for r in trace.energy_reads} == {"start", "open"}
    w = over_window(trace, t_open, t_close, 50)
    fig = w.figures
    assert fig.energy_j is None and "no energy read of GPU 0 at the window's close" in fig.reasons["energy_j"]
    assert fig.mean_power_w is not None and fig.max_rss_bytes is not None  # levels and host figures kept
    assert trace.sampler_note in fig.notes
    assert later.sampler_note.startswith("GPU telemetry: sampler exited at ")
    assert later.host is not None and later.host.num_samples >= 2 and later.inproc_cpu_s > 0.0  # its cost is shown


def test_a_sampler_that_cannot_start_leaves_the_gpu_part_absent_with_the_reason():
    tel = open_telemetry(hz=10.0, binding="tests.fakes.no_such_binding")
    try:
        assert tel.gpus == () and "could not be imported" in tel.gpu_absent_reason
        tel.start_cell()
        trace = tel.stop_cell()
    finally:
        tel.close()
    fig = over_window(trace, trace.started_s, trace.stopped_s, 1).figures
    assert fig.energy_j is None and "could not be imported" in fig.reasons["energy_j"]
    assert fig.max_rss_bytes is not None


def test_a_line_a_library_prints_before_the_ready_line_is_a_note_and_the_sampler_serves(gpus, monkeypatch):
    """The FAKE binding ``tests.fakes.chatty_nvml`` prints a line on import: it reaches the engine's process in one
    write with the ready line. Wrong code this fails: ``json.loads`` of the first line (raises), or a buffered
    readline after select that skips it and then misses the ready line left in the buffer (no GPU: "did not start")."""
    from tests.fakes.chatty_nvml import BANNER

    monkeypatch.delenv("PYTHONUNBUFFERED", raising=False)  # the sampler's stdout stays block-buffered
    gpus(1)
    tel = open_telemetry(hz=10.0, binding="tests.fakes.chatty_nvml")
    try:
        assert tel.gpu_absent_reason is None and tel.gpu_indices == (0,)
        first, t_open, t_close = _cell(tel, 0.15, 0.35)
        second, _, _ = _cell(tel, 0.05, 0.2)
    finally:
        tel.close()
    # (a lag may be named beside it: the sampler is niced on a busy machine)
    assert f"GPU telemetry: sampler wrote 1 line that is no answer (first: {BANNER!r})" in first.sampler_note
    assert "no answer" not in (second.sampler_note or "") and "exited" not in (second.sampler_note or "")
    for trace in (first, second):  # it served both cells: every edge's energy read came back
        assert sorted(r.label for r in trace.energy_reads) == ["close", "open", "start", "stop"]
    assert over_window(first, t_open, t_close, 1).figures.energy_j > 0


def test_the_sampler_is_pinned_to_the_cores_the_engine_may_not_use(gpus):
    """The sampler process's real affinity, read from the kernel by its pid, while this process (the engine's)
    is bound to its first core. Wrong code this fails: ``place`` not pinning (the sampler keeps the engine's core,
    inherited at spawn), pinning to the engine's own cores, or ``spare_cores`` naming a core the engine may use."""
    allowed = sorted(os.sched_getaffinity(0))
    assert not set(spare_cores()) & set(allowed)  # never a core the engine's process may run on
    if len(allowed) < 2:
        pytest.skip("one core: nothing to pin to")
    gpus(1)
    engine_core = allowed[0]
    os.sched_setaffinity(0, {engine_core})  # an engine bound to its first core
    try:
        tel = open_telemetry(hz=10.0, binding=BINDING)
        try:
            sampler = tel._gpu._proc.pid
            pinned = os.sched_getaffinity(sampler)
            placement = tel._gpu.placement
        finally:
            tel.close()
    finally:
        os.sched_setaffinity(0, set(allowed))
    assert engine_core not in pinned and set(allowed[1:]) <= pinned, (pinned, placement)
    assert "pinned to cores" in placement
