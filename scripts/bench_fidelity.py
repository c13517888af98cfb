"""Fidelity A/B in one process on one engine: inproc's decode driver against a bare ``step()`` loop.

Both sides keep the same C requests in flight on the same engine (a finished request is
refilled before the next step) and take tokens per second over the same kind of window:
from the end of the first step after which all C requests have their first token, for
``window_s`` seconds. The driver's figure is ``total_tok_s`` of its cell; the bare loop
counts the tokens its steps return and divides by the same span, and does nothing else
(no step records, no clock reads but two per step). Rounds alternate A, B, A, B, ... so
drift in the machine's speed falls on both sides; the ratio is of the medians, with the
spread of the pairwise ratios.
"""
from __future__ import annotations

import statistics
import time

from inproc.measure.figures import decode_figures
from inproc.plan.prompts import CellPrompts, PromptFactory
from inproc.run.driver import DecodeSettings, Driver
from inproc.types import RequestSpec


def bare_tok_s(engine, prompts: CellPrompts, c: int, max_tokens: int, window_s: float) -> float:
    """Output tokens per second of a minimal loop keeping ``c`` requests in flight (see the module docstring)."""
    serial = [0]

    def submit(i: int) -> str:
        serial[0] += 1
        rid = f"bare-{serial[0]}"
        engine.add_request(RequestSpec(rid, prompts.request(i), max_tokens))
        return rid

    live = {submit(i) for i in range(c)}
    started, submitted, tokens, t_open = set(), c, 0, None
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
        elif now - t_open > window_s:
            break
        last = now
        for _ in range(finished):
            live.add(submit(submitted))
            submitted += 1
    engine.abort(list(live))
    while engine.has_unfinished():
        engine.step()
    return tokens / (last - t_open)


def ab(engine, rounds: int, context: int, c: int, max_tokens: int, window_s: float) -> dict:
    """``rounds`` alternating pairs of driver and bare-loop windows on ``engine``."""
    info = engine.info
    factory = PromptFactory(info.vocab_size, 99, info.special_token_ids)
    driver = Driver(engine)
    ours, theirs = [], []
    for r in range(rounds):
        prompts = CellPrompts(factory, context, c, "distinct", 32)
        trace = driver.decode_cell(prompts, DecodeSettings(c, window_s, max_tokens), primed=True)
        ours.append(decode_figures(trace).total_tok_s)
        driver.drain()
        theirs.append(bare_tok_s(engine, CellPrompts(factory, context + 1, c, "distinct", 32), c, max_tokens, window_s))
    pairs = [a / b for a, b in zip(ours, theirs)]
    return {"inproc_tok_s": ours, "bare_tok_s": theirs, "ratio": statistics.median(ours) / statistics.median(theirs),
            "pair_min": min(pairs), "pair_max": max(pairs), "rounds": rounds}


def report(label: str, res: dict) -> str:
    return (f"{label}: inproc driver / bare step() loop total tok/s = {res['ratio']:.3f} (medians of "
            f"{res['rounds']} alternating rounds; pairwise {res['pair_min']:.3f}..{res['pair_max']:.3f}; target >= 0.99)")
