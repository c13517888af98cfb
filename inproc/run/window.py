"""When a decode cell's window opens, and whether the heap is frozen before it does (``inproc.run.decode``).

Garbage collection: when the window opens, the heap is frozen (``gc.freeze``), so no
collection inside the window walks what was alive before it (the engine, earlier cells'
records), and unfrozen when it closes. An engine that keeps its own heap frozen (vLLM
freezes its startup heap) is left as it is: ``gc.unfreeze`` cannot undo only our part,
and freezing again at every window would keep garbage that dies later (cycles among a
cell's requests) from ever being collected. What the loop keeps grows per step only in
the step arrays and the token ``array``s, which no collection walks, and per finished
request by its ``RequestTrace`` (moved to ``done``); a step's result is dropped once filed.
"""
from __future__ import annotations

import gc


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
