"""The windows the fidelity A/B compares, inside one engine: inproc's driver with its per-step instruments
as a run has them (or one of them switched), and a bare ``step()`` loop (``scripts/benchmarks/fidelity.py``).

Both sides keep the same C requests in flight (a finished request is refilled before the next step)
and measure the same kind of window: it opens at the end of the first step after which all C requests
have their first token and holds the next ``window_steps`` steps. Per window: output tokens per second
over its span (open → end of its last step; for the driver, plus the bulk work its cell did when the loop
ended: the tokens filed and the rows made of the steps held, which a long window holds inside it and a
block of a few dozen steps does not, charged whole); the median time inside ``Engine.step()`` (two clock reads
around the call); the time outside it per window step (``inproc.measure.metrics.harness_overhead``
× span ÷ steps: for the driver, its own work between steps; for the bare loop, reading the clock,
counting tokens, refilling). Both run their window with the heap frozen where the engine has not frozen
it itself, as the driver does (``inproc.run.window``).

The instruments, each switched inside the same engine (:data:`SETTINGS`):

- the step watchdog (``inproc.run.watchdog``): the runner's driver steps a ``WatchedEngine``; off: the
  engine itself;
- the GC watch (``inproc.run.gcwatch``): its ``gc.callbacks`` entry; off: ``Driver.record_gc`` False;
- the KV probe: the engine's read of the KV blocks held at each step (inside ``step()``, so the bare
  loop has it too); off where the engine lets it be switched (:func:`set_kv_probe`);
- the slow-step watch (``inproc.run.slowwatch``, on only with ``--break-at-slow-step`` / ``--profile-slow``):
  on as ``--break-at-slow-step`` runs it, with ``PYTHONBREAKPOINT=0`` so the break does nothing;
- the token filing is the driver's own work between steps (not switchable: the window's tokens are what
  it files); it is in the driver's time between steps, which is measured directly.
"""
from __future__ import annotations

import gc
import os
import statistics
import time
from dataclasses import dataclass

from inproc.measure import metrics as m
from inproc.plan.prompts import CellPrompts, PromptFactory
from inproc.run.decode import heap_frozen
from inproc.run.driver import DecodeSettings, Driver
from inproc.run.profiling import DebugSettings
from inproc.run.watchdog import StepTimeout, StepWatchdog, WatchedEngine
from inproc.types import RequestSpec
from scripts.benchmarks.harness import interleaved


@dataclass(frozen=True)
class Setting:
    """One side of the A/B: the bare loop, or the driver with each instrument on or off."""

    name: str
    bare: bool = False
    watchdog: bool = True
    gc: bool = True
    kv: bool = True
    slow: bool = False


DRIVER = Setting("driver")  # as a run has it: the watchdog (auto), the GC watch, the KV probe; no slow-step watch
BARE = Setting("bare", bare=True)
BARE_AGAIN = Setting("bare, again", bare=True)  # the A/A's second side (``fidelity --null``)
#: (instrument, the setting that differs from DRIVER in it alone, whether that setting has it on).
INSTRUMENTS = (("step watchdog", Setting("no watchdog", watchdog=False), False),
               ("GC watch", Setting("no GC watch", gc=False), False),
               ("KV probe", Setting("no KV probe", kv=False), False),
               ("slow-step watch", Setting("slow-step watch", slow=True), True))


@dataclass(frozen=True)
class WindowFigures:
    """One window: output tok/s over its span; per window step, the median time inside ``step()`` and the
    mean time outside it (µs); its span per step (µs)."""

    tok_s: float
    step_median_us: float
    between_us: float
    span_us: float


def set_kv_probe(engine, on: bool) -> bool:
    """Switch the engine's per-step read of the KV blocks held; False where this engine has no switch."""
    probe = getattr(engine, "_probe", None)  # vLLM's SchedulerProbe
    if probe is not None and hasattr(probe, "read_kv"):
        probe.read_kv = on
        return True
    return False


class Sides:
    """The engine, a driver per watchdog setting, and the prompts of each window."""

    def __init__(self, engine, context: int, c: int, max_tokens: int, window_steps: int) -> None:
        os.environ["PYTHONBREAKPOINT"] = "0"  # the slow-step watch's break does nothing here
        self.engine, self.context, self.c, self.max_tokens, self.window_steps = engine, context, c, max_tokens, window_steps
        self.dog = StepWatchdog(StepTimeout(), lambda hang: None, None)
        self.watched = Driver(WatchedEngine(engine, self.dog))
        self.plain = Driver(engine)
        self.kv_switch = set_kv_probe(engine, True)
        self.serial = 0

    def prompts(self) -> CellPrompts:
        """Distinct prompts of the same length on every window; a new seed per window (no prefix reuse)."""
        self.serial += 1
        info = self.engine.info
        return CellPrompts(PromptFactory(info.vocab_size, 100 + self.serial, info.special_token_ids), self.context,
                           self.c, "distinct", 32)

    def window(self, s: Setting) -> WindowFigures:
        """One window under setting ``s``, from an idle engine with an empty prefix cache."""
        set_kv_probe(self.engine, s.kv)
        driver = self.watched if s.watchdog else self.plain
        driver.cold_start()
        try:
            if s.bare:
                return bare_window(self.engine, self.prompts(), self.c, self.max_tokens, self.window_steps)
            driver.record_gc = s.gc
            debug = DebugSettings(break_at_slow_step=True) if s.slow else None
            cell = driver.cell(self.prompts(), DecodeSettings(self.c, 0.0, self.max_tokens, window_steps=self.window_steps),
                               primed=True, debug=debug)  # kept, to read its held work
            trace = cell.run()
        finally:
            set_kv_probe(self.engine, True)
        w = m.window(trace)
        steps = trace.steps
        inside = (steps.t_end_s - steps.t_start_s)[w.first_step:w.last_step + 1]
        # The bulk work a block's window holds none of (it falls due every HELD_ROWS steps and HELD_DELTAS
        # deltas, so in a long window it is inside it), charged to the window whole: it covers its warm-up
        # and closing steps too, so it is charged a little more than its share.
        held = cell.held_work_s
        span = w.length_s + held
        return WindowFigures(m.total_tok_s(trace, w) * w.length_s / span, float(statistics.median(inside)) * 1e6,
                             (m.harness_overhead(trace, w) * w.length_s + held) / self.window_steps * 1e6,
                             span / self.window_steps * 1e6)

    def close(self) -> None:
        self.dog.stop()


def bare_window(engine, prompts: CellPrompts, c: int, max_tokens: int, window_steps: int) -> WindowFigures:
    """A minimal loop keeping ``c`` requests in flight over one window (see the module docstring)."""
    serial = [0]

    def submit(i: int) -> str:
        serial[0] += 1
        rid = f"bare-{serial[0]}"
        engine.add_request(RequestSpec(rid, prompts.request(i), max_tokens))
        return rid

    freeze = not heap_frozen()  # asked before the window: it walks the frozen heap
    live = {submit(i) for i in range(c)}
    started, submitted, tokens, t_open, steps, inside = set(), c, 0, None, 0, []
    while True:
        start = time.perf_counter()
        res = engine.step()
        now = time.perf_counter()
        if t_open is not None:
            inside.append(now - start)
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
    span = now - t_open
    return WindowFigures(tokens / span, statistics.median(inside) * 1e6, (span - sum(inside)) / steps * 1e6,
                         span / steps * 1e6)


def pooled(blocks: list[WindowFigures]) -> WindowFigures:
    """Blocks of one setting as one window: tok/s over their summed spans (each block its tokens), the median of
    their median step times, their mean time between steps and span per step (the blocks have equal steps)."""
    spans = [b.span_us for b in blocks]
    return WindowFigures(sum(b.tok_s * b.span_us for b in blocks) / sum(spans),
                         float(statistics.median(b.step_median_us for b in blocks)),
                         float(statistics.mean(b.between_us for b in blocks)), float(statistics.mean(spans)))


def rounds(sides: Sides, settings: tuple[Setting, ...], n: int, blocks: int = 1,
           raw: dict[str, list[list[WindowFigures]]] | None = None) -> dict[str, list[WindowFigures]]:
    """``n`` rounds; in each, ``blocks`` blocks of one window per setting, in order, reversed every other block
    (A B B A A B ...), each setting's blocks pooled into the round's window (:func:`pooled`). The engine's step
    time drifts over seconds on a shared machine: short blocks alternated inside a round put both sides on the
    same stretch of that drift, where whole windows one after the other do not. The windows by setting;
    ``raw``, when given, gets each setting's blocks per round."""
    out: dict[str, list[WindowFigures]] = {s.name: [] for s in settings}
    for r in range(n):
        got: dict[str, list[WindowFigures]] = {s.name: [] for s in settings}
        for b in range(blocks):
            for s in interleaved(r * blocks + b, settings):
                got[s.name].append(sides.window(s))
        for s in settings:
            out[s.name].append(pooled(got[s.name]))
            if raw is not None:
                raw.setdefault(s.name, []).append(got[s.name])
    return out
