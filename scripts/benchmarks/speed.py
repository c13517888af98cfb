"""``scripts/bench.py speed``: how long compare and history's figures take on a GPU-sized matrix, printed, never asserted.

  load      a fresh process that loads one of those runs (``load_results``: imports, manifest,
            cell files, figures), the loader alone.
  compare   ``python -m inproc compare A B`` (a fresh process: imports, loading, the block
            bootstrap of every cell and metric, rendering) of two synthetic 64-cell runs with
            30 s windows. Target < 3 s.
  series    a fresh process that reads 30 nights of history summaries of that matrix and
            computes every cell's night figure of every metric (``inproc.history.series.series``).
            Target < 3 s.
  history   ``python -m inproc history NIGHTS`` (a fresh process: the figures above, the
            spreads, the walk through the nights, the verdicts, the diagnoses, rendering) on
            those 30 nights. Target < 3 s.

The runs are synthetic (numpy, seeded) and GPU-like: 8 contexts (1K-128K) x 8 concurrency
levels (1-128), decode steps of 3.6 ms (1K x 1) to 48 ms (128K x 128) with 2 % jitter, C
requests kept in flight, each refilled after 1,024 tokens, 8 GPUs sampled at 10 Hz; their
figures and verdicts are derived by inproc's own definitions. The 30 nights are the
summaries of three such runs (seeds 1-3), each stored under ten dates.

``--before DIR`` times the same commands on another checkout of inproc (e.g. an export of an
older commit: ``git archive COMMIT | tar -x -C DIR``) on the same files, interleaved with this
checkout's (``--repeat`` rounds, each running both, in alternating order: ABBA...), and prints
each command's ratio this ÷ before per round (wall and CPU seconds), their median and their range. Wall and CPU seconds are printed: on a shared machine the wall time includes waiting
for a core. The children cache their bytecode in the temp folder, as an installed package
has it, and each checkout's imports are compiled once, untimed, before it is timed.

  .venv-vllm/bin/python scripts/bench.py speed [--before DIR] [--repeat 3]
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from scripts.benchmarks.record import synthetic_telemetry  # noqa: E402
from inproc.compare.samples import SubWindowing  # noqa: E402
from inproc.measure.steps import StepTrace, on_ns_grid_array  # noqa: E402
from inproc.measure.trace import CellTrace, RequestTrace  # noqa: E402
from inproc.plan.matrix import CellPlan  # noqa: E402
from inproc.record import derive  # noqa: E402
from inproc.record.io import load_results, write_results  # noqa: E402
from inproc.record.schema import RunRecord  # noqa: E402
from inproc.record.summary import write_summary  # noqa: E402

CONTEXTS = (1024, 2048, 4096, 8192, 16384, 32768, 65536, 131072)
CONCURRENCY = (1, 2, 4, 8, 16, 32, 64, 128)
VOCAB, MAX_TOKENS, WINDOW_S, NIGHTS, TARGET_S = 129_280, 1024, 30.0, 30, 3.0
TEMPLATE = ROOT / "tests" / "fixtures" / "compare" / "run-1.json"


def step_s(context: int, c: int) -> float:
    """The mean decode step: 3.6 ms at 1K x 1, growing with log C and log context to 48 ms at 128K x 128."""
    return 0.0036 * (1 + np.log2(c) / 4) * (1 + 0.55 * np.log2(context / 1024))


def gpu_like_trace(rng: np.random.Generator, context: int, c: int) -> CellTrace:
    """C requests in flight over a WINDOW_S window (and 3 steps before it), one token per request per step."""
    mean = step_s(context, c)
    n_steps = int(WINDOW_S / mean * 1.02) + 4
    dur = mean * rng.normal(1.0, 0.02, n_steps)
    t_end = on_ns_grid_array(np.cumsum(dur))
    t_start = on_ns_grid_array(t_end - dur * 0.97)
    requests = []
    for _ in range(c):
        begin = 0
        while begin < n_steps:
            end = min(n_steps, begin + MAX_TOKENS)
            steps = np.arange(begin, end, dtype=np.int32)
            done = end - begin == MAX_TOKENS
            requests.append(RequestTrace(f"r{len(requests)}", context, MAX_TOKENS, float(t_start[begin]), begin == 0,
                                         steps, np.ones(steps.size, np.int32),
                                         rng.integers(0, VOCAB, steps.size).astype(np.int32),
                                         end - 1 if done else None, "length" if done else None, 0))
            begin = end
    full = np.full(n_steps, c)
    none = np.zeros(n_steps)
    steps = StepTrace.of(t_start_s=t_start, t_end_s=t_end, schedule_s=on_ns_grid_array(np.full(n_steps, 1e-4)),
                         update_s=on_ns_grid_array(np.full(n_steps, 5e-5)), num_running=full, num_waiting=none,
                         num_preempted=none, num_scheduled_tokens=full, num_decode_reqs=full, num_decode_tokens=full,
                         output_of=np.arange(n_steps) - 1)
    return CellTrace(steps, requests, float(t_end[2]), WINDOW_S, "all first tokens", clock_origin_s=1000.0)


def gpu_like_run(template: RunRecord, seed: int) -> RunRecord:
    """A 64-cell record of GPU-like traces (see the module docstring)."""
    rng = np.random.default_rng(seed)
    grid = [(L, C) for L in CONTEXTS for C in CONCURRENCY]
    capacity = dataclasses.replace(template.capacity, max_num_seqs=max(CONCURRENCY), max_model_len=2 * CONTEXTS[-1],
                                   num_blocks=1 << 24, kv_tokens=1 << 28, usable_blocks=None)
    decode = []
    for L, C in grid:
        trace = gpu_like_trace(rng, L, C)
        decode.append(derive.decode_entry(CellPlan(L, C, MAX_TOKENS, None), "shared", "", trace,
                                          synthetic_telemetry(rng, trace), capacity, template.plan.loops))
    settings = dataclasses.replace(template.settings, contexts=CONTEXTS, concurrency=CONCURRENCY, prefill_contexts=(),
                                   cells=tuple(grid), window_s=WINDOW_S)
    return dataclasses.replace(template, plan=dataclasses.replace(template.plan, settings=settings, seed=seed),
                               capacity=capacity, prefill=(), decode=tuple(decode), finished=True,
                               created=f"2026-12-0{seed}T03:00:00+0000")


def make_files(work: Path) -> tuple[Path, Path, Path]:
    """Two runs to compare and a folder of NIGHTS summaries."""
    template = load_results(TEMPLATE)
    nights = work / "nights"
    nights.mkdir()
    runs = []
    for seed in (1, 2, 3):
        rec = gpu_like_run(template, seed)
        valid = sum(e.status == "Valid" for e in rec.decode)
        tokens = sum(e.figures.output_tokens for e in rec.decode if e.figures is not None)
        path = work / f"run-{seed}.json"
        write_results(path, rec)
        summary = work / f"run-{seed}.summary.json"
        write_summary(summary, rec, str(path), SubWindowing())
        runs.append(path)
        print(f"run {seed}: {len(rec.decode)} cells ({valid} Valid), {tokens:,} output tokens in the windows", flush=True)
    for i in range(NIGHTS):
        data = json.loads((work / f"run-{i % 3 + 1}.summary.json").read_text())
        data["run"]["created"] = f"2026-11-{i + 1:02d}T03:00:00+0000"
        (nights / f"night-{i + 1:02d}.summary.json").write_text(json.dumps(data, separators=(",", ":")))
    return runs[0], runs[1], nights


SERIES = """
import sys
from inproc.compare.samples import METRICS
from inproc.history.nights import read_nights
from inproc.history.series import series
nights = read_nights([sys.argv[1]])
cells = sorted({(e.context, e.concurrency) for n in nights for e in n.record.decode})
points = [series(nights, cell, metric) for cell in cells for metric in METRICS]
print(len(nights), len(cells), sum(p.figure is not None for s in points for p in s))
"""


#: A fresh process that loads one run (imports, the manifest, every cell file, the figures): the loader alone.
LOAD = "import sys; from inproc.record.io import load_results; load_results(sys.argv[1])"


def _commands(files: tuple[Path, Path, Path]) -> dict[str, list[str]]:
    a, b, nights = files
    return {"load": [sys.executable, "-c", LOAD, str(a)],
            "compare": [sys.executable, "-m", "inproc", "compare", str(a), str(b)],
            "series": [sys.executable, "-c", SERIES, str(nights)],
            "history": [sys.executable, "-m", "inproc", "history", str(nights)]}


def timed(cmd: list[str], root: Path, env: dict[str, str]) -> tuple[float, float, str]:
    """Wall seconds, CPU seconds (user + system) and stdout of one fresh process run on the checkout at ``root``."""
    before, t0 = resource.getrusage(resource.RUSAGE_CHILDREN), time.perf_counter()
    p = subprocess.run(cmd, cwd=root, env=dict(env, PYTHONPATH=str(root)), capture_output=True, text=True)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if p.returncode not in (0, 1):
        sys.exit(f"{' '.join(cmd)} exited {p.returncode}:\n{p.stderr[-3000:]}")
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime), p.stdout


def child_env(work: Path) -> dict[str, str]:
    """The children's environment: bytecode cached in ``work`` (as an installed package has it; with
    PYTHONDONTWRITEBYTECODE every run would compile every module again), never in the checkouts."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    return dict(env, PYTHONPYCACHEPREFIX=str(work / "pycache"))


WARM = "import inproc.cli.main, inproc.history.series, scipy.special"  # fills the bytecode cache, untimed


def measure(label: str, root: Path, files: tuple[Path, Path, Path], env: dict[str, str],
            repeat: int) -> dict[str, float]:
    """Median wall seconds of each command on the checkout at ``root``; prints each."""
    commands = _commands(files)
    timed([sys.executable, "-c", WARM], root, env)
    out = {}
    for name, cmd in commands.items():
        runs = [timed(cmd, root, env) for _ in range(repeat)]
        wall, cpu = float(np.median([r[0] for r in runs])), float(np.median([r[1] for r in runs]))
        note = f"; {runs[0][2].split()[0]} nights, {runs[0][2].split()[2]} figures" if name == "series" else ""
        print(f"{label} {name}: {wall:.2f} s wall, {cpu:.2f} s CPU (median of {repeat}; target < {TARGET_S:g} s: "
              f"{wall / TARGET_S:.2f} of it{note})", flush=True)
        out[name] = wall
    return out


def interleaved(before: Path, files: tuple[Path, Path, Path], env: dict[str, str], rounds: int) -> None:
    """Each command on this checkout and on ``before``, ``rounds`` times, the order alternating per round;
    prints this ÷ before per round (below 1: this checkout is faster), the median and the range."""
    commands = _commands(files)
    for root in (ROOT, before):
        timed([sys.executable, "-c", WARM], root, env)
    for name, cmd in commands.items():
        runs: dict[Path, list[tuple[float, float, str]]] = {ROOT: [], before: []}
        for r in range(rounds):
            for root in ((ROOT, before) if r % 2 == 0 else (before, ROOT)):
                runs[root].append(timed(cmd, root, env))
        for k, what in ((0, "wall"), (1, "CPU")):
            this, old = [x[k] for x in runs[ROOT]], [x[k] for x in runs[before]]
            ratios = [x / y for x, y in zip(this, old)]
            print(f"{name} {what}: this {np.median(this):.2f} s, before {np.median(old):.2f} s (medians of {rounds}); "
                  f"this ÷ before per round {', '.join(f'{q:.3f}' for q in ratios)}: median {np.median(ratios):.3f}, "
                  f"range {min(ratios):.3f}-{max(ratios):.3f}", flush=True)


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="bench.py speed", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--before", type=Path, help="another checkout of inproc to time on the same files, interleaved")
    ap.add_argument("--repeat", type=int, default=3, help="runs of each command on this checkout (with --before: "
                    "rounds of both); the median is printed")
    a = ap.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="bench-speed-") as tmp:
        work = Path(tmp)
        files = make_files(work)
        env = child_env(work)
        print(f"compare: python -m inproc compare {files[0].name} {files[1].name}; series: {NIGHTS} nights, "
              "every cell and metric", flush=True)
        if a.before is None:
            measure("this checkout", ROOT, files, env, a.repeat)
        else:
            interleaved(a.before.resolve(), files, env, a.repeat)
    return 0

