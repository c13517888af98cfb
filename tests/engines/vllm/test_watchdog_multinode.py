"""The step watchdog end to end: a worker node killed mid-cell must not leave the head waiting forever.

Two "nodes" on localhost as in ``test_multinode.py``: the head (``inproc cell``, a long window)
and ``inproc worker``. Once the head has started its decode cell, the worker's whole process
tree is killed (SIGKILL: no goodbye to the head) or frozen (SIGSTOP). Killed, on the CPU gloo
notices the closed socket: the head's step fails, the cell is Error, and the runner's rebuild
of the engine then waits for a node rank that never comes. Frozen, the head waits inside its
step (as NCCL does on GPUs). Either way ``--step-timeout 15`` must end the head with the
watchdog's exit code, the results file saved with the cell Error and "hung in ... after S s",
every thread's stack in RESULTS.hang.txt, and no process of either side left running.
"""
from __future__ import annotations

import os
import re
import subprocess
import sys
import threading
import time

import psutil
import pytest

from inproc import types as st
from inproc.record.io import load_results
from inproc.run.watchdog import HUNG_EXIT_CODE
from tests.conftest import DEFAULT_PROFILE, ROOT, needs_vllm
from tests.engines.two_nodes import Seen, free_port
from tests.engines.vllm.test_multinode import two_node_sets
from tests.spawn import start_child

pytestmark = [needs_vllm, pytest.mark.engine]  # starts `python -m inproc`


def _signal_tree(pid: int, how: str) -> None:
    """SIGKILL (``kill``) or SIGSTOP (``stop``: a frozen node, its sockets still open) to a process and its children."""
    try:
        root = psutil.Process(pid)
        procs = [root, *root.children(recursive=True)]
    except psutil.Error:
        return
    for p in procs:
        try:
            p.kill() if how == "kill" else p.suspend()
        except psutil.Error:
            pass


@pytest.mark.long
@pytest.mark.skipif((os.cpu_count() or 1) < 2, reason="one rank per node, one core per rank: needs 2 cores")
@pytest.mark.parametrize("how", ["kill", "stop"])
def test_a_worker_killed_mid_cell_ends_the_head_with_the_watchdogs_code(tmp_path, how):
    port, out = free_port(), tmp_path / "r.json"
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    cmd = [sys.executable, "-m", "inproc"]
    worker = start_child([*cmd, "worker", str(DEFAULT_PROFILE), "--node-rank", "1", *two_node_sets(port),
                               "--set", "env.VLLM_CPU_OMP_THREADS_BIND=1"], env=env,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    head = start_child([*cmd, "cell", str(DEFAULT_PROFILE), "--context", "256", "--concurrency", "1",
                             "--duration", "120", "--max-output", "4000", "--seed", "2", *two_node_sets(port),
                             "--set", "env.VLLM_CPU_OMP_THREADS_BIND=0", "--step-timeout", "15", "--out", str(out)],
                            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    seen, stop, lines = Seen(), threading.Event(), []

    def watch() -> None:
        while not stop.is_set():
            seen.add_tree(worker.pid)
            seen.add_tree(head.pid)
            time.sleep(0.2)

    def read() -> None:
        for line in head.stderr:
            lines.append(line)

    threads = [threading.Thread(target=watch, daemon=True), threading.Thread(target=read, daemon=True)]
    for t in threads:
        t.start()
    try:
        deadline = time.monotonic() + 400
        while not any("decode" in ln and "256 x 1" in ln for ln in lines):  # the cell has begun
            assert head.poll() is None and time.monotonic() < deadline, "".join(lines)[-3000:]
            time.sleep(0.2)
        time.sleep(3.0)  # well inside the 120 s window
        killed_at = time.monotonic()
        _signal_tree(worker.pid, how)
        rc = head.wait(timeout=400)
        if how == "stop":  # a frozen node never notices the head is gone: end it as its operator would
            _signal_tree(worker.pid, "kill")
        ended_s = time.monotonic() - killed_at
        time.sleep(2.0)  # ranks ended last need a moment to be reaped
        stop.set()
        threads[1].join(timeout=10)
        err = "".join(lines)
        left = seen.alive()
    finally:
        stop.set()
        seen.end(head, worker)
    print(f"head ended {ended_s:.0f} s after the kill, exit {rc}; watchdog said: "
          f"{[ln.strip() for ln in err.splitlines() if 'step watchdog' in ln]}")
    assert rc == HUNG_EXIT_CODE, err[-4000:]
    # The watchdog's limit (15 s for a step; a rebuild 3 x the first build), not the 120 s window's end.
    assert 15 <= ended_s < (60 if how == "stop" else 400), ended_s
    assert left == [], f"processes left running: {left}"
    assert "inproc: step watchdog: hung in " in err and "Thread 0x" in err  # faulthandler's dump of every thread
    (cell,) = load_results(out).decode
    assert cell.status == st.ERROR and cell.reason.endswith(" s)"), cell.reason
    assert re.search(r"(^|; then )hung in (step \d+|the engine rebuild) after \d+ s \(limit [\d.]+ s\)$", cell.reason)
    if how == "stop":  # the frozen peer: the head waits inside its step, which the watchdog names
        assert re.fullmatch(r"hung in step \d+ after \d+ s \(limit 15 s\)", cell.reason), cell.reason
    print(f"the cell: {cell.status}: {cell.reason}")
    assert any(n.startswith("step watchdog: hung in ") for n in load_results(out).notes)
    stacks = out.with_suffix(".hang.txt").read_text()
    assert stacks.startswith("inproc step watchdog: hung in ") and "Thread 0x" in stacks
