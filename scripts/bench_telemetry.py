"""What telemetry costs the headline, inside one engine, for 1, 4 and 8 GPUs (the FAKE H200-cost NVML).

No GPU here, so the GPUs are the stand-in binding ``tests/fakes/h200_nvml.py``: every NVML call
burns the CPU the H200 measured for it (3.1 ms for the energy counter, 0.82 ms for the violation
fields, µs for the rest) with the GIL released, as a ctypes call does, in whichever process makes it.

One vLLM engine is built (the CPU default profile, the anatomy at its headline level, as a run's
window has it) and C requests are kept in flight (``scripts/bench_anatomy.py``'s ``InFlight``). For
each GPU count, the sampler is opened as a run opens it (``open_telemetry`` at ``--hz``: the GPU
sampler process spawned with the stand-in, the host thread in this process), and each round runs
two windows of ``--block-steps`` counted steps, in alternating order:

- ``on``: a telemetry cell around the window, as the runner has it (``start_cell``, the ``open``
  mark at the window's first step, the ``close`` mark after its last, ``stop_cell``);
- ``off``: the same window with no telemetry (``--telemetry-hz 0``).

Printed per GPU count: the window's decode tok/s on ÷ off per round (median, quartiles, range;
target >= 0.995), and what telemetry took in this process over the "on" windows, from the cells'
own figures (``inproc_gpu_cpu_s``: the GPU marks; ``inproc_host_cpu_s``: the host sampling
thread), as a share of one core (target <= 0.1 % for the GPU telemetry), with the sampler
process's own CPU beside it, and the ratio that CPU implies (an estimate: the engine's thread
loses about what telemetry took in its process, the marks on its own thread and the host
thread's samples under the GIL), for when the A/B's spread on a shared machine is wider than
the effect.

Run in the engine's environment:  .venv-vllm/bin/python scripts/bench.py telemetry [--rounds 10]
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

from bench_anatomy import PROFILE, SETS, InFlight, _spread, build_engine, run_block

ROOT = Path(__file__).resolve().parent.parent
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
    ratios, gpu_share, host_share, sampler_share, notes = [], [], [], [], set()
    try:
        flight.settle()
        for r in range(rounds):
            tok_s = {}
            for on in ((True, False) if r % 2 == 0 else (False, True)):
                if not on:
                    block = run_block(flight, switch, dog, "headline", True, True, steps, settle)
                    tok_s[on] = block.tokens / block.span_s
                    continue
                tel.start_cell()
                t_open = time.perf_counter()
                tel.mark("open", t_open)
                block = run_block(flight, switch, dog, "headline", True, True, steps, settle)
                t_close = time.perf_counter()
                tel.mark("close", t_close)
                trace = tel.stop_cell()
                tok_s[on] = block.tokens / block.span_s
                fig = over_window(trace, t_open, t_close, block.tokens).figures
                window_s = t_close - t_open
                gpu_share.append(fig.inproc_gpu_cpu_s / window_s)
                host_share.append(fig.inproc_host_cpu_s / window_s)
                sampler_share.append(trace.sampler_cpu_s / trace.duration_s)
                notes.update(n for n in fig.notes if n.startswith("GPU telemetry"))
                if fig.energy_j is None:
                    notes.add(f"energy absent: {fig.reasons.get('energy_j')}")
            ratios.append(tok_s[True] / tok_s[False])
    finally:
        flight.gc.stop()
        flight.close()
        tel.close()
    gpu_med, host_med = statistics.median(gpu_share), statistics.median(host_share)
    verdict = lambda ok: "meets" if ok else "misses"  # noqa: E731
    q1, _, q3 = statistics.quantiles(ratios, n=4)
    if q3 - q1 > 2 * (1 - TARGET_RATIO):  # the A/B's own spread is wider than the effect sought
        ab = f"cannot tell against the >= {TARGET_RATIO} target here: its quartiles span {100 * (q3 - q1):.1f} %"
    else:
        ab = f"{verdict(statistics.median(ratios) >= TARGET_RATIO)} the >= {TARGET_RATIO} target"
    design = "the host thread reads the GPUs (before the sampler process)" if inline else "the sampler process"
    lines = [
        f"{gpus} GPU(s), {design}: decode tok/s telemetry on ({hz:g} Hz) ÷ off = {_spread(ratios)} over {rounds} "
        f"rounds (C={c}, windows of {steps} steps); {ab}",
        f"  in this process over the window: GPU telemetry (marks) {100 * gpu_med:.4f}% of a core (max "
        f"{100 * max(gpu_share):.4f}%), {verdict(gpu_med <= TARGET_INPROC)} the <= {100 * TARGET_INPROC:.1f}% target; "
        f"host sampling thread {100 * host_med:.3f}% (max {100 * max(host_share):.3f}%); "
        f"total {100 * (gpu_med + host_med):.3f}%",
        f"  the GPU sampler process: {100 * statistics.median(sampler_share):.2f}% of a core over the cell (median)",
        f"  estimate from the CPU measured directly (the marks run on the engine's thread, the host thread holds "
        f"the GIL while it samples): tok/s ratio about {1 - gpu_med:.5f} for the GPU telemetry, "
        f"{1 - gpu_med - host_med:.4f} with the host sampling",
    ]
    lines += [f"  note: {n}" for n in sorted(notes)]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--gpus", default="1,4,8", help="GPU counts the stand-in shows, one after another")
    ap.add_argument("--rounds", type=int, default=10, help="rounds of (on, off) per GPU count")
    ap.add_argument("--concurrency", type=int, default=8)
    ap.add_argument("--block-steps", type=int, default=40, help="counted steps per window")
    ap.add_argument("--settle-steps", type=int, default=1, help="steps before each window, not counted")
    ap.add_argument("--hz", type=float, default=None, help="the sampling rate (default: inproc's default)")
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
    load = os.getloadavg()
    print(f"telemetry on ÷ off inside one engine ({PROFILE.name}, --set {' '.join(SETS)}), the FAKE H200-cost "
          f"NVML ({BINDING}); {os.cpu_count()} CPUs, load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}",
          flush=True)
    engine, switch, dog = build_engine()
    try:
        for n in gpus:
            print(measure(engine, switch, dog, n, a.concurrency, a.rounds, a.block_steps, a.settle_steps,
                          a.hz or DEFAULT_HZ, a.inline), flush=True)
    finally:
        engine.shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main())
