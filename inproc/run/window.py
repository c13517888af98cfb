"""When a decode cell's window opens, and what happens at its two edges (``inproc.run.decode``).

Garbage collection: when the window opens, the heap is frozen (``gc.freeze``), so no
collection inside the window walks what was alive before it (the engine, earlier cells'
records), and unfrozen when it closes. An engine that keeps its own heap frozen (vLLM
freezes its startup heap) is left as it is: ``gc.unfreeze`` cannot undo only our part,
and freezing again at every window would keep garbage that dies later (cycles among a
cell's requests) from ever being collected. What the loop keeps grows per step only in
the step arrays and the token ``array``s, which no collection walks, and per finished
request by its ``RequestTrace`` (moved to ``done``); a step's result is dropped once filed.

Telemetry: whoever listens (the runner's sampler) is told the window's edges, and reads the GPUs'
energy counters there (``inproc.telemetry.sampler.Telemetry.mark``: a pipe write in this process).
"""
from __future__ import annotations

import gc
from typing import Callable


def window_opens(started: int, c: int, finished: int, now_s: float, limit_s: float) -> str:
    """Why the decode window opens at this step (``started`` of the first ``c`` requests have
    their first token, ``finished`` requests finished in it), or "" while warm-up goes on."""
    if started == c:
        return f"all {c} requests decoding"
    if finished:
        return f"a request finished while {started} of {c} had started decoding"
    if now_s > limit_s:
        return f"warm-up limit {limit_s:g} s passed with {started} of {c} decoding"
    return ""


def heap_frozen() -> bool:
    """Whether the heap is frozen already (an engine that freezes its own: vLLM).

    ``gc.get_freeze_count`` walks every frozen object (a quarter of a second for vLLM's
    heap on a busy CPU): ask before a window opens, never inside one.
    """
    return gc.get_freeze_count() > 0


class WindowEdges:
    """A decode window's two edges: the heap frozen and unfrozen, ``on_edge(label, t_s)`` told."""

    def __init__(self, on_edge: Callable[[str, float], None] | None = None) -> None:
        self.freeze = not heap_frozen()  # asked now: it costs time (see heap_frozen)
        self.frozen = False  # the window froze the heap
        self.on_edge = on_edge

    def opened(self, t_s: float) -> None:
        """The window opened at ``t_s`` (absolute clock)."""
        if self.on_edge is not None:
            self.on_edge("open", t_s)
        if self.freeze:
            gc.freeze()  # constant time: the generations' lists are moved, not walked
            self.frozen = True

    def closed(self, t_s: float | None = None) -> None:
        """The window closed, known at ``t_s`` (the end of the step that closed it); None: the cell is
        ending another way (an error, Ctrl-C), and only the heap is unfrozen."""
        if self.frozen:
            self.frozen = False
            gc.unfreeze()
        if t_s is not None and self.on_edge is not None:
            self.on_edge("close", t_s)
