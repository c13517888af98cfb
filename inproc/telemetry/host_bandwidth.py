"""The host's memory bandwidth, measured once at run start (the CPU's peak for step anatomy)."""
from __future__ import annotations

import time

import numpy as np

#: Bytes per array: far beyond any CPU cache, small enough to cost well under a second.
COPY_BYTES = 128 * 2**20
REPEATS = 5


def copy_bandwidth(nbytes: int = COPY_BYTES, repeats: int = REPEATS) -> tuple[float, str]:
    """(bytes/s, method): the best of ``repeats`` one-thread ``numpy.copyto`` of ``nbytes``.

    Each copy reads ``nbytes`` and writes ``nbytes``, so the figure is 2 × nbytes ÷ the
    fastest copy's ``perf_counter`` time. The arrays are touched once before timing.
    """
    src = np.ones(nbytes // 8, dtype=np.float64)
    dst = np.empty_like(src)
    np.copyto(dst, src)
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        np.copyto(dst, src)
        best = min(best, time.perf_counter() - t0)
    method = (f"measured at run start: one-thread numpy copy of {nbytes / 2**20:,.0f} MiB, best of {repeats}, "
              "bytes read + written ÷ time")
    return 2 * nbytes / best, method
