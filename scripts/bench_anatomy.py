"""The instrument's own cost: decode with the step anatomy on against off, in alternated processes.

Each round runs two fresh processes, anatomy on then off (the order swaps every round, so
drift in the machine's speed falls on both sides). Each process builds the engine
(``LaunchSpec.anatomy``), warms it up, and measures one decode window per concurrency C
with inproc's own driver: C distinct requests kept in flight for a window of a fixed number
of steps (``--steps``, so a slow machine still gets enough of them), tok/s over the window
(``total_tok_s``) and the window's mean step time (``Engine.step()`` start to end, over its
steps). Printed per C:

- the ratio of decode tok/s, on ÷ off: of the medians over rounds, with the spread of the
  per-round ratios (target >= 0.99);
- the per-step cost in µs, three ways, each on − off of the medians over rounds: the step
  time (wall, the whole cost; noisy on a shared machine); the CPU time of the thread that
  calls ``Engine.step()`` (``time.thread_time()`` around each call: the accounting's Python
  runs there, and time the process waits for a core does not count); and the host time the
  adapter times inside the step (``schedule_s + update_s + probe_s``, wall);
- on vLLM, the accounting's own calls timed directly on the anatomy-on side: the CPU time
  (``time.thread_time()``) of every call the three flags and the adapter's batch shapes add
  (:data:`VLLM_ACCOUNTING`), summed over the cell and divided by its steps. It leaves out
  what cannot be cut apart (creating the stats objects inline), so it is a floor; but
  contention hardly moves it, where the A/B above needs a quiet machine;
- each cost as a share of the first reference's decode step time at that C (8K context, RTX PRO
  6000 ×8, vLLM 0.32: time between tokens 3.6 ms at C=1 and 32.2 ms at C=128, from
  docs/reference-matrices.md). That run decodes with
  dspark speculation, so one of its steps yields several tokens and lasts longer than the
  time between tokens: the share against it is an upper bound.

By default both sides run the profile with ``disable-log-stats=true``: the on side then turns
all three of vLLM's flags on (stat logging, CUDA-graph metrics, MFU metrics), the off side
none, so the cost measured is all of it. ``--profile-stats`` keeps the profile's own setting
(vLLM's default: stat logging on, as under ``vllm serve``) and measures the other two.

Run in the engine's environment:  .venv-vllm/bin/python scripts/bench.py anatomy [--rounds 3]
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PROFILES = {"vllm": ROOT / "launch_profiles" / "cpu-vllm-tiny-llama.toml",
            "sglang": ROOT / "launch_profiles" / "cpu-sglang-tiny-llama.toml"}
# Room for C = 128 requests of 64 + 128 prompt and 1,024 output tokens (about 155K tokens, 1 KiB each).
SETS = {"vllm": ("max-num-seqs=128", "num-gpu-blocks-override=6144", "max-num-batched-tokens=8192"),
        "sglang": ("max-running-requests=128", "max-total-tokens=200000", "chunked-prefill-size=8192")}
NO_STATS = {"vllm": ("disable-log-stats=true",), "sglang": ()}
#: The first reference's decode time between tokens at 8K context, ms, by C.
REFERENCE_STEP_MS = {1: 3.6, 128: 32.2}
PROMPT_TOKENS, MAX_TOKENS = 64, 1024
#: (label, owner path on VllmEngine, method): the calls vLLM makes only for the three flags, and the probe's batch shape.
VLLM_ACCOUNTING = (
    ("PerfStats (MFU metrics)", "_scheduler.perf_metrics", "get_step_perf_stats_per_gpu"),
    ("SchedulerStats", "_scheduler", "make_stats"),
    ("request stats (output processor)", "_engine.output_processor", "_update_stats_from_output"),
    ("finished-request stats", "_engine.output_processor", "_update_stats_from_finished"),
    ("stat loggers", "_engine.logger_manager", "record"),
)


def measure(engine_name: str, anatomy: bool, sets: tuple[str, ...], concurrency: tuple[int, ...],
            steps: tuple[int, ...]) -> dict:
    """One process's figures: per C, decode tok/s and mean step and host times over one window."""
    import dataclasses

    from inproc import engines
    from inproc.measure import anatomy as an
    from inproc.measure import metrics as m
    from inproc.plan.prompts import CellPrompts, PromptFactory
    from inproc.profiles.spec import load_profile
    from inproc.run.driver import DecodeSettings, Driver

    profile = load_profile(PROFILES[engine_name]).with_overrides(sets)
    engine = engines.build_engine(dataclasses.replace(profile.launch, anatomy=anatomy))
    cpu_s = _time_steps(engine)
    accounting = _time_accounting(engine) if engine_name == "vllm" and anatomy else {}
    try:
        info = engine.info
        factory = PromptFactory(info.vocab_size, 11, info.special_token_ids)
        driver = Driver(engine)
        driver.decode_cell(CellPrompts(factory, PROMPT_TOKENS, 8, "distinct", 16), DecodeSettings(8, 0.5, 32), primed=True)
        driver.drain()
        out = {}
        for c, n_steps in zip(concurrency, steps):
            prompts = CellPrompts(factory, PROMPT_TOKENS + c, c, "distinct", 16)
            cpu_s.clear()
            for times in accounting.values():
                times.clear()
            trace = driver.decode_cell(prompts, DecodeSettings(c, 60.0, MAX_TOKENS, window_steps=n_steps), primed=True)
            step_cpu = list(cpu_s)  # one entry per Engine.step() call of the cell, in the trace's row order
            driver.drain()
            w, s = m.window(trace), trace.steps
            if len(step_cpu) < len(s):
                raise RuntimeError(f"{len(step_cpu)} timed steps for {len(s)} step rows")
            rows = slice(w.first_step, w.last_step + 1)
            n = w.last_step - w.first_step + 1
            host = float((s.schedule_s[rows] + s.update_s[rows] + s.probe_s[rows]).sum())
            out[str(c)] = {"tok_s": m.total_tok_s(trace, w), "step_s": an.step_time_s(s, w) / n, "host_s": host / n,
                           "cpu_s": sum(step_cpu[w.first_step:w.last_step + 1]) / n, "steps": n,
                           "avg_active": m.avg_active(trace, w),
                           "accounting_s": {k: sum(v) / len(s) for k, v in accounting.items()}}
        return out
    finally:
        engine.shutdown()


def _time_steps(engine) -> list[float]:
    """Wrap ``engine.step`` to append each call's CPU time on the calling thread to the list returned."""
    import time

    times: list[float] = []
    step = engine.step

    def timed_step():
        t = time.thread_time()
        res = step()
        times.append(time.thread_time() - t)
        return res

    engine.step = timed_step
    return times


def _time_accounting(engine) -> dict[str, list[float]]:
    """Wrap each call of :data:`VLLM_ACCOUNTING` and the probe's batch shape; their CPU times by label."""
    import operator
    import time

    from inproc.engines.vllm import probe

    def timed(fn, times):
        def call(*args, **kwargs):
            t = time.thread_time()
            try:
                return fn(*args, **kwargs)
            finally:
                times.append(time.thread_time() - t)
        return call

    out: dict[str, list[float]] = {}
    for label, path, name in VLLM_ACCOUNTING:
        owner = operator.attrgetter(path)(engine)
        if owner is not None:
            out[label] = []
            setattr(owner, name, timed(getattr(owner, name), out[label]))
    out["batch shape (inproc's probe)"] = []
    probe.batch_shape = timed(probe.batch_shape, out["batch shape (inproc's probe)"])
    return out


def _side(engine_name: str, anatomy: bool, sets: tuple[str, ...], concurrency: tuple[int, ...],
          steps: tuple[int, ...]) -> dict:
    args = [sys.executable, str(Path(__file__).resolve()), "--child", "on" if anatomy else "off", "--engine", engine_name,
            "--steps", ",".join(map(str, steps)), "--concurrency", ",".join(map(str, concurrency)),
            *[f"--set={x}" for x in sets]]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
               VLLM_LOGGING_LEVEL="ERROR")
    p = subprocess.run(args, capture_output=True, text=True, env=env, cwd=ROOT)
    if p.returncode != 0:
        sys.exit(f"anatomy {'on' if anatomy else 'off'} child failed:\n{p.stderr[-3000:]}")
    return json.loads(p.stdout.strip().splitlines()[-1])


def report(c: int, on: list[dict], off: list[dict]) -> str:
    """The lines for one C: tok/s ratio with its spread, per-step costs in µs and as shares of the reference's step."""
    med = lambda runs, key: statistics.median(r[key] for r in runs)  # noqa: E731
    ratio = med(on, "tok_s") / med(off, "tok_s")
    pairs = [a["tok_s"] / b["tok_s"] for a, b in zip(on, off)]
    step_us = (med(on, "step_s") - med(off, "step_s")) * 1e6
    cpu_us = (med(on, "cpu_s") - med(off, "cpu_s")) * 1e6
    host_us = (med(on, "host_s") - med(off, "host_s")) * 1e6
    ref_us = REFERENCE_STEP_MS.get(c, float("nan")) * 1e3
    verdict = "meets" if ratio >= 0.99 else "misses"
    return (f"C={c}: decode tok/s anatomy on ÷ off = {ratio:.3f} (rounds {min(pairs):.3f}–{max(pairs):.3f}; "
            f"{verdict} the >= 0.99 target)  [on {med(on, 'tok_s'):.1f}, off {med(off, 'tok_s'):.1f} tok/s; "
            f"step {med(on, 'step_s') * 1e3:.2f} vs {med(off, 'step_s') * 1e3:.2f} ms over "
            f"{int(med(on, 'steps'))}/{int(med(off, 'steps'))} steps, avg active {med(on, 'avg_active'):.1f}]\n"
            f"  per-step cost (on − off, medians): {step_us:+.0f} µs step time (wall; noisy here), {cpu_us:+.0f} µs CPU "
            f"time of the stepping thread [{med(on, 'cpu_s') * 1e3:.2f} vs {med(off, 'cpu_s') * 1e3:.2f} ms], "
            f"{host_us:+.0f} µs host time timed inside the step (schedule + update + probe, wall)\n"
            f"  as a share of the first reference's {ref_us / 1e3:.1f} ms step at C={c}: {step_us / ref_us:+.2%} (step "
            f"time), {cpu_us / ref_us:+.2%} (CPU time), {host_us / ref_us:+.2%} (timed host work); an upper bound, as "
            f"its steps yield several tokens" + _accounting(on, ref_us))


def _accounting(on: list[dict], ref_us: float) -> str:
    """The directly timed accounting calls, medians over rounds, per step."""
    labels = on[0].get("accounting_s") or {}
    if not labels:
        return ""
    per = {k: statistics.median(r["accounting_s"][k] for r in on) * 1e6 for k in labels}
    total = sum(per.values())
    parts = ", ".join(f"{k} {v:.0f}" for k, v in per.items())
    return (f"\n  accounting timed directly (CPU time of its calls, anatomy on): {total:.0f} µs per step = "
            f"{total / ref_us:.2%} of the reference's step  ({parts} µs)")


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--engine", choices=tuple(PROFILES), default="vllm", help="the engine installed in this Python")
    ap.add_argument("--rounds", type=int, default=3, help="pairs of processes (on, off), order alternating")
    ap.add_argument("--concurrency", default="1,128", help="the Cs measured in each process")
    ap.add_argument("--steps", default="200,30", help="engine steps in the window of each C")
    ap.add_argument("--profile-stats", action="store_true",
                    help="keep the profile's own stat logging instead of disable-log-stats=true on both sides")
    ap.add_argument("--child", choices=("on", "off"), help=argparse.SUPPRESS)
    ap.add_argument("--set", dest="sets", action="append", default=[], help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    cs = tuple(int(x) for x in a.concurrency.split(","))
    steps = tuple(int(x) for x in a.steps.split(","))
    if len(steps) != len(cs):
        sys.exit(f"--steps {a.steps} gives {len(steps)} step counts for {len(cs)} concurrency levels ({a.concurrency}).")
    if a.child:
        print(json.dumps(measure(a.engine, a.child == "on", tuple(a.sets), cs, steps)))
        return
    sets = SETS[a.engine] + (() if a.profile_stats else NO_STATS[a.engine])
    print(f"anatomy A/B on {a.engine} ({PROFILES[a.engine].name}, --set {' '.join(sets)}), {a.rounds} rounds of "
          f"fresh processes, windows of {a.steps} steps; a shared machine: indicative", flush=True)
    on, off = [], []
    for r in range(a.rounds):
        order = (True, False) if r % 2 == 0 else (False, True)
        got = {flag: _side(a.engine, flag, sets, cs, steps) for flag in order}
        on.append(got[True]), off.append(got[False])
        print(f"round {r + 1}: " + "; ".join(
            f"C={c} on {got[True][str(c)]['tok_s']:.1f} / off {got[False][str(c)]['tok_s']:.1f} tok/s" for c in cs),
            flush=True)
    for c in cs:
        print(report(c, [x[str(c)] for x in on], [x[str(c)] for x in off]))


if __name__ == "__main__":
    main()
