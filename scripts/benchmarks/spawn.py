"""What the tests' fork server saves per child: the same tiny ``inproc cell`` forked from it against a fresh process.

  bench.py spawn [--rounds N]

Each round runs the CPU default's tiny cell (256 x 2, a 16-step window) twice, in
alternating order: once as a fresh ``python -m inproc`` process (how the tests started every
child before), once forked from the fork server of ``tests/zygote.py``, which imported
inproc's CLI and vLLM once when it started. Timed per child, from just before the process is
started (``Popen``) to the moment its exit status is known (``wait`` returns). Printed: the
server's own start (paid once per test session), the medians of both ways, and the saving
per child (fresh minus forked, paired by round) with its quartiles and range.
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from tests import zygote  # noqa: E402  (the checkout's tests package, after the path is set)

PROFILE = ROOT / "launch_profiles" / "cpu-vllm-tiny-llama.toml"
CELL = ["cell", str(PROFILE), "--context", "256", "--concurrency", "2", "--window-steps", "16", "--no-loop-check",
        "--force"]
WAYS = ("fresh process", "forked from the server")


def child(way: str, args: list[str], env: dict[str, str]) -> float:
    """Wall seconds of one child, from its start to its exit status."""
    popen = subprocess.Popen if way == WAYS[0] else zygote.ZygotePopen
    start = time.perf_counter()
    proc = popen([sys.executable, "-m", "inproc", *args], cwd=ROOT, env=env, stdout=subprocess.DEVNULL,
                 stderr=subprocess.PIPE, text=True)
    _, err = proc.communicate()
    if proc.returncode != 0:
        raise SystemExit(f"the child ({way}) failed:\n{err[-3000:]}")
    return time.perf_counter() - start


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="bench.py spawn", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=6)
    rounds = ap.parse_args(argv).rounds
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    wall: dict[str, list[float]] = {w: [] for w in WAYS}
    with tempfile.TemporaryDirectory(prefix="bench-spawn-") as tmp:
        args = [*CELL, "--out", str(Path(tmp) / "r.json")]
        start = time.perf_counter()
        if zygote.server(env) is None:
            raise SystemExit(f"the fork server could not start: {zygote._broken}")
        print(f"the fork server started in {time.perf_counter() - start:.2f} s (once per test session)", flush=True)
        for i in range(rounds):
            for way in (WAYS if i % 2 == 0 else WAYS[::-1]):
                wall[way].append(child(way, args, env))
            print(f"round {i + 1}: " + ", ".join(f"{w} {wall[w][-1]:.2f} s" for w in WAYS), flush=True)
    saved = sorted(a - b for a, b in zip(wall[WAYS[0]], wall[WAYS[1]]))
    q = statistics.quantiles(saved, n=4) if len(saved) > 1 else saved * 3
    for way in WAYS:
        print(f"{way}: median {statistics.median(wall[way]):.2f} s per child")
    print(f"saved per child: median {statistics.median(saved):.2f} s (quartiles {q[0]:.2f} to {q[2]:.2f}, range "
          f"{saved[0]:.2f} to {saved[-1]:.2f}; {rounds} interleaved rounds)")
    return 0

