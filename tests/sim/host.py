"""Host samples and step times of one window whose truth is known: a quiet machine or one with a burner.

The counters are drawn as the kernel keeps them: every CPU second is busy or idle, counted in 10 ms ticks
(``TICK_S``), sampled at ``hz`` as ``inproc.telemetry.host_reader`` samples them (the children's CPU on
every 10th sample). Per sample interval:

- this tree uses ``tree_cores`` (jittered by ``tree_jitter`` of itself);
- a quiet machine's daemons and kernel threads use a gamma-distributed share with mean
  ``daemon_cores`` (shape 0.5: mostly nothing, now and then a burst);
- a burner, while it runs (``burner_from`` to ``burner_to``, as shares of the window), uses
  ``burner_cores`` more, capped at the cores left;
- the hypervisor steals ``steal_cores`` steadily, plus a share of what runs drawn from a gamma distribution
  with mean ``steal_share`` and shape ``steal_shape`` (small: mostly a sliver, now and then a burst), drawn
  once a second (``STEAL_BLOCK_S``), as
  measured on a quiet 2-vCPU cloud VM (``scripts/bench.py disturbed --real`` prints that VM's figures);
- the tree may run on every CPU (its CPUs' columns are the host's);
- steps take ``step_ms`` with lognormal jitter ``step_jitter``, one in ``prefill_every`` a refill
  prefill of ``prefill_x`` times, and ``slow_x`` times longer while the burner runs (contention for the
  tree's core, ``burner_slows``).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from inproc.telemetry.series import SampleSeries
from inproc.telemetry.trace import HOST_COLUMNS, TelemetryTrace

TICK_S = 0.01
STEAL_BLOCK_S = 1.0


@dataclass(frozen=True)
class HostSim:
    cores: int = 2
    window_s: float = 5.0
    hz: float = 10.0
    tree_cores: float = 1.0
    tree_jitter: float = 0.1
    daemon_cores: float = 0.03
    burner_cores: float = 0.0
    burner_from: float = 0.0
    burner_to: float = 1.0
    steal_cores: float = 0.0
    steal_share: float = 0.0
    steal_shape: float = 0.3
    step_ms: float = 10.0
    step_jitter: float = 0.15
    prefill_every: int = 60
    prefill_x: float = 8.0
    burner_slows: float = 1.5  # step time × this while the burner runs


# A quiet 2-vCPU cloud VM's steal under the engine's load, measured on one (``scripts/bench.py disturbed --real``:
# 117 decode windows of 3 s, steal ÷ running time on the engine's CPUs: mean 1.65 %, median 1.0 %, 90th percentile
# 4.5 %, largest 12.4 %, 8 of 117 at or above 5 %). A gamma of mean 1.65 % and shape 0.2 drawn each second gives
# 3 s windows of median 0.9 %, 90th percentile 4.2 %, 6 % of them at or above 5 %; see docs/measurements.md.
QUIET_STEAL = HostSim(steal_share=0.0165, steal_shape=0.2)


def simulate(s: HostSim, rng: np.random.Generator) -> tuple[TelemetryTrace, float, float, np.ndarray]:
    """(trace, window open, window close, the window's step times in s): the window is the trace's span less
    one sample at each end, as the sampler brackets a driver's window."""
    dt = 1.0 / s.hz
    n = int(round(s.window_s * s.hz)) + 3
    t = np.arange(n) * dt
    share = (t[1:] / (t[-1])) if n > 1 else t
    burning = (share > s.burner_from) & (share <= s.burner_to) & (s.burner_cores > 0)
    tree = np.clip(s.tree_cores * (1 + s.tree_jitter * rng.standard_normal(n - 1)), 0, s.cores)
    daemons = rng.gamma(0.5, s.daemon_cores / 0.5, n - 1) if s.daemon_cores > 0 else np.zeros(n - 1)
    burner = np.where(burning, s.burner_cores, 0.0)
    running = np.minimum(tree + daemons + burner, s.cores)
    shares = _steal_shares(s, rng, n - 1)
    stolen = np.minimum(s.steal_cores + shares * running, s.cores - running)
    busy = _ticks(np.concatenate(([0.0], np.cumsum((running + stolen) * dt))))
    total = _ticks(t * s.cores)
    steal = _ticks(np.concatenate(([0.0], np.cumsum(stolen * dt))))
    own = _ticks(np.concatenate(([0.0], np.cumsum(tree * dt))))
    children = np.where(np.arange(n) % 10 == 0, 0.0, np.nan)
    children[-1] = 0.0
    values = {"process_cpu_s": own, "host_busy_s": busy, "host_total_s": total, "host_steal_s": steal,
              "children_cpu_s": children, "rss_bytes": np.full(n, 1e9),
              "cpu_freq_mhz": np.full(n, np.nan), "cpu_freq_max_mhz": np.full(n, np.nan),
              "tree_cpus_busy_s": busy, "tree_cpus_total_s": total, "tree_cpus_steal_s": steal}
    assert set(values) == {c for c, _ in HOST_COLUMNS}
    ok = {k: ~np.isnan(v) for k, v in values.items()}
    host = SampleSeries(t, values, ok, {"cpu_freq_mhz": "no frequency", "cpu_freq_max_mhz": "no frequency"}, {})
    trace = TelemetryTrace(s.hz, 0.0, float(t[-1]), 0.0, 0, (), "no GPU", host, None)
    return trace, float(t[1]), float(t[-2]), _steps(s, rng, burning, t)


def _steal_shares(s: HostSim, rng: np.random.Generator, intervals: int) -> np.ndarray:
    """The hypervisor's share of each sample interval's running time: one gamma draw per ``STEAL_BLOCK_S``
    (steal comes in bursts of seconds, as another guest's work does)."""
    if s.steal_share <= 0:
        return np.zeros(intervals)
    per = max(1, int(round(STEAL_BLOCK_S * s.hz)))
    draws = rng.gamma(s.steal_shape, s.steal_share / s.steal_shape, intervals // per + 1)
    return np.repeat(draws, per)[:intervals]


def _ticks(seconds: np.ndarray) -> np.ndarray:
    """A cumulative counter as the kernel reports it: whole ticks."""
    return np.floor(seconds / TICK_S) * TICK_S


def _steps(s: HostSim, rng: np.random.Generator, burning: np.ndarray, t: np.ndarray) -> np.ndarray:
    """Step times over the window, slowed where the burner runs."""
    steps, now, end = [], float(t[1]), float(t[-2])
    while now < end:
        x = s.step_ms / 1000 * float(rng.lognormal(0.0, s.step_jitter))
        if s.prefill_every and rng.random() < 1 / s.prefill_every:
            x *= s.prefill_x
        i = min(int(now * s.hz), burning.size - 1)
        x *= s.burner_slows if burning[i] else 1.0
        steps.append(x)
        now += x
    return np.array(steps)
