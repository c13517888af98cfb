"""One function per telemetry figure, each over one source's raw samples and one window.

Every function takes a :class:`SampleSeries` and the window ``[t_open_s, t_close_s]``
in ``time.perf_counter()`` seconds (the driver's measurement window) and either returns
the figure or raises :class:`Absent` with the reason. Two kinds of figure:

* counters (energy, violation time, CPU time) are cumulative: the figure is the
  counter's value interpolated linearly at ``t_close_s`` minus the same at
  ``t_open_s``, from the samples on either side of each edge. This is exact for the
  window, not for the sample grid, and needs samples bracketing the window (the
  sampler takes one at start_cell and one at stop_cell).
* levels (power, clocks, temperature, utilisation, RSS, reason bits) are taken over
  the samples whose timestamps lie inside the window. A window shorter than the
  sampling period may hold none; then the sample just before it and the one just
  after it stand in.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from inproc.telemetry.nvml_ids import CLOCKS_EVENT_REASONS
from inproc.telemetry.series import SampleSeries
from inproc.telemetry.trace import EnergyRead, Mark

_HALF_RANGE_U64 = 2**63
# An edge read or mark stands for a window edge when it was marked within this many seconds of
# it: a decode window's close is marked at the end of the first step past it, a prefill entry's
# edges when its sampling begins and ends (before its first submit, after its last token).
EDGE_TOLERANCE_S = 1.0


class Absent(Exception):
    """A figure that cannot be computed; the message says why."""


def gpu_energy_j(series: SampleSeries, t_open_s: float, t_close_s: float) -> float:
    """Joules one GPU used from ``t_open_s`` to ``t_close_s``.

    Source: nvmlDeviceGetTotalEnergyConsumption (mJ since driver load), interpolated at
    both edges. Steps are taken modulo 2**64, which undoes a wrap of the 64-bit counter;
    a step of 2**63 or more can only be the counter going back (driver reload), and
    makes the figure absent rather than guessed.
    """
    t, energy_mj = _valid(series, "energy_mj")
    steps = np.diff(energy_mj.astype(np.uint64))  # uint64 arithmetic wraps modulo 2**64
    back = np.nonzero(steps >= _HALF_RANGE_U64)[0]
    if back.size:
        i = int(back[0])
        raise Absent(
            f"energy counter went back between samples at {t[i]:.3f} s and {t[i + 1]:.3f} s (driver reload?)"
        )
    cumulative_mj = np.concatenate(([0.0], np.cumsum(steps.astype(np.float64))))
    return _interp_delta(t, cumulative_mj, t_open_s, t_close_s, "energy") / 1000.0


def edge_energy_j(reads: Sequence[EnergyRead], gpu: int, t_open_s: float, t_close_s: float) -> float:
    """Joules GPU ``gpu`` used over the window, from its energy counter read at the window's edges.

    Source: nvmlDeviceGetTotalEnergyConsumption (mJ since driver load), read by the GPU
    sampler process when the engine marked each edge (``EnergyRead``): the read marked
    nearest ``t_open_s`` and the one nearest ``t_close_s``, each within ``EDGE_TOLERANCE_S``.
    The figure is the difference of the two reads, modulo 2**64 (a counter wrap).

    What it resolves: the counter changes about every 100 ms (measured on the H200: 10 changes
    in 1 s of back-to-back reads), so each read returns the energy as of its last update, up to
    100 ms old, and the difference is off from the window's energy by up to one update's energy
    at each edge, the two errors partly cancelling: within +-(0.1 s x power) overall, plus the
    energy between an edge and its read (the read follows the mark by the sampler's wake-up
    and the reads of the GPUs before it, about 3 ms each; a decode window's close is marked
    at the end of the first step past it). At steady power that is +-0.3 % of a 30 s window,
    +-10 % of a 1 s window; a window under half a second is not resolved (+-20 % or worse).
    """
    opened = _nearest_read(reads, gpu, t_open_s, "open")
    closed = _nearest_read(reads, gpu, t_close_s, "close")
    step = (closed.energy_mj - opened.energy_mj) % 2**64
    if step >= _HALF_RANGE_U64:
        raise Absent(f"GPU {gpu}'s energy counter went back between its reads at {opened.t_s:.3f} s and "
                     f"{closed.t_s:.3f} s (driver reload?)")
    return step / 1000.0


# Which edges may stand for a window's open and its close: a decode window's own, else the entry's
# sampling start / stop (a prefill entry's window spans its sampling).
_EDGE_LABELS = {"open": ("open", "start"), "close": ("close", "stop")}


def _nearest_read(reads: Sequence[EnergyRead], gpu: int, t_s: float, edge: str) -> EnergyRead:
    mine = [r for r in reads if r.gpu == gpu and r.label in _EDGE_LABELS[edge]]
    if not mine:
        raise Absent(f"no energy read of GPU {gpu} at the window's {edge}")
    best = min(mine, key=lambda r: abs(r.t_mark_s - t_s))
    if abs(best.t_mark_s - t_s) > EDGE_TOLERANCE_S:
        raise Absent(f"no energy read of GPU {gpu} within {EDGE_TOLERANCE_S:g} s of the window's {edge} "
                     f"(nearest: {best.label} at {best.t_mark_s - t_s:+.3f} s)")
    return best


def inproc_telemetry_cpu_s(marks: Sequence[Mark], t_open_s: float, t_close_s: float) -> tuple[float, float]:
    """``(gpu_s, host_s)``: CPU seconds telemetry took in the engine's process over the window.

    Source: the marks the engine made at the window's edges (the nearest to each edge, within
    ``EDGE_TOLERANCE_S``), each holding the CPU the marks' own calls had taken so far
    (``time.thread_time`` around each) and the host sampling thread's CPU clock
    (``pthread_getcpuclockid``); the figure is their increase from the open mark to the close mark.
    """
    if not marks:
        raise Absent("no edge marks in this trace (format 1: the sampler ran as a thread of the engine's process)")
    near = []
    for t_s, edge in ((t_open_s, "open"), (t_close_s, "close")):
        candidates = [m for m in marks if m.label in _EDGE_LABELS[edge]]
        if not candidates:
            raise Absent(f"no mark at the window's {edge}")
        best = min(candidates, key=lambda m: abs(m.t_s - t_s))
        if abs(best.t_s - t_s) > EDGE_TOLERANCE_S:
            raise Absent(f"no mark within {EDGE_TOLERANCE_S:g} s of the window's {edge}")
        near.append(best)
    return near[1].gpu_cpu_s - near[0].gpu_cpu_s, near[1].host_cpu_s - near[0].host_cpu_s


def counter_delta(series: SampleSeries, column: str, t_open_s: float, t_close_s: float) -> float:
    """Increase of a cumulative float counter (``column``) over the window, in its unit.

    Used for NVML violation time (ns) and CPU time (s). A counter that decreases was
    reset, and the figure is absent.
    """
    t, values = _valid(series, column)
    drops = np.nonzero(np.diff(values) < 0)[0]
    if drops.size:
        i = int(drops[0])
        raise Absent(f"{column} went back between samples at {t[i]:.3f} s and {t[i + 1]:.3f} s")
    return _interp_delta(t, values, t_open_s, t_close_s, column)


def window_mean(series: SampleSeries, column: str, t_open_s: float, t_close_s: float) -> float:
    """Mean of ``column`` over the samples in the window (unweighted: samples are evenly spaced)."""
    return float(np.mean(window_values(series, column, t_open_s, t_close_s)))


def window_max(series: SampleSeries, column: str, t_open_s: float, t_close_s: float) -> float:
    """Largest value of ``column`` among the samples in the window."""
    return float(np.max(window_values(series, column, t_open_s, t_close_s)))


def throttle_fractions(series: SampleSeries, t_open_s: float, t_close_s: float) -> dict[str, float]:
    """Per clocks-event cause, the fraction of in-window samples whose reason bit was set.

    Source: nvmlDeviceGetCurrentClocksEventReasons, one bit mask per sample; every
    cause NVML defines is reported (gpu_idle and sw_power_cap included), 0.0 when unset.
    """
    bits = window_values(series, "clocks_event_reasons", t_open_s, t_close_s).astype(np.uint64)
    return {name: float(np.mean((bits & np.uint64(mask)) != 0)) for name, mask in CLOCKS_EVENT_REASONS}


def process_cpu_util_pct(series: SampleSeries, t_open_s: float, t_close_s: float) -> float:
    """This process's CPU use over the window, in % of one core (0 to 100 x cores).

    Source: os.times() user + system seconds (all threads of this process), as a counter;
    its resolution is one clock tick (10 ms), so a 0.5 s window reads within +-2 points.
    """
    return (
        100.0 * counter_delta(series, "process_cpu_s", t_open_s, t_close_s) / _window_s(t_open_s, t_close_s)
    )


def host_cpu_util_pct(series: SampleSeries, t_open_s: float, t_close_s: float) -> float:
    """All CPUs' busy share over the window, in % of the whole host (0 to 100).

    Source: psutil.cpu_times(), busy = total - idle - iowait, both as counters.
    """
    total = counter_delta(series, "host_total_s", t_open_s, t_close_s)
    if total <= 0:
        raise Absent("host CPU time did not advance over the window (counter resolution is 10 ms)")
    busy = counter_delta(series, "host_busy_s", t_open_s, t_close_s)
    return min(100.0, 100.0 * busy / total)  # busy <= total; interpolation may round past it


def window_values(series: SampleSeries, column: str, t_open_s: float, t_close_s: float) -> np.ndarray:
    """Valid values of ``column`` inside the window, else the nearest one on each side."""
    t, values = _valid(series, column, minimum=1)
    inside = (t >= t_open_s) & (t <= t_close_s)
    if inside.any():
        return values[inside]
    before = np.nonzero(t < t_open_s)[0]
    after = np.nonzero(t > t_close_s)[0]
    picks = ([int(before[-1])] if before.size else []) + ([int(after[0])] if after.size else [])
    return values[picks]


def _valid(series: SampleSeries, column: str, minimum: int = 2) -> tuple[np.ndarray, np.ndarray]:
    t, values = series.valid(column)
    if t.size == 0:
        raise Absent(series.absent_reason(column) or "no samples")
    if t.size < minimum:
        raise Absent(f"only {t.size} valid sample of {column}; at least {minimum} are needed")
    return t, values


def _interp_delta(
    t: np.ndarray, cumulative: np.ndarray, t_open_s: float, t_close_s: float, what: str
) -> float:
    if t_open_s < t[0] or t_close_s > t[-1]:
        raise Absent(
            f"window {t_open_s:.3f}-{t_close_s:.3f} s is not covered by the {what} samples "
            f"({t[0]:.3f}-{t[-1]:.3f} s)"
        )
    return float(np.interp(t_close_s, t, cumulative) - np.interp(t_open_s, t, cumulative))


def _window_s(t_open_s: float, t_close_s: float) -> float:
    if t_close_s <= t_open_s:
        raise Absent(f"empty window {t_open_s:.3f}-{t_close_s:.3f} s")
    return t_close_s - t_open_s
