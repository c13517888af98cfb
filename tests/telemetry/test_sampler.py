"""The sampler against FakeNvml replays (fake clock), and against this machine's host."""

from __future__ import annotations

import json
import os
import sys
import time

import numpy as np
import pytest

from inproc.errors import UsageError
from inproc.record.tables import in_ns, whole_ns
from inproc.telemetry.figures import TelemetryFigures, cell_figures
from inproc.telemetry.gpu_reader import ENERGY_EVERY, VIOLATION_EVERY
from inproc.telemetry.judge import throttle_check
from inproc.telemetry.sampler import open_telemetry
from inproc.telemetry.trace import TelemetryTrace
from inproc.telemetry.series import MAX_CONSECUTIVE_FAILURES
from tests.fakes.fake_nvml import UNKNOWN, FakeClock, FakeGpu, FakeNvml, FakeNvmlError

PERIOD_S = 0.1
HW_THERMAL = 0x40
SW_POWER_CAP = 0x4


T0_S = 100.0  # the fake clock's time at the cell's start


def full_gpu(power_w: list[float], start_mj: int = 0, clock: FakeClock | None = None, **replay) -> FakeGpu:
    """A fake GPU whose energy counter integrates ``power_w`` (held for one period each).

    The counter follows ``clock`` (the one :func:`replay_cell` drives): at sample k's time it
    reads the energy up to sample k, however many times it is read.
    """
    energy = [start_mj]
    for p in power_w[:-1]:
        energy.append((energy[-1] + int(round(p * PERIOD_S * 1000))) % 2**64)
    clock = clock or CLOCK
    base = {
        "energy_mj": lambda: energy[min(int(round((clock.t_s - T0_S) / PERIOD_S)), len(energy) - 1)],
        "power_instant_mw": [int(p * 1000) for p in power_w],
        "power_average_mw": [1],
        "sm_clock_mhz": [1980],
        "mem_clock_mhz": [2619],
        "temp_c": [40 + i % 7 for i in range(len(power_w))],
        "util": [(100, 60)],
        "mem_used_bytes": [80 * 2**30],
        "clocks_event_reasons": [0],
        **{
            f"violation_{p}_ns": [0]
            for p in ("power", "thermal", "sync_boost", "board_limit", "low_utilization", "reliability")
        },
    }
    base.update(replay)
    return FakeGpu(replay=base)


CLOCK = FakeClock(T0_S)


def replay_cell(nvml: FakeNvml, num_samples: int, host: bool = False,
                marks: dict[int, str] | None = None) -> tuple[TelemetryTrace, FakeClock]:
    """Run one cell with the caller taking ``num_samples`` samples PERIOD_S apart (on ``CLOCK``).

    ``marks``: sample index -> window edge ("open" / "close") marked at that sample's time.
    """
    clock = CLOCK
    clock.t_s = T0_S
    marks = marks or {}
    tel = open_telemetry(nvml=nvml, host=host, clock=clock)
    tel.start_cell(background=False)  # sample 0
    for i in range(1, num_samples - 1):
        clock.advance(PERIOD_S)
        tel.sample_now()
        if i in marks:
            tel.mark(marks[i])
    clock.advance(PERIOD_S)
    if num_samples - 1 in marks:
        tel.mark(marks[num_samples - 1])
    trace = tel.stop_cell()  # the closing sample
    tel.close()
    assert nvml.shutdown_calls == 1
    return trace, clock


def test_replayed_power_gives_the_analytic_energy_and_means():
    power = [300.0 + 10 * (i % 5) for i in range(50)]
    a, b = 10, 40  # window on sample times t[10]..t[40], its edges marked there
    trace, _ = replay_cell(FakeNvml([full_gpu(power)]), 50, marks={a: "open", b: "close"})
    t = trace.gpus[0].series.t_s
    assert np.allclose(np.diff(t), PERIOD_S)
    assert [r.label for r in trace.energy_reads] == ["start", "open", "close", "stop"]
    fig = cell_figures(trace, t[a], t[b], output_tokens=1200)
    exact_j = sum(power[a:b]) * PERIOD_S
    assert fig.energy_j == pytest.approx(exact_j, abs=1e-6)
    assert fig.joules_per_token == pytest.approx(exact_j / 1200)
    assert fig.tokens_per_joule == pytest.approx(1200 / exact_j)
    assert fig.mean_power_w == pytest.approx(np.mean(power[a : b + 1]))
    assert fig.max_gpu_power_w == max(power[a : b + 1])
    assert fig.gpus[0].power_source == "instant" and fig.gpus[0].energy_source == "edges"
    assert fig.gpus[0].max_temp_c == 46.0
    assert fig.gpus[0].num_samples == b - a + 1
    assert fig.throttle_fraction["hw_thermal_slowdown"] == 0.0


def test_energy_counter_wrap_through_the_sampler():
    power = [250.0] * 30
    gpu = full_gpu(power, start_mj=2**64 - 100_000)  # wraps after 4 samples
    trace, _ = replay_cell(FakeNvml([gpu]), 30)
    counter = trace.gpus[0].series.values["energy_mj"]
    assert counter.dtype == np.uint64 and counter[0] > counter[-1]
    t = trace.gpus[0].series.t_s
    assert cell_figures(trace, t[0], t[29], None).energy_j == pytest.approx(250.0 * 2.9, abs=1e-6)


def test_a_sample_that_raises_leaves_a_marked_gap():
    power = [400.0] * 20
    gpu = full_gpu(power)
    gpu.replay["sm_clock_mhz"] = [1980] * 20
    gpu.replay["sm_clock_mhz"][7] = FakeNvmlError(UNKNOWN)
    gpu.replay["temp_c"] = [50] * 20
    gpu.replay["temp_c"][3] = FakeNvmlError(UNKNOWN)
    trace, _ = replay_cell(FakeNvml([gpu]), 20, marks={2: "open", 12: "close"})
    s = trace.gpus[0].series
    assert not s.ok["sm_clock_mhz"][7] and s.ok["sm_clock_mhz"].sum() == 19
    assert np.isnan(s.values["temp_c"][3]) and not s.ok["temp_c"][3]
    assert s.read_errors["sm_clock_mhz"].startswith("1 failed reads; first: FakeNvmlError")
    assert "sm_clock_mhz" not in s.unsupported  # one failure is a gap, not a switch-off
    fig = cell_figures(trace, s.t_s[2], s.t_s[12], None)
    assert fig.energy_j == pytest.approx(400.0 * 1.0, abs=1e-6)  # from the edge reads
    assert fig.gpus[0].max_temp_c == 50.0 and fig.gpus[0].mean_sm_clock_mhz == 1980.0


def test_an_unsupported_query_is_asked_once_and_reported():
    gpu = full_gpu([100.0] * 25)
    del gpu.replay["temp_c"]
    del gpu.replay["violation_reliability_ns"]
    trace, _ = replay_cell(FakeNvml([gpu]), 25)
    assert gpu.calls["temp_c"] == 1
    assert gpu.calls["violation_reliability_ns"] == 1
    # The energy counter (3 ms a read on the H200) only at the edges (start, stop), on every
    # ENERGY_EVERY-th sample and on the closing one.
    rows = set(range(0, 25, ENERGY_EVERY)) | {24}
    assert gpu.calls["energy_mj"] == 2 + len(rows)
    fig = cell_figures(trace, trace.started_s, trace.stopped_s, 10)
    assert fig.gpus[0].max_temp_c is None
    assert "unsupported" in fig.gpus[0].reasons["max_temp_c"]
    assert "reliability" not in fig.gpus[0].violation_s and "power" in fig.gpus[0].violation_s
    assert fig.max_temp_c is None and fig.reasons["max_temp_c"].startswith("GPU 0: unsupported")


def test_violation_counters_are_read_every_nth_sample_and_at_the_close():
    v = VIOLATION_EVERY
    n = 2 * v + 3  # rows 0, v, 2v and the closing n - 1
    gpu = full_gpu([100.0] * n, violation_power_ns=[0, 10**9, 2 * 10**9, 3 * 10**9])
    trace, _ = replay_cell(FakeNvml([gpu]), n)
    assert gpu.calls["violation_power_ns"] == 4
    s = trace.gpus[0].series
    assert list(np.nonzero(s.ok["violation_power_ns"])[0]) == [0, v, 2 * v, n - 1]
    whole = cell_figures(trace, s.t_s[0], s.t_s[n - 1], None)
    assert whole.gpus[0].violation_s["power"] == pytest.approx(3.0)
    middle = cell_figures(trace, s.t_s[v], s.t_s[2 * v], None)
    assert middle.gpus[0].violation_s["power"] == pytest.approx(1.0)
    assert middle.gpus[0].violation_s["thermal"] == 0.0


def test_instant_power_falls_back_to_the_average():
    gpu = full_gpu([100.0] * 10, power_average_mw=[123_000])
    del gpu.replay["power_instant_mw"]
    trace, _ = replay_cell(FakeNvml([gpu]), 10)
    assert trace.gpus[0].power_source == "average"
    assert np.all(trace.gpus[0].series.values["power_w"] == 123.0)  # no gap at the switch


def test_an_old_driver_without_the_renamed_reasons_call_uses_the_old_name():
    nvml = FakeNvml([full_gpu([100.0] * 5, clocks_event_reasons=[HW_THERMAL])])

    def function_not_found(handle):
        raise FakeNvmlError(13)  # what a new binding raises on a driver without the call

    nvml.nvmlDeviceGetCurrentClocksThrottleReasons = nvml.nvmlDeviceGetCurrentClocksEventReasons
    nvml.nvmlDeviceGetCurrentClocksEventReasons = function_not_found
    trace, _ = replay_cell(nvml, 5)
    s = trace.gpus[0].series
    assert s.ok["clocks_event_reasons"].all() and "clocks_event_reasons" not in s.read_errors
    assert np.all(s.values["clocks_event_reasons"] == HW_THERMAL)


def test_a_query_failing_every_time_is_switched_off():
    gpu = full_gpu([100.0] * 30, sm_clock_mhz=[FakeNvmlError(UNKNOWN)])
    trace, _ = replay_cell(FakeNvml([gpu]), 30)
    assert gpu.calls["sm_clock_mhz"] == MAX_CONSECUTIVE_FAILURES
    assert "switched off" in trace.gpus[0].series.unsupported["sm_clock_mhz"]
    passed, reason = throttle_check(cell_figures(trace, trace.started_s, trace.stopped_s, 1))
    assert passed and "mean SM clock absent" in reason


def test_thermal_bits_in_the_replay_fail_the_throttle_check():
    n = 51
    bits = [SW_POWER_CAP] * n
    bits[20] |= HW_THERMAL
    bits[21] |= HW_THERMAL
    trace, _ = replay_cell(FakeNvml([full_gpu([600.0] * n, clocks_event_reasons=bits)]), n)
    t = trace.gpus[0].series.t_s
    fig = cell_figures(trace, t[0], t[49], 1)  # 50 samples inside: 2 thermal = 4%
    passed, reason = throttle_check(fig)
    assert not passed
    assert "GPU 0 hw_thermal_slowdown in 4.0% of samples" in reason
    fig_late = cell_figures(trace, t[25], t[50], 1)
    passed, reason = throttle_check(fig_late)
    assert passed and "sw_power_cap in 100.0%" in reason


def test_two_gpus_add_up_energy_and_take_the_worst_throttle():
    a = full_gpu([100.0] * 11)
    b = full_gpu([300.0] * 11, clocks_event_reasons=[HW_THERMAL])
    b.uuid = "GPU-fake-0001"
    trace, _ = replay_cell(FakeNvml([a, b]), 11)
    fig = cell_figures(trace, trace.started_s, trace.stopped_s, 400)
    assert [g.index for g in fig.gpus] == [0, 1]
    assert fig.energy_j == pytest.approx(400.0 * 1.0, abs=1e-6)
    assert fig.mean_power_w == pytest.approx(400.0)
    assert fig.throttle_fraction["hw_thermal_slowdown"] == 1.0


def test_without_nvml_the_gpu_part_is_absent_with_the_reason():
    nvml = FakeNvml(init_error=FakeNvmlError(12))
    tel = open_telemetry(nvml=nvml, hz=20.0)
    assert tel.gpu_absent_reason.startswith("NVML unavailable: FakeNvmlError")
    assert tel.gpus == ()
    tel.start_cell()
    time.sleep(0.15)
    trace = tel.stop_cell()
    tel.close()
    fig = cell_figures(trace, trace.started_s, trace.stopped_s, 100)
    data = json.loads(json.dumps(fig.to_dict()))
    for name in ("energy_j", "joules_per_token", "tokens_per_joule", "throttle_fraction", "mean_power_w"):
        assert "GPU telemetry absent: NVML unavailable: FakeNvmlError" in data["reasons"][name]
    assert data["energy_j"] is None and data["throttle_fraction"] == {}
    assert data["max_rss_bytes"] > 0  # the host part still recorded
    assert throttle_check(fig)[0] is True


def test_the_real_binding_wherever_this_runs():
    """With the real binding: on a GPU machine it samples every GPU; elsewhere it says why not."""
    tel = open_telemetry(hz=10.0)  # nvidia-ml-py missing or no driver here: must not raise
    try:
        tel.start_cell()
        trace = tel.stop_cell()
        if tel.gpus:  # an NVIDIA driver: every GPU read, with at least a power and a clock reading
            assert trace.gpus and all(g.series.num_samples >= 2 for g in trace.gpus)
            assert all(g.series.valid("sm_clock_mhz")[1].size for g in trace.gpus)
        else:
            assert tel.gpu_absent_reason.startswith("NVML unavailable: ") and trace.gpus == ()
            assert trace.gpu_absent_reason == tel.gpu_absent_reason
    finally:
        tel.close()


@pytest.mark.parametrize(
    "visible, expect",
    [
        ("1", [1]),
        ("GPU-fake-0002,GPU-fake-0000", [2, 0]),
        ("", "empty"),
        ("5", "not present"),
        ("MIG-x", "MIG"),
    ],
)
def test_cuda_visible_devices_selects_the_sampled_gpus(monkeypatch, visible, expect):
    gpus = [FakeGpu(uuid=f"GPU-fake-000{i}") for i in range(3)]
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", visible)
    tel = open_telemetry(nvml=FakeNvml(gpus), host=False)
    if isinstance(expect, list):
        assert tel.gpu_indices == tuple(expect)
    else:
        assert tel.gpus == () and expect in tel.gpu_absent_reason
    tel.close()


def test_rate_limits_are_enforced():
    with pytest.raises(UsageError, match="at most 20 Hz"):
        open_telemetry(nvml=FakeNvml(), hz=50.0)
    with pytest.raises(UsageError, match="above 0"):
        open_telemetry(nvml=FakeNvml(), hz=0.0)


def test_real_host_sampling_in_a_background_thread():
    hz = 20.0
    tel = open_telemetry(nvml=FakeNvml([full_gpu([200.0] * 5)]), hz=hz)
    tel.start_cell()
    t_open = time.perf_counter()
    x = 0
    while time.perf_counter() - t_open < 0.6:  # keep this thread busy: CPU use > 0
        x += 1
    t_close = time.perf_counter()
    trace = tel.stop_cell()
    tel.close()
    host = trace.host
    assert host is not None and trace.host_absent_reason is None
    assert np.all(np.diff(host.t_s) > 0)
    assert host.t_s[0] <= t_open and host.t_s[-1] >= t_close
    assert trace.started_s <= host.t_s[0] and host.t_s[-1] <= trace.stopped_s
    # Every tick is sampled or counted missed, and none comes early, whatever the load:
    # the first sample opens tick 0, the last is the closing one; between them the thread
    # waits for each tick (never returning early), skips and counts the ticks it overran, and
    # breaks at a tick it had not reached when stopped.
    regular, ticks_spanned = host.num_samples - 2, (host.t_s[-2] - host.t_s[0]) * hz
    assert regular + trace.missed_ticks + 1 >= ticks_spanned  # no tick lost uncounted
    assert regular <= ticks_spanned + 1  # never faster than asked
    assert np.all(np.diff(trace.gpus[0].series.t_s) > 0)
    fig = cell_figures(trace, t_open, t_close, None)
    ncpu = os.cpu_count() or 1
    assert 0.0 < fig.process_cpu_util_pct <= 100.0 * ncpu + 5.0
    assert 0.0 < fig.host_cpu_util_pct <= 100.0  # this thread kept one CPU busy
    assert fig.max_rss_bytes > 0
    assert fig.mean_cpu_freq_mhz is None or fig.mean_cpu_freq_mhz > 0  # read on every 10th sample, where the platform has it
    # The host thread's own CPU (GPUs given as an object are read on it too): some, at most one core.
    assert 0.0 < trace.inproc_cpu_s <= trace.stopped_s - trace.started_s
    assert [m.label for m in trace.marks] == ["start", "stop"]
    assert trace.marks[-1].host_cpu_s <= trace.inproc_cpu_s
    assert trace.sampler_cpu_s == 0.0 and fig.sampler_cpu_pct == 0.0  # no sampler process
    # The CPU counters are kernel ticks, measured on the nanosecond grid: a cell file stores them as integer ns.
    for column in ("process_cpu_s", "host_busy_s", "host_total_s"):
        values = host.values[column][host.ok[column]] if column in host.ok else host.values[column]
        assert values.size and whole_ns(values) is not None and np.all(np.diff(values) >= 0), column
    stored, _ = in_ns({"process_cpu_s": host.values["process_cpu_s"], "rss_bytes": host.values["rss_bytes"]})
    assert set(stored) == {"process_cpu_ns", "rss_bytes"}


def test_trace_and_figures_survive_json_exactly():
    gpu = full_gpu([500.0] * 12, start_mj=2**64 - 2000, clocks_event_reasons=[SW_POWER_CAP | 0x100])
    gpu.replay["temp_c"] = [60, FakeNvmlError(UNKNOWN), 61]
    trace, _ = replay_cell(FakeNvml([gpu]), 12)
    back = TelemetryTrace.from_dict(json.loads(json.dumps(trace.to_dict())))
    s0, s1 = trace.gpus[0].series, back.gpus[0].series
    assert back.gpus[0].name == "Fake H200 (not a GPU)" and back.hz == trace.hz
    assert np.array_equal(s0.t_s, s1.t_s)
    for column in s0.values:
        assert s1.values[column].dtype == s0.values[column].dtype
        assert np.array_equal(s0.values[column], s1.values[column], equal_nan=True)
        assert np.array_equal(s0.ok[column], s1.ok[column])
    assert s1.read_errors == s0.read_errors
    f0 = cell_figures(trace, trace.started_s, trace.stopped_s, 77)
    f1 = cell_figures(back, back.started_s, back.stopped_s, 77)
    assert f0 == f1
    assert TelemetryFigures.from_dict(json.loads(json.dumps(f0.to_dict()))) == f0


def test_without_psutil_the_host_part_is_absent_with_the_reason(monkeypatch):
    monkeypatch.setitem(sys.modules, "psutil", None)  # makes `import psutil` fail
    tel = open_telemetry(nvml=FakeNvml([full_gpu([100.0] * 3)]), clock=FakeClock())
    assert tel.host is None and tel.host_absent_reason.startswith("psutil is not installed")
    tel.start_cell(background=False)
    trace = tel.stop_cell()
    tel.close()
    fig = cell_figures(trace, trace.started_s, trace.stopped_s, None)
    assert fig.max_rss_bytes is None
    assert fig.reasons["max_rss_bytes"].startswith("host telemetry absent: psutil is not installed")


def test_buffers_grow_past_their_first_capacity_without_losing_samples():
    from inproc.telemetry.series import Probe, SeriesBuffer

    counter = iter(range(1000))
    buf = SeriesBuffer([("x", "f8"), ("n", "u8")], capacity=16)
    probes = [Probe("x", ("x", "n"), lambda: (1.5, next(counter)))]
    for i in range(40):
        buf.take(float(i), probes)
    s = buf.snapshot(probes)
    assert s.num_samples == 40
    assert np.array_equal(s.values["n"], np.arange(40, dtype=np.uint64))
    assert np.all(s.values["x"] == 1.5) and s.ok["x"].all()
    buf.reset()
    assert buf.snapshot(probes).num_samples == 0
