#!/usr/bin/env python3
"""``scripts/bench.py history``: compact baselines and history, sizes and speed, and detection on real nights.

Sizes (on saved runs, default tests/fixtures/compare/run-1..3.json):
  - a baseline of 3 runs (inproc baseline) against the 3 run files together;
  - a night's history entry (inproc history --store) against its run file;
  - the time to read and judge 30 nights of entries (the entries of the saved runs, each
    stored 10 times under distinct dates: real summaries, repeated to make 30 nights).
Detection (live, a few minutes; --nights DIR re-reads saved nights instead):
  NIGHTS nights of the default CPU profile (2 decode cells, 2 s windows), the last
  --slow of them with the engine's OpenMP threads bound to core 0
  (--set env.VLLM_CPU_OMP_THREADS_BIND=0; the profile's default is auto); then
  inproc history over them: at which night does it find a change, and what does the
  diagnosis name. On a shared machine other workloads' load moves figures as much as
  a planted slowdown can, so the result is printed, never asserted.

Run in the vLLM environment: .venv-vllm/bin/python scripts/bench.py history [--nights DIR] [--count 6 --slow 3]
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "fixtures" / "compare"
PROFILE = ROOT / "launch_profiles" / "cpu-vllm-tiny-llama.toml"
SLOW_SET = "env.VLLM_CPU_OMP_THREADS_BIND=0"


def _inproc(*args: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    return subprocess.run([sys.executable, "-m", "inproc", *args], capture_output=True, text=True, env=env, cwd=ROOT)


TIMED = """
import sys, time
t0 = time.perf_counter()
from inproc.history.build import build_history
from inproc.history.nights import read_nights
t1 = time.perf_counter()
nights = read_nights([sys.argv[1]])
t2 = time.perf_counter()
import scipy.special  # the quantiles and the spreads' prior: imported once, timed apart
t3 = time.perf_counter()
build_history(nights)
print(t2 - t1, time.perf_counter() - t3, t3 - t2)
"""


def sizes(files: list[Path], work: Path) -> None:
    """Baseline of the runs vs the runs; each entry vs its run; 30 nights read and judged."""
    base = work / "baseline.json"
    p = _inproc("baseline", *map(str, files), "-o", str(base))
    if p.returncode:
        sys.exit(p.stderr)
    runs = sum(f.stat().st_size for f in files)
    print(f"baseline of {len(files)} runs: {base.stat().st_size:,} B; the run files: {runs:,} B "
          f"(ratio {base.stat().st_size / runs:.3f})")
    store = work / "store"
    p = _inproc("history", *map(str, files), "--store", str(store))
    for f in files:
        entry = store / f"{f.stem}.summary.json"
        print(f"history entry of {f.name}: {entry.stat().st_size:,} B; the run: {f.stat().st_size:,} B "
              f"(ratio {entry.stat().st_size / f.stat().st_size:.3f})")
    thirty = work / "thirty"
    thirty.mkdir()
    entries = sorted(store.glob("*.json"))
    for i in range(30):
        data = json.loads(entries[i % len(entries)].read_text())
        data["run"]["created"] = f"2026-11-{i + 1:02d}T03:00:00+0000"
        (thirty / f"night-{i + 1:02d}.summary.json").write_text(json.dumps(data))
    t0 = time.perf_counter()
    p = _inproc("history", str(thirty))
    wall = time.perf_counter() - t0
    timed = subprocess.run([sys.executable, "-c", TIMED, str(thirty)], capture_output=True, text=True, cwd=ROOT,
                           env=dict(os.environ, PYTHONPATH=str(ROOT)))
    t_read, t_judge, t_import = map(float, timed.stdout.split())
    print(f"30 nights ({sum(f.stat().st_size for f in thirty.iterdir()):,} B of entries): read {t_read:.2f} s, "
          f"judged {t_judge:.2f} s, importing scipy {t_import:.2f} s; the whole command "
          f"{wall:.2f} s wall with interpreter start (exit {p.returncode}); this machine is shared: indicative")


def make_nights(count: int, slow: int, work: Path) -> Path:
    nights = work / "nights"
    for i in range(1, count + 1):
        extra = ["--set", SLOW_SET] if i > count - slow else []
        p = _inproc("run", str(PROFILE), "--cells", "256x1,256x4", "--no-prefill", "--duration", "2",
                    "--seed", str(i), *extra, "--out", str(nights / f"night-{i}.json"))
        print(f"night {i}{' (OpenMP bound to core 0)' if extra else ''}: exit {p.returncode}", flush=True)
        if p.returncode:
            sys.exit(p.stderr[-2000:])
    return nights


def detection(nights: Path, slow: int) -> None:
    """History over the nights: the changes it finds, the night each starts at, the diagnosis."""
    md = _inproc("history", str(nights), "--format", "md")
    print(md.stdout.split("<details><summary>Nights</summary>")[-1].replace("</details>", "").strip())
    p = _inproc("history", str(nights))
    print(p.stdout if p.returncode in (0, 1) else p.stderr)
    count = len(list(nights.glob("*.json")))
    first_slow = count - slow + 1
    found = [ln for ln in p.stdout.splitlines() if "Total tok/s" in ln and f"night-{first_slow} " in ln]
    print(f"planted at night-{first_slow}: tok/s changes found there in {len(found)} cell(s); "
          f"diagnosis names forward time in {sum('forward time' in ln or 'step time' in ln for ln in found)}")


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--files", nargs="+", type=Path, default=[FIXTURES / f"run-{i}.json" for i in (1, 2, 3)])
    ap.add_argument("--nights", type=Path, help="saved nights (results files or summaries) instead of running")
    ap.add_argument("--count", type=int, default=6, help="nights to run")
    ap.add_argument("--slow", type=int, default=3, help="the last SLOW nights bind OpenMP to core 0")
    ap.add_argument("--no-detection", action="store_true", help="sizes and speed only")
    a = ap.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="inproc-bench-history.") as tmp:
        sizes(a.files, Path(tmp))
        if not a.no_detection:
            detection(a.nights or make_nights(a.count, a.slow, Path(tmp)), a.slow)
    return 0

