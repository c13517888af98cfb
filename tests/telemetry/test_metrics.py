"""Telemetry figure definitions over hand-built sample series (no sampler, no NVML)."""

from __future__ import annotations

import numpy as np
import pytest

import inproc.telemetry.metrics as m
from inproc.telemetry.series import SampleSeries

HW_SLOWDOWN = 0x8
SW_POWER_CAP = 0x4
HW_THERMAL = 0x40


def series(t_s, **columns) -> SampleSeries:
    """A series whose failed reads are given as None in the column lists."""
    t = np.asarray(t_s, dtype=np.float64)
    values, ok = {}, {}
    for name, raw in columns.items():
        mask = np.array([v is not None for v in raw])
        if name in ("energy_mj", "clocks_event_reasons"):
            values[name] = np.array([0 if v is None else v for v in raw], dtype=np.uint64)
        else:
            values[name] = np.array([np.nan if v is None else v for v in raw], dtype=np.float64)
        ok[name] = mask
    return SampleSeries(t, values, ok, {}, {})


def energy_counter_mj(t_s: np.ndarray, power_w) -> list[int]:
    """The integer mJ counter NVML would show for power(t) = power_w(t), from t_s[0]."""
    fine = np.linspace(t_s[0], t_s[-1], 200_001)
    joules = np.concatenate(([0.0], np.cumsum(np.diff(fine) * power_w(fine[:-1] + np.diff(fine) / 2))))
    return [int(round(1000 * j)) for j in np.interp(t_s, fine, joules)]


def test_energy_of_constant_power_is_power_times_window():
    t = 10.0 + 0.1 * np.arange(60) + 0.013
    s = series(t, energy_mj=energy_counter_mj(t, lambda x: np.full_like(x, 537.0)))
    # Window edges fall between samples on purpose: the figure interpolates there.
    assert m.gpu_energy_j(s, 11.234, 15.678) == pytest.approx(537.0 * 4.444, abs=0.002)


def test_energy_of_a_power_ramp_matches_its_integral():
    t = 0.1 * np.arange(101)  # 0..10 s
    ramp = lambda x: 100.0 + 50.0 * x  # noqa: E731  W, linear in time
    s = series(t, energy_mj=energy_counter_mj(t, ramp))
    t0, t1 = 2.0, 7.0  # on sample times, so linear interpolation adds no error
    exact = 100.0 * (t1 - t0) + 25.0 * (t1**2 - t0**2)
    assert m.gpu_energy_j(s, t0, t1) == pytest.approx(exact, abs=0.002)


def test_energy_survives_a_64_bit_counter_wrap():
    top = 2**64
    counter = [top - 3000, top - 2000, top - 1000, 0, 1000, 2000]  # 1 J per 0.1 s = 10 W
    s = series(0.1 * np.arange(6), energy_mj=counter)
    assert m.gpu_energy_j(s, 0.0, 0.5) == pytest.approx(5.0)
    assert m.gpu_energy_j(s, 0.05, 0.45) == pytest.approx(4.0)


def test_energy_counter_going_back_makes_energy_absent_not_huge():
    s = series(0.1 * np.arange(4), energy_mj=[5_000_000, 5_001_000, 200, 1200])
    with pytest.raises(m.Absent, match="went back"):
        m.gpu_energy_j(s, 0.0, 0.3)


def test_energy_skips_failed_reads():
    t = 0.1 * np.arange(11)
    counter = [int(1000 * 200 * x) for x in t]  # 200 W
    counter[4] = None  # this sample's read raised
    counter[5] = None
    s = series(t, energy_mj=counter)
    assert m.gpu_energy_j(s, 0.25, 0.85) == pytest.approx(200 * 0.6)


def test_energy_window_outside_the_samples_is_absent():
    s = series([1.0, 1.1, 1.2], energy_mj=[0, 10, 20])
    with pytest.raises(m.Absent, match="not covered"):
        m.gpu_energy_j(s, 0.9, 1.2)


def test_throttle_fractions_count_only_samples_inside_the_window():
    n = 200
    t = 0.1 * np.arange(n)
    bits = [0] * n
    inside = range(50, 150)  # t in [5.0, 14.9]
    for i in (60, 70, 80):
        bits[i] |= HW_SLOWDOWN
    for i in inside[:50]:
        bits[i] |= SW_POWER_CAP
    for i in range(0, 50):  # outside the window: must not count
        bits[i] |= HW_THERMAL
    bits[120] = None  # a failed read is not a sample
    s = series(t, clocks_event_reasons=bits)
    fractions = m.throttle_fractions(s, 5.0, 14.95)
    assert fractions["hw_slowdown"] == pytest.approx(3 / 99)
    assert fractions["sw_power_cap"] == pytest.approx(50 / 99)
    assert fractions["hw_thermal_slowdown"] == 0.0
    assert set(fractions) >= {"gpu_idle", "sw_thermal_slowdown", "hw_power_brake_slowdown"}


def test_level_figures_in_a_window_shorter_than_a_sample_period_use_the_neighbours():
    s = series([0.0, 0.1, 0.2, 0.3], power_w=[100.0, 200.0, 400.0, 800.0])
    assert m.window_mean(s, "power_w", 0.12, 0.18) == pytest.approx(300.0)
    assert m.window_max(s, "power_w", 0.12, 0.18) == 400.0
    assert m.window_mean(s, "power_w", 0.05, 0.25) == pytest.approx(300.0)  # 0.1 and 0.2 inside


def test_violation_counter_delta_interpolates_and_rejects_a_reset():
    t = [0.0, 1.0, 2.0, 3.0]
    s = series(t, violation_power_ns=[0.0, 0.0, 5e8, 1e9])
    assert m.counter_delta(s, "violation_power_ns", 1.5, 3.0) == pytest.approx(7.5e8)
    bad = series(t, violation_power_ns=[9e8, 1e9, 0.0, 1e8])
    with pytest.raises(m.Absent, match="went back"):
        m.counter_delta(bad, "violation_power_ns", 0.0, 3.0)


def test_cpu_utilisation_from_counters():
    t = [0.0, 1.0, 2.0]
    s = series(
        t, process_cpu_s=[10.0, 11.5, 13.0], host_busy_s=[0.0, 4.0, 8.0], host_total_s=[0.0, 16.0, 32.0]
    )
    assert m.process_cpu_util_pct(s, 0.5, 2.0) == pytest.approx(150.0)
    assert m.host_cpu_util_pct(s, 0.0, 2.0) == pytest.approx(25.0)


def test_a_column_that_was_never_read_is_absent_with_its_reason():
    s = SampleSeries(
        np.array([0.0, 1.0]),
        {"temp_c": np.array([np.nan, np.nan])},
        {"temp_c": np.zeros(2, dtype=bool)},
        {"temp_c": "unsupported: NVMLError_NotSupported: Not Supported"},
        {},
    )
    with pytest.raises(m.Absent, match="NotSupported"):
        m.window_max(s, "temp_c", 0.0, 1.0)
