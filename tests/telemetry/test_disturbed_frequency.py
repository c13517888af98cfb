"""The disturbance rule's frequency share read from the host's samples (``inproc.telemetry.disturbed``): the mean
frequency over the window against the stated maximum, on the simulated host of tests/sim/host.py given the
frequency columns its quiet VM lacks (a FAKE frequency: this VM states none)."""
from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from inproc.telemetry.disturbed import judge
from tests.sim.host import HostSim, simulate


def judged_at(mhz: float, max_mhz: float):
    trace, t0, t1, steps = simulate(HostSim(window_s=4.0), np.random.default_rng(0))
    host = trace.host
    n = host.t_s.size
    values = {**host.values, "cpu_freq_mhz": np.full(n, mhz), "cpu_freq_max_mhz": np.full(n, max_mhz)}
    ok = {**host.ok, "cpu_freq_mhz": np.ones(n, bool), "cpu_freq_max_mhz": np.ones(n, bool)}
    host = replace(host, values=values, ok=ok, unsupported={})
    return judge(replace(trace, host=host), t0, t1, steps)


def test_the_frequency_share_is_the_mean_over_the_stated_maximum():
    """1,500 of 3,000 MHz is one half (mean × maximum, another column, or a dropped read is not)."""
    assert judged_at(1500.0, 3000.0).freq_share == pytest.approx(0.5)


def test_no_stated_maximum_gives_no_share():
    """Many VMs state a maximum of 0: no share, not an infinite one; a maximum of 1 MHz is still one."""
    assert judged_at(1500.0, 0.0).freq_share is None
    assert judged_at(0.5, 1.0).freq_share == pytest.approx(0.5)
