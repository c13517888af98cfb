#!/usr/bin/env python3
"""Benchmarks that check inproc's own targets; each prints ratios and rates, never asserts on time.

  python scripts/bench.py NAME [FLAGS]    one benchmark (NAME --help: what it measures, its flags, its target)
  python scripts/bench.py all             every benchmark with its defaults

Run in the engine's environment (.venv-vllm/bin/python; .venv-sglang/bin/python for
fidelity --engine sglang). Machines like ours are noisy: the A/Bs alternate their sides and
report medians with their intervals. Each benchmark is a module of scripts/benchmarks/.
"""
from __future__ import annotations

import argparse
import importlib
import sys
import textwrap
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from scripts.benchmarks import BENCHMARKS, summary  # noqa: E402


def listing() -> str:
    """Every benchmark with the first paragraph of its docstring."""
    return "benchmarks:\n" + "\n".join(
        textwrap.fill(summary(name), 100, initial_indent=f"  {name:<12}", subsequent_indent=" " * 14)
        for name in BENCHMARKS)


def run(name: str, argv: list[str]) -> int:
    """Run benchmark ``name`` with ``argv``; its exit status."""
    sys.argv[0] = f"bench.py {name}"  # the usage line of a benchmark whose parser names no prog
    return importlib.import_module(f"scripts.benchmarks.{BENCHMARKS[name]}").main(argv) or 0


def main(argv: list[str]) -> int:
    if argv[:1] and argv[0] in BENCHMARKS:
        return run(argv[0], argv[1:])
    ap = argparse.ArgumentParser(prog="bench.py", description=__doc__, epilog=listing(),
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("what", choices=(*BENCHMARKS, "all"), metavar="NAME|all", help="the benchmark to run")
    a = ap.parse_args(argv)
    status = 0
    for name in BENCHMARKS if a.what == "all" else (a.what,):
        status = max(status, run(name, []))
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
