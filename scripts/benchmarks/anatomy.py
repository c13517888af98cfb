"""The instrument's own cost, inside one engine: the accounting left in the headline's window, the step
anatomy's own accounting, the step watchdog and the garbage collector's recording per step, each switched
in alternating blocks of steps.

One vLLM engine is built with the anatomy on (the CPU default profile, room for C = 128).
For each C, C requests are kept in flight (a finished one is refilled before the next step;
their output lengths are staggered so they do not all finish at once) and the engine is
stepped in blocks of ``--block-steps`` steps. Each block runs under one setting of:

- the accounting at one of its levels (:class:`inproc.engines.vllm.accounting.AccountingSwitch`):
  ``headline``, what a decode window runs with under ``--anatomy on`` (vLLM's
  ``SchedulerStats`` and ``CUDAGraphStat``); ``anatomy``, what the anatomy's own pass after
  the window adds (``PerfStats`` and the probe's batch shapes); ``serve``, what ``vllm serve``
  accounts for by default (stat logging on, the two metrics off: ``SchedulerStats`` alone);
  ``off``, what ``--anatomy off`` builds with stat logging off;
- the step watchdog watching the block or not, as the decode loop has it (``StepWatchdog.watching``: nothing
  is armed per step; the watchdog's thread reads the loop's step count on its own schedule);
- the GC recording on or off (``inproc.run.gcwatch.GcWatch``: its ``gc.callbacks`` entry
  installed, and its two takes around each step as the decode loop takes them). Every block
  records its steps' rows as the decode loop does (``StepRecorder``), the GC columns
  "not recorded" when off.

The six blocks of a round: headline, anatomy, serve and off, each with the watchdog armed and
GC recorded (as a run measures); then off unarmed, and off with GC not recorded. A round runs
them in one order, then reversed in the next round, so drift in
the machine's speed falls on every setting alike. The first ``--settle-steps`` steps of a
block are stepped but not counted. A block's tok/s is the output tokens its counted steps
returned over their span (end of the last settle step to end of the block's last step,
so the time between steps is in it, as in inproc's window).

Printed per C:

- headline ÷ serve: per round, the tok/s of the round's headline block over its "serve"
  block; the median over rounds with its quartiles and range, and the mean step time
  (``Engine.step()`` start to end) of each level in µs. Target >= 0.995: what ``--anatomy on``
  adds to the headline beyond what vLLM accounts for under ``vllm serve``;
- headline ÷ off, the same way: the above with vLLM's own stat logging besides;
- anatomy ÷ off: what the anatomy would cost if it ran in the window (it runs in its own
  pass after it);
- GC recording on ÷ off (target >= 0.995);
- the watchdog: watching ÷ not watching, tok/s per round (both "off" blocks); it adds no call between
  steps, so its only cost is its thread's reads (every ``watchdog.POLL_S``);
- with ``--parts``, the anatomy's accounting calls timed directly afterwards (CPU time
  of each, in extra blocks with the anatomy on): which part costs what.

- then (unless ``--kernel-rounds 0``) the kernel pass's A/B (``scripts/benchmarks/kernelpass.py``): the
  window's tok/s after a kernel pass ÷ after as many plain steps, interleaved, target >= 0.995
  (``--kernels-only`` runs that alone).

vLLM only: SGLang's anatomy is inproc's own estimate, fixed at build.

Run in the engine's environment:  .venv-vllm/bin/python scripts/bench.py anatomy [--rounds 20]
"""
from __future__ import annotations

import os
import time

from scripts.benchmarks.blocks import SETS, Block, InFlight, build_engine, run_block
from scripts.benchmarks.harness import PROFILE, interleaved, median_verdict, parser, spread

TARGET = 0.995  # each ratio's median: what the accounting, the watchdog and the kernel pass may cost
#: The settings of a round's blocks, in its order (reversed every other round): (accounting level,
#: watchdog armed, GC recorded).
SETTINGS = (("headline", True, True), ("anatomy", True, True), ("serve", True, True), ("off", True, True),
            ("off", False, True), ("off", True, False))
#: (label, owner path on VllmEngine, method): the anatomy's accounting calls, for --parts.
PARTS = (
    ("PerfStats (MFU metrics)", "_scheduler.perf_metrics", "get_step_perf_stats_per_gpu"),
    ("SchedulerStats", "_scheduler", "make_stats"),
)


def measure_c(engine, switch, dog, c: int, rounds: int, steps: int, settle: int) -> list[list[Block]]:
    """``rounds`` rounds of the eight settings at concurrency ``c``; the blocks by round."""
    flight = InFlight(engine, c, 11 + c)
    try:
        flight.settle()
        out = []
        for r in range(rounds):
            order = interleaved(r, SETTINGS)
            out.append([run_block(flight, switch, dog, level, armed, gc, steps, settle) for level, armed, gc in order])
        return out
    finally:
        switch.set("anatomy")  # time_parts times the anatomy's calls
        flight.gc.stop()
        flight.close()


def time_parts(engine, c: int, steps: int) -> dict[str, float]:
    """The anatomy's accounting calls, CPU time per step (µs), over ``steps`` steps with the anatomy on."""
    import operator

    from inproc.engines.vllm import probe

    times: dict[str, float] = {}
    undo = []

    def timed(label, fn):
        def call(*args, **kwargs):
            t = time.thread_time()
            try:
                return fn(*args, **kwargs)
            finally:
                times[label] = times.get(label, 0.0) + time.thread_time() - t
        return call

    for label, path, name in PARTS + (("batch shape (inproc's probe)", None, "batch_shape"),):
        owner = operator.attrgetter(path)(engine) if path else probe
        if owner is None:
            continue
        original = getattr(owner, name)
        setattr(owner, name, timed(label, original))
        undo.append((owner, name, original, path is not None))
    flight = InFlight(engine, c, 99 + c)
    try:
        flight.settle()
        times.clear()
        for _ in range(steps):
            flight.step()
    finally:
        flight.close()
        for owner, name, original, instance in undo:
            if instance:
                delattr(owner, name)  # the bound method comes back from the class
            else:
                setattr(owner, name, original)
    return {k: v / steps * 1e6 for k, v in times.items()}


def _ratios(rounds: list[list[Block]], a, b) -> list[float]:
    """Per round: tok/s of the blocks where ``a`` holds over those where ``b`` holds."""
    tok_s = lambda bs: sum(x.tokens for x in bs) / sum(x.span_s for x in bs)  # noqa: E731
    return [tok_s([x for x in blocks if a(x)]) / tok_s([x for x in blocks if b(x)]) for blocks in rounds]


def _setting(level: str, armed: bool = True, gc: bool = True):
    return lambda b: b.level == level and b.armed == armed and b.gc == gc


def report(c: int, rounds: list[list[Block]], parts: dict[str, float] | None) -> str:
    """The lines for one C."""
    blocks = [b for r in rounds for b in r]
    mean = lambda pick, attr: (sum(getattr(b, attr) for b in blocks if pick(b))  # noqa: E731
                               / sum(b.steps for b in blocks if pick(b)) * 1e6)
    off, bare, untraced = _setting("off"), _setting("off", armed=False), _setting("off", gc=False)
    head = _ratios(rounds, _setting("headline"), _setting("serve"))
    head_off = _ratios(rounds, _setting("headline"), off)
    anat = _ratios(rounds, _setting("anatomy"), off)
    dog = _ratios(rounds, off, bare)
    gcr = _ratios(rounds, off, untraced)
    step = {level: mean(_setting(level), "step_s") for level in ("headline", "anatomy", "serve", "off")}
    lines = [
        f"C={c}: headline ÷ serve (what --anatomy on adds in the window to what vllm serve accounts for), decode "
        f"tok/s = {spread(head)} over {len(rounds)} rounds of {len(SETTINGS)} blocks of {rounds[0][0].steps} steps; "
        f"{median_verdict(head, TARGET)}",
        f"C={c}: headline ÷ off (and vLLM's own stat logging besides), decode tok/s = {spread(head_off)}",
        f"C={c}: anatomy ÷ off (its own pass's accounting, were it in the window), decode tok/s = {spread(anat)}",
        f"  mean step {step['headline']:.0f} µs headline, {step['anatomy']:.0f} µs anatomy, {step['serve']:.0f} µs serve, "
        f"{step['off']:.0f} µs off; "
        f"{sum(b.tokens for b in blocks) / sum(b.steps for b in blocks):.1f} tokens per step",
        f"C={c}: watchdog watching ÷ not, decode tok/s = {spread(dog)}; {median_verdict(dog, TARGET)} (nothing "
        f"of it runs between steps: its thread reads the loop's step count)",
        f"C={c}: GC recording on ÷ off, decode tok/s = {spread(gcr)}; {median_verdict(gcr, TARGET)}",
    ]
    if parts:
        total = sum(parts.values())
        lines.append(f"  the anatomy's accounting timed directly (CPU µs per step): {total:.0f} = "
                     + ", ".join(f"{k} {v:.0f}" for k, v in parts.items()))
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = parser("anatomy", __doc__)
    ap.add_argument("--concurrency", default="1,8,128", help="the Cs measured, one after another")
    ap.add_argument("--rounds", type=int, default=20, help="rounds of six blocks per C")
    ap.add_argument("--block-steps", default="40,40,8", help="counted steps per block, per C")
    ap.add_argument("--settle-steps", type=int, default=1, help="steps after each switch that are not counted")
    ap.add_argument("--parts", action="store_true", help="afterwards, time the anatomy's accounting calls directly")
    ap.add_argument("--kernel-rounds", type=int, default=10,
                    help="afterwards, rounds of the kernel pass A/B per C (scripts/benchmarks/kernelpass.py; 0: none)")
    ap.add_argument("--kernel-steps", type=int, default=16, help="steps of each kernel pass in that A/B")
    ap.add_argument("--kernels-only", action="store_true", help="only the kernel pass A/B (no accounting blocks)")
    a = ap.parse_args(argv)
    cs = tuple(int(x) for x in a.concurrency.split(","))
    steps = tuple(int(x) for x in a.block_steps.split(","))
    if len(steps) != len(cs) or a.rounds < 2 or min(steps) < 1 or a.settle_steps < 1 or a.kernel_steps < 1 \
            or a.kernel_rounds == 1 or a.kernel_rounds < 0:
        ap.error(f"--block-steps {a.block_steps} needs one count >= 1 per C ({a.concurrency}); --rounds >= 2; "
                 "--settle-steps >= 1; --kernel-rounds 0 or >= 2; --kernel-steps >= 1")
    load = os.getloadavg()
    print(f"anatomy and watchdog A/B inside one engine ({PROFILE.name}, --set {' '.join(SETS)}); load average "
          f"{load[0]:.2f} {load[1]:.2f} {load[2]:.2f}", flush=True)
    engine, switch, dog = build_engine()
    try:
        for c, n in zip(cs, steps):
            if not a.kernels_only:
                rounds = measure_c(engine, switch, dog, c, a.rounds, n, a.settle_steps)
                parts = time_parts(engine, c, 4 * n) if a.parts else None
                print(report(c, rounds, parts), flush=True)
            if a.kernel_rounds:
                from scripts.benchmarks.kernelpass import measure_kernels

                print(measure_kernels(engine, switch, dog, c, a.kernel_rounds, n, a.settle_steps, a.kernel_steps, TARGET),
                      flush=True)
    finally:
        dog.stop()
        engine.shutdown()
    load = os.getloadavg()
    print(f"load average after: {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")
    return 0

