"""Fidelity for transformers' continuous batching: the same requests through inproc's adapter and through the
engine's own ``generate_batch``, in one process, rounds alternating.

    python scripts/bench.py fidelity --engine transformers [--rounds 5]
    python scripts/bench.py fidelity-tf [--rounds 5] [--requests 8] [--prompt 128] [--new 128] [--profile P]

Two models are built from the profile's config with the same dummy weights (one seed), each with its own
manager and cache of the profile's settings: inproc's engine (``inproc.engines.transformers``), and one
``generate_batch`` uses (``persistent_manager=True``: its manager, cache and graphs are made once, in the
warm-up round, as the engine's are at build). Per round both take the same N prompts of P token ids with
M new tokens each, sampled alike (the engine's GenerationConfig): inproc submits them and calls ``Engine.step()`` until none is left (everything
the adapter does per step included: its reads of the scheduler, batch, padding and block tables, its
deltas); ``generate_batch`` runs its own loop in its background thread and returns the outputs. Each side's
figure is output tokens ÷ the wall time from the first submission to the last token (generate_batch: its
call). Rounds alternate A B, B A, ...; the ratio is of the medians, with the pairwise spread, against the target (``TARGET``).
The profile's ``torch-threads`` holds for the whole process, so for both sides (the tiny CPU profile sets 1:
with torch's two threads on a busy 2-core machine, the calling thread's forward ran 2-4 times slower than a
background thread's, which measures OpenMP under contention rather than either loop).
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, ROOT)
PROFILE = os.path.join(ROOT, "launch_profiles", "cpu-transformers-tiny-llama.toml")
TARGET = 0.98  # inproc's adapter ÷ generate_batch, output tok/s


def inproc_round(engine, prompts: list[list[int]], new: int, tag: str) -> tuple[float, int]:
    """Output tokens per second through the adapter's step loop, and the tokens."""
    from inproc.types import RequestSpec

    t0 = time.perf_counter()
    for i, p in enumerate(prompts):
        engine.add_request(RequestSpec(f"{tag}-{i}", p, new, temperature=1.0))
    tokens = 0
    while engine.has_unfinished():
        tokens += sum(len(d.new_token_ids) for d in engine.step().deltas)
    return tokens / (time.perf_counter() - t0), tokens


def generate_round(model, gen, cb, prompts: list[list[int]], new: int) -> tuple[float, int]:
    """Output tokens per second of one ``generate_batch`` call, and the tokens."""
    t0 = time.perf_counter()
    out = model.generate_batch(inputs=prompts, generation_config=gen, continuous_batching_config=cb,
                               max_new_tokens=new, persistent_manager=True, progress_bar=False)
    dt = time.perf_counter() - t0
    tokens = sum(len(o.generated_tokens) for o in out.values())
    return tokens / dt, tokens


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--profile", default=PROFILE)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--requests", type=int, default=8)
    ap.add_argument("--prompt", type=int, default=128)
    ap.add_argument("--new", type=int, default=128)
    a = ap.parse_args(argv)
    from inproc import engines
    from inproc.engines.transformers.args import parse_profile
    from inproc.engines.transformers.build import build_model, generation_config, resolve_device
    from inproc.plan.prompts import PromptFactory
    from inproc.profiles.spec import load_profile

    launch = load_profile(a.profile).launch
    engine = engines.build_engine(launch)
    args = parse_profile(launch.model, dict(launch.engine_args))
    model = build_model(args, resolve_device(args.device))
    gen = generation_config(1.0, None, a.new)  # the adapter's sampler at temperature 1 (no EOS), so both sides sample alike
    factory = PromptFactory(engine.info.vocab_size, 5, engine.info.special_token_ids)
    ours, theirs = [], []
    for r in range(a.rounds + 1):  # round 0 warms both sides up (generate_batch's manager is made there)
        prompts = [factory.tokens(a.prompt, f"round-{r}", i) for i in range(a.requests)]
        sides = ("inproc", "generate") if r % 2 == 0 else ("generate", "inproc")
        got = {}
        for side in sides:
            got[side] = (inproc_round(engine, prompts, a.new, f"r{r}") if side == "inproc"
                         else generate_round(model, gen, args.cb_config(), prompts, a.new))
        assert got["inproc"][1] == got["generate"][1] == a.requests * a.new, got
        if r:
            ours.append(got["inproc"][0]), theirs.append(got["generate"][0])
            print(f"round {r} ({' then '.join(sides)}): inproc {got['inproc'][0]:.1f} tok/s, generate_batch "
                  f"{got['generate'][0]:.1f} tok/s, ratio {got['inproc'][0] / got['generate'][0]:.3f}", flush=True)
    engine.shutdown()
    pairs = [x / y for x, y in zip(ours, theirs)]
    ratio = statistics.median(ours) / statistics.median(theirs)
    print(f"fidelity (transformers {engine.info.version}, {engine.info.capacity.groups[0].kind}): inproc's step loop / "
          f"generate_batch total tok/s = {ratio:.3f} (medians of {a.rounds} alternating rounds of {a.requests} "
          f"requests × {a.prompt} prompt + {a.new} new tokens; pairwise {min(pairs):.3f}..{max(pairs):.3f}, median "
          f"{statistics.median(pairs):.3f}; target >= {TARGET})")
    return 0

