"""The harness's cost: the fraction of a decode window spent outside ``Engine.step()`` at C = 128 on the
tiny model (``inproc.measure.metrics.harness_overhead``), and the adapter's own work inside the step,
from one inproc cell in a fresh process.

Run in the engine's environment:  .venv-vllm/bin/python scripts/bench.py overhead
"""
from __future__ import annotations

from scripts.benchmarks.harness import PROFILE, child, parser

TARGET = 0.01  # of the window outside Engine.step()

CELL = r"""
import json, sys
from dataclasses import replace
from inproc.profiles.spec import load_profile
from inproc.run.session import run_matrix
p = load_profile(sys.argv[1]).with_overrides(tuple(sys.argv[6:]))
n_prompt, max_tokens, c = map(int, sys.argv[2:5]); window = float(sys.argv[5])
s = replace(p.matrix, contexts=(n_prompt,), concurrency=(c,), prefill_contexts=(), window_s=window,
            max_output=max_tokens, prompt_mode="distinct")
rec = run_matrix(p, s, out=None, seed=1, telemetry_hz=None)
e = rec.decode[0]; f = e.figures
probe = f.anatomy.adapter_overhead  # instrumentation + conversion of the outputs, inside step()
print(json.dumps({"tok_s": f.total_tok_s, "tokens": f.output_tokens, "seconds": f.window_s,
                  "overhead": f.harness_overhead, "probe": probe, "host": f.anatomy.host_overhead,
                  "avg_active": f.avg_active, "status": e.status}))
"""


def overhead() -> None:
    sets = ["max-num-seqs=128", "num-gpu-blocks-override=2048", "max-num-batched-tokens=8192"]
    c = child(CELL, str(PROFILE), "64", "256", "128", "5", *sets)
    print(f"overhead at C=128: {c['overhead']:.3%} of the window outside Engine.step()  "
          f"(target <= {TARGET:.0%}: ratio {c['overhead'] / TARGET:.2f} of the target; {c['tokens']} tokens, "
          f"{c['tok_s']:.1f} tok/s, avg active {c['avg_active']:.1f}, status {c['status']})")
    print(f"the adapter inside Engine.step() at C=128: {c['probe']:.3%} of step time (its bookkeeping in the "
          f"scheduler wrappers: batch shape, tags, stats; and its conversion of the outputs); engine host work "
          f"(schedule + output processing): {c['host']:.2%} of step time")


def main(argv: list[str]) -> int:
    parser("overhead", __doc__).parse_args(argv)
    overhead()
    return 0
