"""How long an ``inproc`` process takes to end once its command is done, with and without the interpreter's teardown.

  bench.py exit [--rounds N]

Each round runs the same tiny cell (``inproc cell`` of the CPU default, 256 x 2, a 16-step
window) twice in fresh processes, in alternating order: once as ``python -m inproc`` ends
(``inproc.cli.main.run_process``: exit handlers, flush, then ``os._exit``), once through
``main()`` alone, which ends with ``sys.exit`` and Python's full teardown. Timed per child,
from the moment its last line of output ("results: ...") reaches this process to the
moment the process has exited (``wait`` returns): the cost of ending. Also printed, the
child's whole wall time. Medians over the rounds, with the quartiles of the differences.
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
PROFILE = ROOT / "launch_profiles" / "cpu-vllm-tiny-llama.toml"
CELL = ["cell", str(PROFILE), "--context", "256", "--concurrency", "2", "--window-steps", "16", "--no-loop-check",
        "--force"]
WAYS = {"run_process (python -m inproc)": [sys.executable, "-m", "inproc"],
        "main() and sys.exit": [sys.executable, "-c", "import sys; from inproc.cli.main import main; main(sys.argv[1:])"]}


def child(argv: list[str], out: Path) -> tuple[float, float]:
    """(seconds from its last output line to its exit, its wall seconds) of one child."""
    env = dict(os.environ, PYTHONPATH=str(ROOT), VLLM_ENABLE_V1_MULTIPROCESSING="0")
    start = time.perf_counter()
    proc = subprocess.Popen([*argv, *CELL, "--out", str(out)], cwd=ROOT, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, text=True)
    last = start
    for _ in proc.stdout:
        last = time.perf_counter()
    if proc.wait() != 0:
        raise SystemExit(f"the child {' '.join(argv[:3])} failed")
    end = time.perf_counter()
    return end - last, end - start


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="bench.py exit", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=6)
    rounds = ap.parse_args(argv).rounds
    ending: dict[str, list[float]] = {w: [] for w in WAYS}
    wall: dict[str, list[float]] = {w: [] for w in WAYS}
    with tempfile.TemporaryDirectory(prefix="bench-exit-") as tmp:
        out = Path(tmp) / "r.json"
        for i in range(rounds):
            order = list(WAYS) if i % 2 == 0 else list(reversed(WAYS))
            for way in order:
                e, t = child(WAYS[way], out)
                ending[way].append(e), wall[way].append(t)
            print(f"round {i + 1}: " + ", ".join(f"{w}: ends in {ending[w][-1]:.2f} s of {wall[w][-1]:.2f} s"
                                                  for w in WAYS), flush=True)
    fast, slow = WAYS
    saved = sorted(b - a for a, b in zip(wall[fast], wall[slow]))
    q = statistics.quantiles(saved, n=4) if len(saved) > 1 else saved * 3
    for way in WAYS:
        print(f"{way}: median {statistics.median(ending[way]):.2f} s from its last line to its exit, "
              f"median wall {statistics.median(wall[way]):.2f} s")
    print(f"saved per process: median {statistics.median(saved):.2f} s (quartiles {q[0]:.2f} to {q[2]:.2f}; "
          f"{rounds} interleaved rounds)")
    return 0

