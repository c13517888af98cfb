"""Part of ``scripts/bench.py fidelity --generate``: inproc's cell against the engine's own offline generate.

vLLM's ``LLM.generate`` or SGLang's ``Engine.generate`` and an ``inproc`` cell of the same requests, each in a
fresh process, rounds alternating; single rounds swing 0.8-1.3 on 2-core machines, so this is kept for
reference beside the in-process A/B against a bare ``step()`` loop (``fidelity.py``).
"""
from __future__ import annotations

import statistics

from scripts.benchmarks.harness import PROFILE, ROOT, child
from scripts.benchmarks.overhead import CELL

SGLANG_PROFILE = ROOT / "launch_profiles" / "cpu-sglang-tiny-llama.toml"
PROMPT_TOKENS, MAX_TOKENS, CONCURRENCY = 32, 384, 8

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


def fidelity_generate(rounds: int, engine: str = "vllm") -> None:
    """inproc's cell against the engine's own offline generate, fresh processes alternating (noisy, for reference)."""
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
