"""Fidelity A/B in one process on one engine: inproc's decode driver against a bare ``step()`` loop.

Both sides keep the same C requests in flight on the same engine (a finished request is
refilled before the next step) and take output tokens per second over the same kind of
window: it opens at the end of the first step after which all C requests have their
first token and holds the next ``window_steps`` steps (a window of steps, not seconds,
so both sides measure the same amount of work however slow a contended machine makes a
step). The driver's figure is ``total_tok_s`` of its cell (``inproc.run.decode``); the
bare loop counts the tokens its window's steps return and divides by the same span
(open → end of its last step), and does nothing else but read the clock once a step.
Both run their window with the heap frozen where the engine has not frozen it itself,
as the driver does (``inproc.run.decode``): the A/B measures the driver's bookkeeping,
not a garbage-collection policy.

Rounds alternate A B, B A, ... so drift in the machine's speed and any first/second
effect fall on both sides. Per C the ratio is of the medians, with the spread of the
pairwise ratios; the driver's own time between steps is printed beside it (its
``harness_overhead`` in µs per step).
"""
from __future__ import annotations

import gc
import statistics
import time

from inproc.measure import metrics as m
from inproc.plan.prompts import CellPrompts, PromptFactory
from inproc.run.decode import heap_frozen
from inproc.run.driver import DecodeSettings, Driver
from inproc.types import RequestSpec


def bare_tok_s(engine, prompts: CellPrompts, c: int, max_tokens: int, window_steps: int) -> float:
    """Output tokens per second of a minimal loop keeping ``c`` requests in flight (see the module docstring)."""
    serial = [0]

    def submit(i: int) -> str:
        serial[0] += 1
        rid = f"bare-{serial[0]}"
        engine.add_request(RequestSpec(rid, prompts.request(i), max_tokens))
        return rid

    freeze = not heap_frozen()  # asked before the window: it walks the frozen heap
    live = {submit(i) for i in range(c)}
    started, submitted, tokens, t_open, steps = set(), c, 0, None, 0
    while True:
        res = engine.step()
        now = time.perf_counter()
        finished = 0
        for d in res.deltas:
            if d.request_id not in live:
                continue
            if t_open is not None:
                tokens += len(d.new_token_ids)
            elif d.new_token_ids:
                started.add(d.request_id)
            if d.finished:
                live.discard(d.request_id)
                finished += 1
        if t_open is None:
            if len(started) == c or finished:
                t_open = now
                if freeze:
                    gc.freeze()
        else:
            steps += 1
            if steps == window_steps:
                break
        for _ in range(finished):
            live.add(submit(submitted))
            submitted += 1
    if freeze:
        gc.unfreeze()
    engine.abort(list(live))
    while engine.has_unfinished():
        engine.step()
    return tokens / (now - t_open)


def ab(engine, rounds: int, context: int, c: int, max_tokens: int, window_steps: int) -> dict:
    """``rounds`` pairs of driver and bare-loop windows on ``engine``, in order A B, B A, A B, ..."""
    info = engine.info
    factory = PromptFactory(info.vocab_size, 99, info.special_token_ids)
    driver = Driver(engine)
    ours, theirs, harness_us = [], [], []
    for r in range(rounds):
        for side in ("driver", "bare") if r % 2 == 0 else ("bare", "driver"):
            # Distinct prompts of the same length on both sides; a new seed tag per round (no prefix reuse).
            prompts = CellPrompts(factory, context, c, "distinct", 32)
            driver.cold_start()
            if side == "driver":
                trace = driver.decode_cell(prompts, DecodeSettings(c, 0.0, max_tokens, window_steps=window_steps),
                                           primed=True)
                w = m.window(trace)
                ours.append(m.total_tok_s(trace, w))
                harness_us.append(m.harness_overhead(trace, w) * w.length_s / window_steps * 1e6)
            else:
                theirs.append(bare_tok_s(engine, prompts, c, max_tokens, window_steps))
        factory = PromptFactory(info.vocab_size, 100 + r, info.special_token_ids)
    pairs = [a / b for a, b in zip(ours, theirs)]
    return {"c": c, "inproc_tok_s": ours, "bare_tok_s": theirs,
            "ratio": statistics.median(ours) / statistics.median(theirs), "pair_min": min(pairs),
            "pair_max": max(pairs), "rounds": rounds, "window_steps": window_steps,
            "harness_us_per_step": statistics.median(harness_us)}


def report(label: str, res: dict) -> str:
    """One line per C: the ratio, its spread, and the driver's time between steps."""
    return (f"{label} C={res['c']}: inproc driver / bare step() loop total tok/s = {res['ratio']:.3f} "
            f"(medians of {res['rounds']} alternating rounds of {res['window_steps']}-step windows; pairwise "
            f"{res['pair_min']:.3f}..{res['pair_max']:.3f}; target >= 0.99); driver's time between steps "
            f"{res['harness_us_per_step']:.0f} µs")
