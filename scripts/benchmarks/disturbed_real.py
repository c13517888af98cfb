#!/usr/bin/env python3
"""``scripts/bench.py disturbed --real``: the disturbance rule's false-flag rate and power on this machine.

Runs ``inproc run`` of the default CPU profile (the demo's engine and plan: its decode cells, ``--cells`` for
fewer, no prefill entries) ``--runs`` times quietly and ``--burner-runs`` times beside a burner of another program
that wants ``--burner-cores`` of a core (``tests/load.py``'s duty-cycled spinner, started apart from this process
tree), spread among the quiet ones, and after each quiet run ``inproc compare R R`` (a quiet run against itself
must exit 0). No run starts past ``--budget-min`` minutes. Each run's cells are appended to ``--log`` (one JSON
line a run), so several calls accumulate; the summary is printed from the whole log:

- the share of decode cells flagged, quiet and beside the burner, with 95 % Wilson intervals (targets: quiet
  ≤ 2 %, 0.5-core burner ≥ 95 %), and the causes named;
- the steal this VM showed in the quiet cells (its share of the engine's CPUs' running time: median, 90th
  percentile, largest) and the runs' steady share, the figures the simulation's quiet steal (``tests/sim/host.py``
  ``QUIET_STEAL``) is drawn from;
- the burner's own CPU over each run, read from its ``/proc/PID/stat`` (what it really took);
- the self-compares' exit codes.

Run it alone on the machine (it measures the machine): ``scripts/bench.py disturbed --real --runs 3 --log F``.
``--summary`` prints the log's summary without running anything.
"""
from __future__ import annotations

import argparse
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

from scripts.benchmarks.harness import wilson  # noqa: E402
from inproc.record.load import load_results  # noqa: E402
from tests.load import burning_apart  # noqa: E402

PROFILE = ROOT / "launch_profiles" / "cpu-vllm-tiny-llama.toml"
STEAL_MOVE_PCT = 5.0
QUIET_OTHERS = 0.1  # other processes' cores over a quiet run from which it was not quiet
MIN_OTHER = 0.1  # other processes' cores on the engine's CPUs in a window left out of the steal-effect figures


def _cpu_s(pid: int) -> float | None:
    """utime + stime of ``pid`` in seconds, from /proc (None once it is gone)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except FileNotFoundError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _host_busy_s() -> float:
    """All CPUs' busy seconds (steal left out) from /proc/stat's first line."""
    with open("/proc/stat") as f:
        t = [int(x) for x in f.readline().split()[1:9]]
    return (t[0] + t[1] + t[2] + t[5] + t[6]) / os.sysconf("SC_CLK_TCK")  # user nice system irq softirq


def _children_cpu_s() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def _inproc(*args: str, timeout_s: float = 600) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-m", "inproc", *args], capture_output=True, text=True, env=env,
                          cwd=ROOT, timeout=timeout_s)


def _cells(out: Path) -> list[dict]:
    """Each judged decode cell of a results file: its key, cause and the rule's figures."""
    rec = load_results(str(out))
    cells = []
    for e in rec.decode:
        d = e.telemetry.disturbance if e.telemetry is not None else None
        if d is None or d.window_s is None:
            continue  # not measured (over capacity) or not judged on CPU
        cells.append({"cell": e.key, "status": e.status, "disturbed": e.disturbed, "tries": len(e.tries),
                      "first_try": e.tries[0].disturbed if e.tries else e.disturbed, "steal_share": d.steal_share,
                      "steady_steal_share": d.steady_steal_share, "cpus_other_cores": d.cpus_other_cores,
                      "other_cores": d.other_cores, "tree_cores": d.tree_cores,
                      "tok_s": e.figures.total_tok_s if e.figures else None})
    return cells


def rejudged(out: Path) -> list[dict]:
    """The run's decode cells judged again from their recorded samples, in the order measured, each against the
    run's steady steal as ``inproc.telemetry.busy.SteadySteal`` keeps it (the build's share, recorded with the
    first cell, then the median over the cells before): the rule of this checkout on a run of any older one."""
    from dataclasses import replace

    from inproc.measure import metrics as m
    from inproc.telemetry.busy import SteadySteal
    from inproc.telemetry.disturbed import judge

    steady, cells = SteadySteal(), []
    for e in load_results(str(out)).decode:
        tel = e.telemetry.trace if e.telemetry is not None else None
        w = m.window(e.trace) if e.trace is not None else None
        if tel is None or w is None:
            continue
        if not cells:
            steady.build_share = tel.steady_steal_share  # the first cell's level is the build's
        t = e.trace
        ends = t.steps.t_end_s[w.first_step:w.last_step + 1]
        d = judge(replace(tel, steady_steal_share=steady.level()), t.clock_origin_s + w.open_s,
                  t.clock_origin_s + w.close_s, ends - t.steps.t_start_s[w.first_step:w.last_step + 1], ends)
        steady.add(tel.host)
        if d.window_s is not None:
            cells.append({"cell": e.key, "status": e.status, "disturbed": d.reason, "steal_share": d.steal_share,
                          "steady_steal_share": d.steady_steal_share, "cpus_other_cores": d.cpus_other_cores,
                          "other_cores": d.other_cores, "tree_cores": d.tree_cores,
                          "tok_s": e.figures.total_tok_s if e.figures else None})
    return cells


def one_run(kind: str, i: int, a: argparse.Namespace, folder: Path) -> dict:
    """One ``inproc run`` (quiet, or beside the burner), its cells, and for a quiet one its self-compare's exit code."""
    out = folder / f"{kind}-{i}-{int(time.time())}.json"
    cells = ("--cells", a.cells) if a.cells else ()
    retry = ("--retry-disturbed", str(a.retry)) if a.retry else ()
    args = ("run", str(PROFILE), *cells, "--no-prefill", "--duration", str(a.duration), *retry, "--out", str(out))
    t0, busy0, kids0 = time.monotonic(), _host_busy_s(), _children_cpu_s()
    burner_cores = None
    if kind == "burner":
        with burning_apart(1, max_s=900.0, duty=a.burner_cores) as pids:
            c0 = _cpu_s(pids[0])
            done = _inproc(*args)
            c1 = _cpu_s(pids[0])
        burner_cores = (c1 - c0) / (time.monotonic() - t0) if c0 is not None and c1 is not None else None
    else:
        done = _inproc(*args)
    wall = time.monotonic() - t0
    # Everything but the run's own process tree (reaped: the inproc process and its engine workers), over the run.
    others = max(0.0, (_host_busy_s() - busy0) - (_children_cpu_s() - kids0)) / wall
    row = {"kind": kind, "file": out.name, "rc": done.returncode, "wall_s": wall, "burner_cores": burner_cores,
           "others_cores": others, "retry": a.retry,
           "notes": [x for x in done.stderr.splitlines() if x.startswith(("note:", "warning:"))]}
    if done.returncode != 0:
        row["error"] = done.stderr[-1500:]
        return row
    row["cells"] = _cells(out)
    if kind == "quiet":
        same = _inproc("compare", str(out), str(out))
        row["self_compare_rc"], row["self_compare"] = same.returncode, (same.stdout.strip().splitlines() or [""])[-1]
    return row


def _order(quiet: int, burner: int) -> list[str]:
    """``quiet`` quiet runs with ``burner`` burner runs spread among them (each after its share of quiet ones)."""
    out, placed = [], 0
    for i in range(quiet):
        out.append("quiet")
        while placed < burner and (placed + 1) * quiet <= (i + 1) * burner:
            out.append("burner")
            placed += 1
    return out + ["burner"] * (burner - placed)


def _rate(label: str, k: int, n: int, target: str) -> str:
    if n == 0:
        return f"  {label:<34} no cells"
    lo, hi = wilson(k, n)
    return f"  {label:<34} {k}/{n} = {k / n:6.1%}  95 % interval [{lo:.1%}, {hi:.1%}]  target {target}"


def summary(rows: list[dict]) -> str:
    """The rates, causes, steal figures and self-compares of every run in the log."""
    out = [f"{len(rows)} runs in the log ({sum(r['rc'] != 0 for r in rows)} failed)"]
    for kind, target in (("quiet", "<= 2 %"), ("burner", ">= 95 %")):
        cells = [c for r in rows if r["kind"] == kind for c in r.get("cells", ())]
        if kind == "quiet":
            measured = [r for r in rows if r["kind"] == kind and r.get("others_cores") is not None]
            loud = [r for r in measured if r["others_cores"] >= QUIET_OTHERS]
            out.append(f"  quiet runs where other processes used >= {QUIET_OTHERS} cores over the run (by /proc/stat "
                       f"less the run's own tree): {len(loud)} of the {len(measured)} measured "
                       + ", ".join(f"{r['others_cores']:.2f}" for r in loud))
            if loud:  # their flags are the rule seeing real other work, not false flags
                calm = [c for r in measured if r["others_cores"] < QUIET_OTHERS for c in r.get("cells", ())]
                out.append(_rate("quiet, runs measured quiet only", sum(bool(c["disturbed"]) for c in calm), len(calm),
                                 target))
        flagged = [c for c in cells if c["disturbed"]]
        retried = [c for r in rows if r["kind"] == kind and r.get("retry") for c in r.get("cells", ())]
        if retried:  # runs made with --retry-disturbed: the first try's flag, then the cell's as kept
            first = [c for c in retried if c.get("first_try")]
            out.append(_rate(f"{kind}: first tries flagged", len(first), len(retried), "(the rule alone)"))
            out.append(_rate(f"{kind}: cells kept flagged", sum(bool(c["disturbed"]) for c in retried), len(retried),
                             f"{target} (after --retry-disturbed {max(r.get('retry') or 0 for r in rows)})"))
            plain = [c for r in rows if r["kind"] == kind and not r.get("retry") for c in r.get("cells", ())]
            if plain:
                out.append(_rate(f"{kind}: cells flagged, runs without retry", sum(bool(c["disturbed"]) for c in plain),
                                 len(plain), target))
        out.append(_rate(f"{kind}: cells flagged (all runs)", len(flagged), len(cells), target))
        if kind == "quiet":
            by = {"steal": "the hypervisor", "other processes": "other processes", "step time": "step time"}
            counts = {k: sum(any(x.startswith(v) for x in c["disturbed"].removeprefix("disturbed: ").split("; "))
                             for c in flagged) for k, v in by.items()}
            out.append("    causes named: " + ", ".join(f"{k} {n}" for k, n in counts.items()))
            out += [f"    {c['cell']}: {c['disturbed']}" for c in flagged]
        if kind == "burner" and cells:
            named = sum(c["disturbed"].startswith("disturbed: other processes used") for c in flagged)
            taken = [r["burner_cores"] for r in rows if r["kind"] == kind and r["burner_cores"] is not None]
            out.append(f"    other processes' CPU named first in {named} of {len(flagged)}; the burner took "
                       f"{min(taken):.2f}-{max(taken):.2f} cores over its runs (its own /proc counters)")
    quiet = [c for r in rows if r["kind"] == "quiet" for c in r.get("cells", ())]
    shares = np.array([c["steal_share"] for c in quiet if c["steal_share"] is not None]) * 100
    steady = [n for r in rows for n in r["notes"] if n.startswith("note: the hypervisor")]
    if shares.size:
        out.append(f"  quiet cells' steal (% of the engine's CPUs' running time): median {np.median(shares):.2f}, "
                   f"90th percentile {np.percentile(shares, 90):.2f}, largest {shares.max():.2f}; "
                   f"{int((shares >= STEAL_MOVE_PCT).sum())} of {shares.size} at or above {STEAL_MOVE_PCT:g}")
    steady_shares = [c["steady_steal_share"] for r in rows for c in r.get("cells", ())[:1]
                     if c["steady_steal_share"] is not None]
    if steady_shares:
        out.append(f"  steady steal over the builds: {min(steady_shares) * 100:.2f}-{max(steady_shares) * 100:.2f} % "
                   f"({len(steady)} notes)")
    rcs = [r["self_compare_rc"] for r in rows if "self_compare_rc" in r]
    out.append(f"  quiet self-compares (inproc compare R R): exit codes {sorted(rcs)}")
    out += [f"    exit {r['self_compare_rc']}: {r.get('self_compare', '')}" for r in rows if r.get("self_compare_rc", 0) != 0]
    return "\n".join(out)


def steal_effect(folders: list[Path]) -> str:
    """What the hypervisor's steal did to the steps, from the kept quiet runs: each interval between two host
    samples inside a decode window (runs where other processes stayed under ``MIN_OTHER`` cores on the engine's
    CPUs), its steal share on the engine's CPUs against the mean step time of the steps wholly inside it, over
    the cell's median step. Bins of steal share, each with its count and its steps' median slowdown."""
    from inproc.measure import metrics as m

    shares, slow = [], []
    for path in sorted(p for f in folders for p in f.glob("quiet-*-*.json")):
        for e in load_results(str(path)).decode:
            tel = e.telemetry
            d = tel.disturbance if tel is not None else None
            if e.trace is None or tel is None or tel.trace is None or d is None or (d.cpus_other_cores or 0) > MIN_OTHER:
                continue
            host, t, w = tel.trace.host, e.trace, m.window(e.trace)
            if host is None or "tree_cpus_steal_s" not in host.values:
                continue
            starts = t.steps.t_start_s[w.first_step:w.last_step + 1] + t.clock_origin_s
            ends = t.steps.t_end_s[w.first_step:w.last_step + 1] + t.clock_origin_s
            median = float(np.median(ends - starts))
            at, busy = host.valid("tree_cpus_busy_s")
            _, steal = host.valid("tree_cpus_steal_s")
            for i in range(at.size - 1):
                running = (busy[i + 1] - busy[i]) - (steal[i + 1] - steal[i])
                inside = (starts >= at[i]) & (ends <= at[i + 1])
                if running > 0 and inside.sum() >= 3:
                    shares.append((steal[i + 1] - steal[i]) / running)
                    slow.append(float(np.mean((ends - starts)[inside])) / median - 1)
    x, y = np.array(shares), np.array(slow)
    out = [f"steal against step time, {x.size} sampled intervals of quiet decode windows:"]
    for lo, hi in ((0.0, 0.005), (0.005, 0.05), (0.05, 0.10), (0.10, 1.0)):
        k = (x >= lo) & (x < hi)
        tail = f"steps {100 * np.median(y[k]):+.1f} % against the cell's median step" if k.any() else "none"
        out.append(f"  steal share {100 * lo:g}-{100 * hi:g} %: {int(k.sum())} intervals, {tail}")
    return "\n".join(out)


def _rejudge(log: Path, folders: list[Path]) -> int:
    """The log's summary with every kept run's cells judged again (runs whose file is not kept are left out). A log
    row without its file's name (older logs) takes the next kept file of its kind, oldest first."""
    kept = sorted((p for f in folders for p in f.glob("*-*-*.json")), key=lambda p: int(p.stem.rsplit("-", 1)[1]))
    rows, at = [], 0
    for row in (json.loads(x) for x in log.read_text().splitlines() if x.strip()):
        if row["rc"] != 0:
            continue
        if "file" in row:
            found = [p for p in kept if p.name == row["file"]]
        else:
            while at < len(kept) and not kept[at].name.startswith(row["kind"] + "-"):
                at += 1
            found, at = kept[at:at + 1], at + 1
        if found:
            rows.append({**row, "cells": rejudged(found[0])})
    print(f"judged again with this checkout's rule, from the recorded samples of {len(rows)} kept runs:")
    print(summary(rows))
    return 0


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--real", action="store_true", help="(selects this benchmark in scripts/benchmarks/disturbed.py)")
    ap.add_argument("--runs", type=int, default=2, help="quiet runs this call")
    ap.add_argument("--burner-runs", type=int, default=None, help="runs beside the burner this call (default --runs)")
    ap.add_argument("--budget-min", type=float, default=11.0, help="start no run past this many minutes")
    ap.add_argument("--cells", default="", help="decode cells of the demo's plan (default: all of them)")
    ap.add_argument("--duration", type=float, default=3.0, help="decode window, s (the demo's: 3)")
    ap.add_argument("--burner-cores", type=float, default=0.5, help="the burner's share of a core")
    ap.add_argument("--retry", type=int, default=0, help="each run's --retry-disturbed (0: none, the rule's first tries)")
    ap.add_argument("--log", required=True, help="JSON lines file the runs are appended to (and summarised from)")
    ap.add_argument("--summary", action="store_true", help="print the log's summary only")
    ap.add_argument("--keep", help="keep the runs' results files in this folder (default: removed)")
    ap.add_argument("--rejudge", nargs="*", metavar="DIR", default=None,
                    help="judge the cells of the runs kept in these folders again with this checkout's rule, as "
                         "listed in --log (its entries' file names), and print that summary")
    ap.add_argument("--steal-effect", nargs="*", metavar="DIR", default=None,
                    help="print what steal did to the step times in the quiet runs kept in these folders, and stop")
    a = ap.parse_args(argv)
    log = Path(a.log)
    if a.steal_effect is not None:
        print(steal_effect([Path(x) for x in a.steal_effect]))
        return 0
    if a.rejudge is not None:
        return _rejudge(log, [Path(x) for x in a.rejudge])
    if not a.summary:
        burner_runs = a.runs if a.burner_runs is None else a.burner_runs
        t0, longest = time.monotonic(), 0.0
        with tempfile.TemporaryDirectory(prefix="inproc-disturbed-") as tmp:
            folder = Path(a.keep) if a.keep else Path(tmp)
            folder.mkdir(parents=True, exist_ok=True)
            for i, kind in enumerate(_order(a.runs, burner_runs)):
                if time.monotonic() - t0 + longest > 60 * a.budget_min:
                    print(f"budget of {a.budget_min:g} min reached: {i} runs made this call")
                    break
                row = one_run(kind, i, a, folder)
                longest = max(longest, row["wall_s"])
                with log.open("a") as f:
                    f.write(json.dumps(row) + "\n")
                print(f"{kind} run: rc {row['rc']}, {row['wall_s']:.0f} s, "
                      f"{sum(bool(c['disturbed']) for c in row.get('cells', ()))}/{len(row.get('cells', ()))} "
                      f"flagged", flush=True)
    rows = [json.loads(x) for x in log.read_text().splitlines() if x.strip()] if log.exists() else []
    print(summary(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
