"""The throttle check's thresholds, on hand-made figures."""

from __future__ import annotations

import pytest

from inproc.telemetry.figures import GpuFigures, TelemetryFigures
from inproc.telemetry.judge import throttle_check
from inproc.telemetry.judge import MAX_THROTTLED_SAMPLE_FRACTION, MIN_SM_CLOCK_FRACTION


def gpu(index=0, clock=1900.0, default=1980.0, **fractions) -> GpuFigures:
    return GpuFigures(
        index=index,
        name="fake",
        power_source="instant",
        default_sm_clock_mhz=default,
        num_samples=300,
        energy_j=1.0,
        mean_power_w=600.0,
        max_power_w=700.0,
        mean_sm_clock_mhz=clock,
        mean_mem_clock_mhz=2619.0,
        max_temp_c=70.0,
        mean_gpu_util_pct=100.0,
        max_mem_used_mib=1.0,
        throttle_fraction={"sw_power_cap": 0.0, "hw_slowdown": 0.0, **fractions},
    )


def figures(*gpus: GpuFigures, reasons=None) -> TelemetryFigures:
    return TelemetryFigures(
        window_s=30.0, output_tokens=100, gpus=gpus, energy_j=None, joules_per_token=None,
        tokens_per_joule=None, mean_power_w=None, max_gpu_power_w=None, mean_sm_clock_mhz=None,
        max_temp_c=None, throttle_fraction={}, process_cpu_util_pct=None, host_cpu_util_pct=None,
        max_rss_bytes=None, mean_cpu_freq_mhz=None, sampler_cpu_pct=None, reasons=reasons or {},
    )  # fmt: skip


def test_a_clean_gpu_passes():
    assert throttle_check(figures(gpu())) == (True, "not throttled")


@pytest.mark.parametrize(
    "cause", ["hw_slowdown", "hw_thermal_slowdown", "sw_thermal_slowdown", "hw_power_brake_slowdown"]
)
def test_each_failing_cause_above_one_percent_fails_and_is_named(cause):
    passed, reason = throttle_check(figures(gpu(), gpu(index=3, **{cause: 0.02})))
    assert not passed
    assert reason == f"throttled: GPU 3 {cause} in 2.0% of samples (limit 1%)"


def test_exactly_the_limit_passes():
    assert throttle_check(figures(gpu(hw_slowdown=MAX_THROTTLED_SAMPLE_FRACTION)))[0] is True


def test_software_power_cap_is_recorded_not_failed():
    passed, reason = throttle_check(figures(gpu(sw_power_cap=0.9)))
    assert passed
    assert reason == "not throttled (GPU 0 sw_power_cap in 90.0% of samples (recorded, not a failure))"


def test_a_low_mean_sm_clock_fails_even_without_reason_bits():
    low = 1980.0 * MIN_SM_CLOCK_FRACTION - 1
    passed, reason = throttle_check(figures(gpu(clock=low)))
    assert not passed
    assert (
        "GPU 0 mean SM clock 1484 MHz is 74.9% of its default 1980 MHz (limit 75%; reason bits set: none)"
        in reason
    )
    assert throttle_check(figures(gpu(clock=1980.0 * MIN_SM_CLOCK_FRACTION)))[0] is True


def test_all_causes_are_listed_together():
    passed, reason = throttle_check(
        figures(gpu(hw_slowdown=0.5, clock=900.0), gpu(index=1, hw_thermal_slowdown=0.2))
    )
    assert not passed
    assert "GPU 0 hw_slowdown in 50.0%" in reason
    assert "GPU 0 mean SM clock 900 MHz" in reason and "reason bits set: hw_slowdown 50%)" in reason
    assert "GPU 1 hw_thermal_slowdown in 20.0%" in reason


def test_without_gpu_telemetry_the_cell_is_not_judged():
    passed, reason = throttle_check(
        figures(reasons={"energy_j": "GPU telemetry absent: NVML unavailable: x"})
    )
    assert passed and reason == "not judged: GPU telemetry absent: NVML unavailable: x"


def test_missing_default_clock_judges_the_bits_only():
    passed, reason = throttle_check(figures(gpu(default=None)))
    assert passed and reason == "not throttled (not judged: GPU 0 default SM clock absent)"
    assert throttle_check(figures(gpu(default=None, hw_slowdown=0.5)))[0] is False
