"""The cell validity check fed by telemetry: was the GPU throttled during the window?

A throttled cell is kept and shown, flagged with the cause, and left out of
regression baselines: its speed says more about the machine than about the engine.
"""

from __future__ import annotations

from inproc.telemetry.figures import GpuFigures, TelemetryFigures

# A cause throttles the cell when its bit is set in more than this share of the
# window's samples. One stray sample in a 30 s window at 10 Hz (0.3%) passes.
MAX_THROTTLED_SAMPLE_FRACTION = 0.01

# Causes that fail the check: hardware protection or thermal limits slowed the clocks.
FAILING_CAUSES = ("hw_slowdown", "hw_thermal_slowdown", "sw_thermal_slowdown", "hw_power_brake_slowdown")

# Recorded, never failing: a GPU under full load normally sits at its power limit
# (the software power cap), and that is part of the hardware's speed, not an accident.
RECORDED_CAUSES = ("sw_power_cap",)

# The mean SM clock over the window must reach this share of the GPU's default
# application clock (nvmlDeviceGetDefaultApplicationsClock); lower means throttled even
# when no reason bit said so.
MIN_SM_CLOCK_FRACTION = 0.75


def throttle_check(figures: TelemetryFigures) -> tuple[bool, str]:
    """``(passed, reason)``: fails naming each GPU, cause and share past the thresholds."""
    if not figures.gpus:
        why = figures.reasons.get("energy_j", "GPU telemetry absent")
        return True, f"not judged: {why}"
    failures: list[str] = []
    notes: list[str] = []
    unjudged: list[str] = []
    for gpu in figures.gpus:
        failures += _cause_failures(gpu, unjudged)
        failures += _clock_failures(gpu, unjudged)
        for cause in RECORDED_CAUSES:
            share = gpu.throttle_fraction.get(cause, 0.0)
            if share > 0:
                notes.append(f"GPU {gpu.index} {cause} in {share:.1%} of samples (recorded, not a failure)")
    if failures:
        return False, "throttled: " + "; ".join(failures)
    if len(unjudged) == 2 * len(figures.gpus):
        return True, "not judged: " + "; ".join(unjudged)
    reason = "not throttled"
    extra = notes + [f"not judged: {u}" for u in unjudged]
    if extra:
        reason += " (" + "; ".join(extra) + ")"
    return True, reason


def _cause_failures(gpu: GpuFigures, unjudged: list[str]) -> list[str]:
    if not gpu.throttle_fraction:
        why = gpu.reasons.get("throttle_fraction", "no samples")
        unjudged.append(f"GPU {gpu.index} clocks-event reasons absent ({why})")
        return []
    out = []
    for cause in FAILING_CAUSES:
        share = gpu.throttle_fraction.get(cause, 0.0)
        if share > MAX_THROTTLED_SAMPLE_FRACTION:
            limit = f"{MAX_THROTTLED_SAMPLE_FRACTION:.0%}"
            out.append(f"GPU {gpu.index} {cause} in {share:.1%} of samples (limit {limit})")
    return out


def _clock_failures(gpu: GpuFigures, unjudged: list[str]) -> list[str]:
    if gpu.mean_sm_clock_mhz is None or not gpu.default_sm_clock_mhz:
        missing = "mean SM clock" if gpu.mean_sm_clock_mhz is None else "default SM clock"
        unjudged.append(f"GPU {gpu.index} {missing} absent")
        return []
    share = gpu.mean_sm_clock_mhz / gpu.default_sm_clock_mhz
    if share >= MIN_SM_CLOCK_FRACTION:
        return []
    # Name the reason bits seen alongside, so a reader can tell a power-capped GEMM
    # from an unexplained slowdown without opening the raw samples.
    seen = [f"{c} {f:.0%}" for c, f in gpu.throttle_fraction.items() if f > MAX_THROTTLED_SAMPLE_FRACTION]
    return [
        f"GPU {gpu.index} mean SM clock {gpu.mean_sm_clock_mhz:.0f} MHz is {share:.1%} of its "
        f"default {gpu.default_sm_clock_mhz:.0f} MHz (limit {MIN_SM_CLOCK_FRACTION:.0%}; "
        f"reason bits set: {', '.join(seen) or 'none'})"
    ]
