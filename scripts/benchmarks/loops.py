"""The loop detector's cost on a full cell, printed against its target, never asserted.

  judge time   judge_cell_loops on 128 requests of 4,096 output tokens each (one of them
               looping with period 40), wall and CPU seconds per call, the median of
               --rounds calls in this process after one warm-up call. Target < 0.5 s:
               the detector runs once per decode cell, after its window.

  .venv-vllm/bin/python scripts/bench.py loops [--rounds N]
"""
from __future__ import annotations

import argparse
import statistics
import time
import numpy as np

from inproc.measure.loops import LoopSettings, judge_cell_loops
from inproc.measure.trace import RequestTrace

TARGET_S = 0.5
DEFAULT = LoopSettings()
NUM_REQUESTS, NUM_TOKENS = 128, 4096


def full_cell(seed: int = 1) -> list[RequestTrace]:
    """128 requests of 4,096 random token ids; request 7 loops 40 tokens 100 times."""
    rng = np.random.default_rng(seed)
    ids = [rng.integers(0, 32000, NUM_TOKENS) for _ in range(NUM_REQUESTS)]
    ids[7] = np.concatenate([rng.integers(0, 32000, 96), np.tile(rng.integers(0, 32000, 40), 100)])
    return [_request(f"r-{i}", t) for i, t in enumerate(ids)]


def _request(rid: str, tokens) -> RequestTrace:
    return RequestTrace(rid, prompt_tokens=16, max_tokens=4096, submit_s=0.0, initial=True, token_ids=list(map(int, tokens)))


def main(argv: list[str]) -> int:
    """Time the detector on a full cell; print the median against the target."""
    ap = argparse.ArgumentParser(prog="bench.py loops", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=7)
    a = ap.parse_args(argv)
    reqs = full_cell()
    reason = judge_cell_loops(reqs, DEFAULT)  # warm-up; also checks the planted loop is found
    if reason != "1 of 128 requests looped: r-7 period 40 ×100":
        print(f"loops: unexpected verdict {reason!r}")
        return 1
    wall, cpu = [], []
    for _ in range(a.rounds):
        w0, c0 = time.perf_counter(), time.process_time()
        judge_cell_loops(reqs, DEFAULT)
        wall.append(time.perf_counter() - w0)
        cpu.append(time.process_time() - c0)
    med = statistics.median(wall)
    print(f"loops: judge_cell_loops on {NUM_REQUESTS} x {NUM_TOKENS} tokens: median {med:.3f} s wall "
          f"(range {min(wall):.3f}-{max(wall):.3f}), {statistics.median(cpu):.3f} s CPU, {a.rounds} rounds; "
          f"{med / TARGET_S:.2f} of the {TARGET_S} s target")
    return 0
