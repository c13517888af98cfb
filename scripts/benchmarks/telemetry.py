"""What telemetry costs the headline, inside one engine, for 1, 4 and 8 GPUs (the FAKE H200-cost NVML).

No GPU here, so the GPUs are the stand-in binding ``tests/fakes/h200_nvml.py``: every NVML call
burns the CPU the H200 measured for it (3.1 ms for the energy counter, 0.82 ms for the violation
fields, µs for the rest) with the GIL released, as a ctypes call does, in whichever process makes it.

One vLLM engine is built (the CPU default profile, the anatomy at its headline level, as a run's
window has it) and C requests are kept in flight (``scripts/benchmarks/blocks.py``'s ``InFlight``). The
engine's process is bound to ``--engine-cores`` (default: every core but the last), as an engine on a
GPU host leaves cores free, so the sampler process pins itself to the others; ``--engine-cores all``
shares every core between them. For each GPU count, the sampler is opened as a run opens it
(``open_telemetry`` at ``--hz``: the sampler process spawned with the stand-in, reading the GPUs and
the host), and each round runs two windows of ``--block-steps`` counted steps, in alternating order:

- ``on``: a telemetry cell around the window, as the runner has it (``start_cell``, the ``open``
  mark at the window's first step, the ``close`` mark after its last, ``stop_cell``);
- ``off``: the same window with no telemetry (``--telemetry-hz 0``).

Printed per GPU count: the window's decode tok/s on ÷ off per round (median, quartiles, range,
and a 95 % interval for the median from its order statistics; target >= 0.995: met when the
interval lies above it, missed when below, else "cannot tell"); beside it each window's median
step time, off ÷ on (the same effect at C fixed, less moved by other programs' bursts, which
lengthen a few steps of a window and so its tok/s); and what telemetry took in this
process over the "on" windows, from the cells' own figures (``inproc_gpu_cpu_s``: the marks;
``inproc_host_cpu_s``: a host sampling thread, which runs only where the sampler process did not
start), as a share of one core (target <= 0.1 %), with the sampler process's own CPU and placement
beside it, and the ratio that in-process CPU implies (an estimate: the engine's thread loses about
what telemetry took in its process), for when the A/B's spread on a shared machine is wider than
the effect.

Run in the engine's environment:  .venv-vllm/bin/python scripts/bench.py telemetry [--rounds 10]
"""
from __future__ import annotations

import os
import statistics
import sys
import time

from scripts.benchmarks.blocks import SETS, InFlight, build_engine, run_block
from scripts.benchmarks.harness import PROFILE, ROOT, interleaved, median_interval, parser, spread, verdict

TARGET_RATIO = 0.995
TARGET_INPROC = 0.001  # of one core
BINDING = "tests.fakes.h200_nvml"


def measure(engine, switch, dog, gpus: int, c: int, rounds: int, steps: int, settle: int, hz: float,
            inline: bool = False) -> str:
    from inproc.telemetry.sampler import open_telemetry
    from inproc.telemetry.window import over_window

    os.environ["INPROC_FAKE_NVML_GPUS"] = str(gpus)  # read by the sampler process the stand-in runs in
    if inline:  # the binding read on the host thread of this process: how the sampler ran before it had its own
        import importlib

        tel = open_telemetry(hz=hz, nvml=importlib.import_module(BINDING))
    else:
        tel = open_telemetry(hz=hz, binding=BINDING)
    if tel.gpu_absent_reason:
        raise SystemExit(f"bench telemetry: the stand-in did not start: {tel.gpu_absent_reason}")
    flight = InFlight(engine, c, 307 + gpus)
    ratios, step_ratios, gpu_share, host_share, sampler_share, notes, placement = [], [], [], [], [], set(), ""
    try:
        flight.settle()
        for r in range(rounds):
            tok_s, step_med = {}, {}
            for on in interleaved(r, (True, False)):
                if not on:
                    block = run_block(flight, switch, dog, "headline", True, True, steps, settle)
                    tok_s[on] = block.tokens / block.span_s
                    step_med[on] = statistics.median(block.step_times_s)
                    continue
                tel.start_cell()
                t_open = time.perf_counter()
                tel.mark("open", t_open)
                block = run_block(flight, switch, dog, "headline", True, True, steps, settle)
                t_close = time.perf_counter()
                tel.mark("close", t_close)
                trace = tel.stop_cell()
                tok_s[on] = block.tokens / block.span_s
                step_med[on] = statistics.median(block.step_times_s)
                fig = over_window(trace, t_open, t_close, block.tokens).figures
                window_s = t_close - t_open
                gpu_share.append(fig.inproc_gpu_cpu_s / window_s)
                host_share.append(fig.inproc_host_cpu_s / window_s)
                sampler_share.append(trace.sampler_cpu_s / trace.duration_s)
                notes.update(n for n in fig.notes if "telemetry" in n)
                placement = trace.sampler_placement or "the GPUs read in this process"
                if fig.energy_j is None:
                    notes.add(f"energy absent: {fig.reasons.get('energy_j')}")
            ratios.append(tok_s[True] / tok_s[False])
            step_ratios.append(step_med[False] / step_med[True])
    finally:
        flight.gc.stop()
        flight.close()
        tel.close()
    gpu_med, host_med = statistics.median(gpu_share), statistics.median(host_share)
    lo, hi = median_interval(ratios)  # "cannot tell" where the A/B's own spread is wider than the effect sought
    ab = f"median 95% interval [{lo:.4f}, {hi:.4f}]: {verdict(lo, hi, TARGET_RATIO)} (target >= {TARGET_RATIO})"
    slo, shi = median_interval(step_ratios)
    design = "the host thread reads the GPUs (before the sampler process)" if inline else "the sampler process"
    lines = [
        f"{gpus} GPU(s), {design}: decode tok/s telemetry on ({hz:g} Hz) ÷ off = {spread(ratios)} over {rounds} "
        f"rounds (C={c}, windows of {steps} steps); {ab}",
        f"  median step time off ÷ on (the same effect, robust to a neighbour's bursts: each window's median step) = "
        f"{spread(step_ratios)}; median 95% interval [{slo:.4f}, {shi:.4f}]",
        f"  in this process over the window: the marks {100 * gpu_med:.4f}% of a core (max "
        f"{100 * max(gpu_share):.4f}%), a host sampling thread {100 * host_med:.4f}% (max {100 * max(host_share):.4f}%); "
        f"total {100 * (gpu_med + host_med):.4f}%: "
        f"{verdict(gpu_med + host_med, gpu_med + host_med, TARGET_INPROC, at_least=False)} "
        f"(target <= {100 * TARGET_INPROC:.1f}%)",
        f"  the sampler process: {100 * statistics.median(sampler_share):.2f}% of a core over the cell (median); "
        f"{placement}",
        f"  estimate from the CPU measured directly (the marks run on the engine's thread): tok/s ratio about "
        f"{1 - gpu_med - host_med:.5f}",
    ]
    lines += [f"  note: {n}" for n in sorted(notes)]
    return "\n".join(lines)


def bind_engine(spec: str) -> str:
    """Bind this process (the engine's) to the cores ``spec`` names ("all", or "0-2,5"); what was done."""
    allowed = sorted(os.sched_getaffinity(0))
    if spec == "all":
        return f"engine on every core ({len(allowed)}), shared with the sampler"
    if spec == "auto":
        cores = allowed[:-1] or allowed
    else:
        cores = sorted({c for part in spec.split(",") for c in
                        range(int(part.partition("-")[0]), int(part.partition("-")[2] or part.partition("-")[0]) + 1)})
    os.sched_setaffinity(0, cores)
    return f"engine bound to cores {','.join(map(str, cores))} of {len(allowed)}"


def main(argv: list[str] | None = None) -> int:
    ap = parser("telemetry", __doc__)
    ap.add_argument("--gpus", default="1,4,8", help="GPU counts the stand-in shows, one after another")
    ap.add_argument("--rounds", type=int, default=10, help="rounds of (on, off) per GPU count")
    ap.add_argument("--concurrency", type=int, default=8)
    ap.add_argument("--block-steps", type=int, default=40, help="counted steps per window")
    ap.add_argument("--settle-steps", type=int, default=1, help="steps before each window, not counted")
    ap.add_argument("--hz", type=float, default=None, help="the sampling rate (default: inproc's default)")
    ap.add_argument("--engine-cores", default="auto",
                    help="cores for the engine's process: 'auto' (all but the last), 'all', or a list such as 0-2")
    ap.add_argument("--inline", action="store_true",
                    help="read the GPUs on the host thread in this process instead (the design before the sampler "
                         "process; for contrast)")
    a = ap.parse_args(argv)
    from inproc.telemetry.sampler import DEFAULT_HZ

    gpus = [int(x) for x in a.gpus.split(",")]
    if a.rounds < 2 or a.block_steps < 1 or a.settle_steps < 1 or min(gpus) < 1:
        ap.error("--rounds >= 2, --block-steps >= 1, --settle-steps >= 1, GPU counts >= 1")
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))  # the sampler process imports the stand-in by module name
    bound = bind_engine(a.engine_cores)
    load = os.getloadavg()
    print(f"telemetry on ÷ off inside one engine ({PROFILE.name}, --set {' '.join(SETS)}), the FAKE H200-cost "
          f"NVML ({BINDING}); {os.cpu_count()} CPUs, load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}; "
          f"{bound}", flush=True)
    engine, switch, dog = build_engine()
    try:
        for n in gpus:
            print(measure(engine, switch, dog, n, a.concurrency, a.rounds, a.block_steps, a.settle_steps,
                          a.hz or DEFAULT_HZ, a.inline), flush=True)
    finally:
        engine.shutdown()
    return 0

