"""The host reader's CPUs of the engine's tree: the union of its threads' affinity, and those CPUs' counters read from
the kernel's per-CPU lines, checked against a process pinned by the test and against /proc/stat read here."""
from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest

from inproc.telemetry.disturbed import cpu_figures
from inproc.telemetry.host_reader import HostReader, load_psutil

pytestmark = [pytest.mark.engine, pytest.mark.engine_free,  # it starts a process (no engine)
              pytest.mark.skipif(not hasattr(os, "sched_setaffinity") or len(os.sched_getaffinity(0)) < 2,
                                 reason="needs Linux affinity and two usable CPUs")]

TICK_S = 1 / os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 0.01


def _proc_stat_cpu(cpu: int) -> tuple[float, float]:
    """(all seconds, steal seconds) of ``cpu`` from /proc/stat, read here (not through the reader or psutil)."""
    with open("/proc/stat") as f:
        for line in f:
            if line.startswith(f"cpu{cpu} "):
                ticks = [int(x) for x in line.split()[1:]]
                return sum(ticks[:8]) * TICK_S, ticks[7] * TICK_S  # user..steal; guest is inside user
    raise AssertionError(f"no cpu{cpu} line")


def _child_cpu_s(pid: int) -> float:
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) * TICK_S


def test_a_tree_pinned_to_one_cpu_is_read_on_that_cpu_alone():
    """Wrong code this fails: the host's CPUs taken as the tree's, the sampler's own CPUs added, a CPU's line
    misread (another index, steal from the aggregate line)."""
    pinned = max(os.sched_getaffinity(0))
    spin = f"import os, time\nos.sched_setaffinity(0, {{{pinned}}})\nend = time.monotonic() + 20\n" \
           "while time.monotonic() < end:\n    pass\n"
    child = subprocess.Popen([sys.executable, "-c", spin])
    try:
        time.sleep(0.5)
        reader = HostReader(load_psutil()[0], 16, pid=child.pid)
        reader.new_cell()
        assert reader.cpus == (pinned,)
        t0 = time.perf_counter()
        reader.take(t0, closing=True)
        before, child0 = _proc_stat_cpu(pinned), _child_cpu_s(child.pid)
        time.sleep(1.0)
        t1 = time.perf_counter()
        reader.take(t1, closing=True)
        after, child1 = _proc_stat_cpu(pinned), _child_cpu_s(child.pid)
        fig = cpu_figures(reader.series(), t0, t1)
    finally:
        child.kill()
        child.wait()
    print(fig)
    series = reader.series()
    t, steal = series.valid("tree_cpus_steal_s")
    # The steal column is the pinned CPU's own, as /proc/stat gave it just after each read (a tick of slack).
    assert steal[-1] == pytest.approx(after[1], abs=2 * TICK_S) and steal[0] == pytest.approx(before[1], abs=2 * TICK_S)
    assert fig["cpus_cores"] == pytest.approx(1.0, abs=0.05)  # one CPU of the host's
    assert fig["host_cores"] == pytest.approx(len(os.sched_getaffinity(0)), abs=0.1 * fig["host_cores"])
    # The tree's CPU is the child's, by its own counters read here (a few ticks between the two reads).
    assert fig["tree_cores"] == pytest.approx((child1 - child0) / fig["window_s"], abs=4 * TICK_S / fig["window_s"])
    assert fig["cpus_idle_cores"] < 0.2  # the spinning child leaves its CPU busy


def test_this_process_s_cpus_are_its_affinity():
    reader = HostReader(load_psutil()[0], 16)
    reader.new_cell()
    assert reader.cpus == tuple(sorted(os.sched_getaffinity(0)))


def test_each_entry_after_the_first_carries_the_runs_steady_steal():
    """Wrong code this fails: the entries' steal never added to the run's steady level (an entry's own samples
    start after its start mark, so a reading from mark to mark is outside them), or the first entry's level taken
    from its own steal. Real sampling on this machine, no engine."""
    from inproc.telemetry.sampler import open_telemetry

    telemetry = open_telemetry(hz=20.0)
    try:
        traces = []
        for _ in range(2):
            telemetry.start_cell()
            end = time.monotonic() + 0.4
            while time.monotonic() < end:  # keep a CPU busy: steal accrues only on running CPUs
                pass
            traces.append(telemetry.stop_cell())
    finally:
        telemetry.close()
    if traces[0].host is None:
        pytest.skip(f"no host samples here: {traces[0].host_absent_reason}")
    assert traces[0].steady_steal_share is None  # nothing measured before the first entry (no build here)
    assert traces[1].steady_steal_share is not None and 0.0 <= traces[1].steady_steal_share < 1.0
