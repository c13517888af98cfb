"""A bounded CPU burner for tests that must hold on a slower or loaded machine.

:func:`burning` starts ``workers`` child processes that spin on the CPU, and stops them when
its block ends, or after ``max_s`` seconds whatever happens (each child ends itself then, so
a test killed mid-block leaves no burner behind). The children are plain Python loops of their
own: they take CPU time from whatever else runs, as another job on a shared runner would.
"""
from __future__ import annotations

import subprocess
import sys
from contextlib import contextmanager
from typing import Iterator

_SPIN = "import time\nend = time.monotonic() + {max_s!r}\nwhile time.monotonic() < end:\n    sum(range(1000))\n"
# A burner of ``duty`` of a core: in each 20 ms (two counter ticks) it spins until it has had duty × 20 ms of CPU,
# then sleeps what is left of the 20 ms (a scheduler that gives it less CPU gets no catch-up later).
_DUTY = ("import time\nend = time.monotonic() + {max_s!r}\nwhile time.monotonic() < end:\n"
         "    t, c = time.monotonic(), time.process_time()\n"
         "    while time.process_time() - c < {spin_s!r} and time.monotonic() - t < 0.02:\n        sum(range(1000))\n"
         "    time.sleep(max(0.0, 0.02 - (time.monotonic() - t)))\n")


@contextmanager
def burning(workers: int = 2, max_s: float = 600.0) -> Iterator[list[subprocess.Popen]]:
    """``workers`` spinning children for the block (each ends by itself after ``max_s`` seconds at the latest)."""
    procs = [subprocess.Popen([sys.executable, "-c", _SPIN.format(max_s=float(max_s))],
                              stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
             for _ in range(workers)]
    try:
        yield procs
    finally:
        for p in procs:
            p.kill()
        for p in procs:
            p.wait(timeout=30)


_LAUNCH = ("import subprocess, sys\n"
           "for _ in range({workers}):\n"
           "    p = subprocess.Popen([sys.executable, '-c', {spin!r}], stdin=subprocess.DEVNULL,\n"
           "                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)\n"
           "    print(p.pid)\n")


@contextmanager
def burning_apart(workers: int = 2, max_s: float = 600.0, duty: float = 1.0) -> Iterator[list[int]]:
    """Like :func:`burning`, but the burners are no children of this process: a launcher starts them and exits, so
    they are re-parented, as another program's processes are (a reader of this process tree's CPU, workers
    included, must not count them). ``duty`` < 1: each wants only that share of a core (it sleeps the rest).
    Yields their pids; each is killed at the block's end if it still spins."""
    if duty >= 1.0:
        spin = _SPIN.format(max_s=float(max_s))
    else:
        spin = _DUTY.format(max_s=float(max_s), spin_s=0.02 * duty)
    out = subprocess.run([sys.executable, "-c", _LAUNCH.format(workers=int(workers), spin=spin)],
                         capture_output=True, text=True, check=True, timeout=60)
    pids = [int(x) for x in out.stdout.split()]
    try:
        _wait_spinning(pids)
        yield pids
    finally:
        for pid in pids:
            _kill_burner(pid)


def _wait_spinning(pids: list[int], timeout_s: float = 30.0) -> None:
    """Until each burner has used 0.1 s of CPU (an interpreter starts slowly on a loaded machine)."""
    import os
    import time

    tick = os.sysconf("SC_CLK_TCK")
    end = time.monotonic() + timeout_s
    for pid in pids:
        while time.monotonic() < end:
            try:
                with open(f"/proc/{pid}/stat") as f:
                    fields = f.read().rsplit(")", 1)[1].split()
            except FileNotFoundError:
                break
            if (int(fields[11]) + int(fields[12])) / tick >= 0.1:  # utime + stime
                break
            time.sleep(0.02)


def _kill_burner(pid: int) -> None:
    """SIGKILL ``pid`` when it is still one of our burners (its command line holds the spin loop)."""
    import os
    import signal

    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            if b"sum(range(1000))" not in f.read():
                return  # ended by itself, and the pid reused
        os.kill(pid, signal.SIGKILL)
    except (FileNotFoundError, ProcessLookupError):
        pass
