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
pairwise ratios. On a 2-core machine the engine's step time itself drifts by ±10 % from one
window to the next, which no number of rounds here averages to ±1 %, so each side's time
between steps is measured too, by one definition (``inproc.measure.metrics.harness_overhead``:
the window's time outside ``Engine.step()``, per window step). The driver's cost per step is
its time between steps less the bare loop's; over the bare loop's mean step time (the
window's span over its steps) it is the fraction of tok/s the driver's own work takes, and
``1 - that`` is the ratio it implies. That figure misses any effect the driver has on the
steps themselves (caches, memory), which the measured tok/s ratio would show.

Then, for reference, the engine's own offline generate (vLLM's ``LLM.generate``; SGLang's
``Engine.generate``) against an inproc cell, in fresh processes, alternating; noisy on 2-core
machines (single rounds swing 0.8-1.3). SGLang's A/B runs on its overlap loop and on its normal
loop. transformers (``--engine transformers``): ``fidelity_tf``, the same requests through inproc's
adapter and through the engine's own ``generate_batch``.

Run in the engine's environment:  .venv-vllm/bin/python scripts/bench.py fidelity [--rounds 3]
                                  .venv-sglang/bin/python scripts/bench.py fidelity --engine sglang
                                  .venv-vllm/bin/python scripts/bench.py fidelity --engine transformers
"""
from __future__ import annotations

import gc
import itertools
import statistics
import time
from dataclasses import dataclass

from inproc.measure import metrics as m
from inproc.plan.prompts import CellPrompts, PromptFactory
from inproc.run.decode import heap_frozen
from inproc.run.driver import DecodeSettings, Driver
from inproc.types import RequestSpec
from scripts.benchmarks.harness import PROFILE, ROOT, child, parser
from scripts.benchmarks.overhead import CELL

TARGET = 0.99  # inproc's driver ÷ a bare step() loop, total tok/s, at each C
SGLANG_PROFILE = ROOT / "launch_profiles" / "cpu-sglang-tiny-llama.toml"
PROMPT_TOKENS, MAX_TOKENS, CONCURRENCY = 32, 384, 8


def bare_window(engine, prompts: CellPrompts, c: int, max_tokens: int, window_steps: int) -> "BareWindow":
    """A minimal loop keeping ``c`` requests in flight over one window (see the module docstring)."""
    serial = [0]

    def submit(i: int) -> str:
        serial[0] += 1
        rid = f"bare-{serial[0]}"
        engine.add_request(RequestSpec(rid, prompts.request(i), max_tokens))
        return rid

    freeze = not heap_frozen()  # asked before the window: it walks the frozen heap
    live = {submit(i) for i in range(c)}
    started, submitted, tokens, t_open, steps, inside = set(), c, 0, None, 0, 0.0
    while True:
        start = time.perf_counter()
        res = engine.step()
        now = time.perf_counter()
        if t_open is not None:
            inside += now - start
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
    return BareWindow(tokens / span, (span - inside) / steps, span / steps)


@dataclass(frozen=True)
class BareWindow:
    """The bare loop's window: output tokens per second, and per window step its time outside
    ``step()`` and its span (window length over steps), in seconds."""

    tok_s: float
    between_s: float
    step_s: float


def ab(engine, rounds: int, context: int, c: int, max_tokens: int, window_steps: int) -> dict:
    """``rounds`` pairs of driver and bare-loop windows on ``engine``, in order A B, B A, A B, ..."""
    info = engine.info
    factory = PromptFactory(info.vocab_size, 99, info.special_token_ids)
    driver = Driver(engine)
    ours, theirs, harness_us, bare_us, bare_step_us = [], [], [], [], []
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
                bare = bare_window(engine, prompts, c, max_tokens, window_steps)
                theirs.append(bare.tok_s)
                bare_us.append(bare.between_s * 1e6)
                bare_step_us.append(bare.step_s * 1e6)
        factory = PromptFactory(info.vocab_size, 100 + r, info.special_token_ids)
    pairs = [a / b for a, b in zip(ours, theirs)]
    cost_us = statistics.median(harness_us) - statistics.median(bare_us)
    return {"c": c, "inproc_tok_s": ours, "bare_tok_s": theirs,
            "ratio": statistics.median(ours) / statistics.median(theirs), "pair_min": min(pairs),
            "pair_max": max(pairs), "pair_median": statistics.median(pairs), "rounds": rounds,
            "window_steps": window_steps, "harness_us_per_step": statistics.median(harness_us),
            "bare_between_us_per_step": statistics.median(bare_us), "bare_step_us": statistics.median(bare_step_us),
            "driver_cost_us_per_step": cost_us,
            "implied_ratio": 1 - cost_us / statistics.median(bare_step_us)}


def report(label: str, res: dict) -> str:
    """Two lines per C: the measured tok/s ratio with its spread; the driver's cost per step and the ratio it implies."""
    return (f"{label} C={res['c']}: inproc driver / bare step() loop total tok/s = {res['ratio']:.3f} "
            f"(medians of {res['rounds']} alternating rounds of {res['window_steps']}-step windows; pairwise "
            f"{res['pair_min']:.3f}..{res['pair_max']:.3f}, median {res['pair_median']:.3f}; target >= {TARGET})\n"
            f"{label} C={res['c']}: time between steps {res['harness_us_per_step']:.1f} µs (driver) vs "
            f"{res['bare_between_us_per_step']:.1f} µs (bare loop): the driver's own work {res['driver_cost_us_per_step']:.1f} µs "
            f"per {res['bare_step_us']:.0f} µs step, implied ratio {res['implied_ratio']:.4f} (target >= {TARGET})")


GENERATE = r"""
import json, sys, time
from inproc.profiles.spec import load_profile
from inproc.plan.prompts import PromptFactory
p = load_profile(sys.argv[1]); n_prompt, max_tokens, c = map(int, sys.argv[2:5])
import os; os.environ.update(p.env)
from vllm import LLM, SamplingParams
kwargs = {k.replace("-", "_"): v for k, v in p.engine_args.items()}
llm = LLM(model=p.model, **kwargs)
pf = PromptFactory(32000, 99)
params = SamplingParams(max_tokens=max_tokens, ignore_eos=True, temperature=1.0, detokenize=False)
prompts = lambda tag: [{"prompt_token_ids": pf.tokens(n_prompt, tag, i)} for i in range(c)]
llm.generate(prompts("warm"), SamplingParams(max_tokens=16, ignore_eos=True, detokenize=False), use_tqdm=False)
t = time.perf_counter(); outs = llm.generate(prompts("timed"), params, use_tqdm=False); dt = time.perf_counter() - t
tokens = sum(len(o.outputs[0].token_ids) for o in outs)
print(json.dumps({"tok_s": tokens / dt, "tokens": tokens, "seconds": dt}))
"""


AB = r"""
import json, sys
sys.path.insert(0, sys.argv[1])
from scripts.benchmarks.fidelity import ab
from inproc import engines
from inproc.profiles.spec import load_profile
p = load_profile(sys.argv[2]).with_overrides(tuple(sys.argv[8:]))
rounds, context, c, max_tokens, window_steps = map(int, sys.argv[3:8])
engine = engines.build_engine(p.launch)
try:
    res = ab(engine, rounds, context, c, max_tokens, window_steps)
    res["event_loop"] = engine.info.settings.event_loop
finally:
    engine.shutdown()
print(json.dumps(res))
"""


SGLANG_GENERATE = r"""
import json, sys, time
from inproc.engines.sglang.launch import adapter_server_args
from inproc.plan.prompts import PromptFactory
from inproc.profiles.spec import load_profile
p = load_profile(sys.argv[1]); n_prompt, max_tokens, c = map(int, sys.argv[2:5])
import os; os.environ.update(p.env)
import sglang
args = adapter_server_args(p.model, dict(p.engine_args))
engine = sglang.Engine(server_args=args)
pf = PromptFactory(32000, 99)
ids = lambda tag: [pf.tokens(n_prompt, tag, i) for i in range(c)]
engine.generate(input_ids=ids("warm"), sampling_params={"max_new_tokens": 16, "ignore_eos": True})
t = time.perf_counter()
outs = engine.generate(input_ids=ids("timed"), sampling_params={"max_new_tokens": max_tokens, "ignore_eos": True})
dt = time.perf_counter() - t
engine.shutdown()
tokens = sum(o["meta_info"]["completion_tokens"] for o in outs)
print(json.dumps({"tok_s": tokens / dt, "tokens": tokens, "seconds": dt}))
"""


def fidelity_ab(engine: str, rounds: int) -> None:
    """The in-process A/B: inproc's driver against a bare step() loop, same engine, same process."""
    profile = PROFILE if engine == "vllm" else SGLANG_PROFILE
    variants = [()] if engine == "vllm" else [(), ("disable-overlap-schedule=true",)]
    for sets, c in itertools.product(variants, (1, 8, 128)):
        big = {"vllm": ["max-num-seqs=128", "num-gpu-blocks-override=2048", "max-num-batched-tokens=8192"],
               "sglang": ["max-running-requests=128", "max-total-tokens=65536"]}[engine] if c > 8 else []
        r = child(AB, str(ROOT), str(profile), str(rounds), str(PROMPT_TOKENS), str(c), str(MAX_TOKENS),
                  str(128 if c > 8 else 512), *sets, *big)
        label = f"fidelity A/B ({engine}{', ' + r['event_loop'] + ' loop' if r.get('event_loop') else ''})"
        print(report(label, r), flush=True)


def fidelity(rounds: int, engine: str = "vllm") -> None:
    fidelity_ab(engine, rounds)
    generate, profile = (GENERATE, PROFILE) if engine == "vllm" else (SGLANG_GENERATE, SGLANG_PROFILE)
    ours, theirs = [], []
    for i in range(rounds):
        g = child(generate, str(profile), str(PROMPT_TOKENS), str(MAX_TOKENS), str(CONCURRENCY))
        # Window shorter than one request's life so it holds only steady decode of C requests.
        c = child(CELL, str(profile), str(PROMPT_TOKENS), str(MAX_TOKENS), str(CONCURRENCY), "3")
        theirs.append(g["tok_s"]), ours.append(c["tok_s"])
        print(f"round {i + 1}: {engine} offline generate {g['tok_s']:.1f} tok/s ({g['tokens']} tokens in {g['seconds']:.2f} s); "
              f"inproc cell {c['tok_s']:.1f} tok/s ({c['tokens']} tokens in {c['seconds']:.2f} s, "
              f"avg active {c['avg_active']:.2f}, overhead {c['overhead']:.2%})", flush=True)
    ratio = statistics.median(ours) / statistics.median(theirs)
    print(f"fidelity: inproc / {engine}'s offline generate total tok/s = {ratio:.3f}  (separate processes, "
          f"medians of {rounds} rounds; single rounds are noisy here)")


def main(argv: list[str]) -> int:
    ap = parser("fidelity", __doc__)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--engine", choices=("vllm", "sglang", "transformers"), default="vllm",
                    help="the engine installed in this Python")
    a = ap.parse_args(argv)
    if a.engine == "transformers":
        from scripts.benchmarks import fidelity_tf

        return fidelity_tf.main(["--rounds", str(a.rounds)])
    fidelity(a.rounds, a.engine)
    return 0
