"""The host reader counts its children's CPU as this tree's (engine workers), and other programs' as other CPU."""
from __future__ import annotations

import time

import pytest

from inproc.telemetry.disturbed import cpu_figures
from inproc.telemetry.host_reader import HostReader, load_psutil
from tests.load import burning, burning_apart

pytestmark = [pytest.mark.engine, pytest.mark.engine_free]  # it starts processes (burners, no engine)


def _read(seconds: float = 1.5) -> dict:
    reader = HostReader(load_psutil()[0], 16)
    reader.new_cell()
    t0 = time.perf_counter()
    reader.take(t0, closing=True)
    time.sleep(seconds)
    t1 = time.perf_counter()
    reader.take(t1, closing=True)
    return cpu_figures(reader.series(), t0, t1)


def test_a_child_burner_is_this_trees_and_another_programs_is_not():
    with burning(1, max_s=30.0):
        time.sleep(0.5)  # its interpreter started
        child = _read()
    with burning_apart(1, max_s=30.0):
        apart = _read()
    print(child, apart, sep="\n")
    assert child["tree_cores"] > 0.3  # this process sleeps: the tree's CPU is its child's
    assert apart["tree_cores"] < 0.1 and apart["other_cores"] > 0.3
