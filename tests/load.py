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
