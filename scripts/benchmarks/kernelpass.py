"""The kernel pass's cost to the headline, inside one engine (part of ``scripts/bench.py anatomy``).

The pass runs after a cell's window (``inproc.run.kernelpass``), so by construction no window
step is profiled; what could still reach the window is what the profiler leaves behind it
(callbacks, memory, caches). So at each C a round runs two blocks, in alternating order:

- ``pass``: the kernel pass (``Engine.kernel_profiler``, ``--kernel-steps`` steps inside its step
  marks, the table read at its end), then a window of counted steps;
- ``none``: the same number of plain steps, then a window of counted steps.

Both windows run as a cell's does (the headline accounting level, the watchdog armed, GC
recorded). Printed: the window's tok/s after a pass ÷ after none, per round, median with its
quartiles and range (against anatomy's target), and the mean step time inside the pass ÷ plain steps
(the profiler's own cost, which no headline figure holds).
"""
from __future__ import annotations

import statistics
import time

from scripts.benchmarks.blocks import InFlight, run_block
from scripts.benchmarks.harness import interleaved, median_verdict, spread


def measure_kernels(engine, switch, dog, c: int, rounds: int, steps: int, settle: int, pass_steps: int,
                    target: float) -> str:
    """``rounds`` rounds of (pass, window) and (plain steps, window) at concurrency ``c``; the report lines,
    the window's ratio judged against ``target`` (anatomy's)."""
    flight = InFlight(engine, c, 211 + c)
    ratios, pass_s, plain_s, rows = [], [], [], []
    try:
        flight.settle()
        for r in range(rounds):
            tok_s = {}
            for profiled in interleaved(r, (True, False)):
                step_s, n_rows = _run_pass(flight, switch, dog, pass_steps, profiled)
                (pass_s if profiled else plain_s).append(step_s)
                rows += [n_rows] if profiled else []
                window = run_block(flight, switch, dog, "headline", True, True, steps, settle)
                tok_s[profiled] = window.tokens / window.span_s
            ratios.append(tok_s[True] / tok_s[False])
    finally:
        flight.gc.stop()
        flight.close()
    return (f"C={c}: kernel pass, the window after a pass ÷ after none, decode tok/s = {spread(ratios)} over {rounds} "
            f"rounds (a pass of {pass_steps} steps, windows of {steps} steps); {median_verdict(ratios, target)}\n"
            f"  inside the pass (no headline figure): mean step {statistics.mean(pass_s) * 1e6:.0f} µs profiled ÷ "
            f"{statistics.mean(plain_s) * 1e6:.0f} µs plain = {statistics.mean(pass_s) / statistics.mean(plain_s):.2f}; "
            f"{statistics.mean(rows):.0f} table rows per pass")


def _run_pass(flight: InFlight, switch, dog, steps: int, profiled: bool) -> tuple[float, int]:
    """The pass (or as many plain steps) as a cell runs it after its window; (mean step time s, table rows)."""
    switch.set("headline")
    profiler = flight.engine.kernel_profiler("", "bench") if profiled else None
    run = flight.engine.step
    if profiler is not None:
        profiler.start()
        plain = run
        flight.engine.step = lambda: profiler.step(plain)
    total = 0.0
    try:
        for _ in range(steps):
            _, _, step_s, _ = flight.step(dog)
            total += step_s
    finally:
        if profiler is not None:
            del flight.engine.step  # the bound method comes back from the class
    rows = len(profiler.stop()[0].table) if profiler is not None else 0  # the filed trace's table
    return total / steps, rows
