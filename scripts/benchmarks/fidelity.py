"""Fidelity A/B in one process on one engine: inproc's decode driver against a bare ``step()`` loop, and each
of the driver's per-step instruments on against off.

    python scripts/bench.py fidelity [--rounds 9] [--concurrency 1,8,128] [--instruments-at 1] [--blocks 16] [--engine vllm]
                                     [--null] [--keep FILE] [--generate]

Per C, one engine is built in a child process and stepped through windows of ``--window-steps`` steps
(512 at C <= 8, 128 above), one per setting and round; each window is cut into ``--blocks`` blocks (16) that
alternate between the settings (A B B A ...), so both sides share each stretch of the engine's drifting step
time (``fidelity_ab``: what a window is and what each side does). Printed per C:

- driver ÷ bare loop, measured tok/s, by round: the ratio of the medians, the pairwise ratios' median with
  its 95 % interval (order statistics) and range; verdict against >= 0.99: met when the interval lies at or
  above it, missed when below, else cannot tell; and whether that interval reaches 0.98 (its upper end)
  and lies at or above it (its lower end);
- the same by block pair (:func:`block_pairs`: each driver block against the bare loop's block run right
  next to it), rounds × blocks pairs, whose interval of the median is narrower than 9 rounds can give: the
  verdict this benchmark stands on;
- with ``--null``, the bare loop against itself in the same blocks (A/A): its interval is what the
  method resolves on this machine, and one that excludes 1 is a false alarm;
- the driver's own work between steps (its time outside ``step()`` per window step, less the bare loop's,
  paired by round), with its interval, the ratio it implies over the bare loop's step, and at C = 1 the
  verdict against <= 15 µs; across the C measured together, its growth per request (target <= 1 µs);
- at the C of ``--instruments-at``: each instrument's cost, paired block by block against the driver as a
  run has it: the share of the step it adds (its change in median time inside ``step()`` plus its change
  in time between steps, over the bare loop's step; verdict against <= 0.3 %), its change in measured
  tok/s, and each part in µs, all with intervals.

The pairwise ratio misses nothing the driver does to the steps themselves (caches, memory); the implied
ratio and the instruments' direct times are steadier on a 2-core machine, where the engine's step time
drifts by several per cent from one window to the next. With ``--generate``: also inproc's cell against
the engine's own offline generate in fresh processes (noisy; kept for reference), and for transformers
its ``generate_batch`` (``scripts/benchmarks/fidelity_tf.py``).
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

from scripts.benchmarks.harness import verdict

ROOT = Path(__file__).resolve().parents[2]
PROFILES = {e: ROOT / "launch_profiles" / f"cpu-{e}-tiny-llama.toml" for e in ("vllm", "sglang", "transformers")}
#: Room for C = 128 (the tiny profiles hold 8 requests).
BIG = {"vllm": ("max-num-seqs=128", "num-gpu-blocks-override=2048", "max-num-batched-tokens=8192"),
       "sglang": ("max-running-requests=128", "max-total-tokens=65536"),
       "transformers": ("max-requests-per-batch=128", "num-blocks=2048", "max-batch-tokens=8192")}
VARIANTS = {"vllm": ((),), "transformers": ((),), "sglang": ((), ("disable-overlap-schedule=true",))}
PROMPT_TOKENS, MAX_TOKENS = 32, 384
RATIO_TARGET, PAIR_FLOOR, OWN_WORK_US, GROWTH_US, INSTRUMENT_SHARE = 0.99, 0.98, 15.0, 1.0, 0.003
#: Each round's window per setting in this many blocks, alternated (``fidelity_ab.rounds``).
BLOCKS = 16


def child(profile: str, c: int, rounds: int, window_steps: int, instruments: bool, sets: list[str],
          blocks: int = 1, null: bool = False) -> dict:
    """In the child: build the engine, run the rounds, return every window's figures."""
    from dataclasses import asdict

    from scripts.benchmarks.fidelity_ab import BARE, BARE_AGAIN, DRIVER, INSTRUMENTS, Sides
    from scripts.benchmarks.fidelity_ab import rounds as run_rounds
    from inproc import engines
    from inproc.profiles.spec import load_profile

    p = load_profile(profile).with_overrides(tuple(sets))
    engine = engines.build_engine(p.launch)
    try:
        sides = Sides(engine, PROMPT_TOKENS, c, MAX_TOKENS, window_steps // blocks)
        settings = ((DRIVER, BARE) + ((BARE_AGAIN,) if null else ())
                    + (tuple(s for _, s, _ in INSTRUMENTS) if instruments else ()))
        if not sides.kv_switch:
            settings = tuple(s for s in settings if s.kv)
        raw: dict = {}
        windows = run_rounds(sides, settings, rounds, blocks, raw)
        sides.close()
        return {"c": c, "rounds": rounds, "window_steps": window_steps // blocks * blocks, "blocks": blocks,
                "engine": engine.info.name,
                "version": engine.info.version, "event_loop": engine.info.settings.event_loop,
                "windows": {k: [asdict(w) for w in v] for k, v in windows.items()},
                "blocks_raw": {k: [[asdict(b) for b in r] for r in v] for k, v in raw.items()}}
    finally:
        engine.shutdown()


def measure(engine: str, c: int, rounds: int, window_steps: int, instruments: bool, sets: tuple[str, ...],
            blocks: int = 1, null: bool = False) -> dict:
    """One C in a fresh process (the engine built there); its windows' figures."""
    env = dict(os.environ, PYTHONPATH=str(ROOT), VLLM_ENABLE_V1_MULTIPROCESSING="0",
               VLLM_LOGGING_LEVEL="ERROR", PYTHONBREAKPOINT="0")
    spec = json.dumps([str(PROFILES[engine]), c, rounds, window_steps, instruments, list(sets), blocks, null])
    # As a module from the checkout's root: run as a file, this folder would lead sys.path and its bisect.py
    # would shadow the standard library's (imported by random, statistics, tempfile).
    p = subprocess.run([sys.executable, "-m", "scripts.benchmarks.fidelity", "--child", spec], capture_output=True,
                       text=True, env=env, cwd=ROOT)
    if p.returncode != 0:
        sys.exit(f"bench fidelity: the child for C={c} failed:\n{p.stderr[-3000:]}")
    return json.loads(p.stdout.strip().splitlines()[-1])


def interval(xs: list[float]) -> tuple[float, float, float]:
    """(median, the 95 % interval of the median from order statistics): the whole range when too few."""
    from scripts.benchmarks.harness import median_interval

    lo, hi = median_interval(xs)
    return statistics.median(xs), lo, hi


def block_pairs(res: dict, name: str, key: str = "tok_s", against: str = "bare") -> list[float]:
    """``name``'s blocks over ``against``'s, block by block (``key``: a ``WindowFigures`` field). In every block
    the two run one right after the other (``fidelity_ab.rounds``: the settings' order, reversed every other
    block), so each pair shares its stretch of the engine's drifting step time; a round pools its blocks, so
    a round's ratio carries the drift between its blocks, and 9 rounds give an interval of the median as wide
    as their 2nd to 8th values."""
    return [a[key] / b[key] for a, b in paired_blocks(res, name, against)]


def paired_blocks(res: dict, name: str, against: str) -> list[tuple[dict, dict]]:
    """``name``'s and ``against``'s blocks side by side, round by round, block by block (:func:`block_pairs`)."""
    raw = res["blocks_raw"]
    return [(a, b) for ra, rb in zip(raw[name], raw[against]) for a, b in zip(ra, rb)]


def pairs_line(label: str, what: str, ratios: list[float]) -> str:
    """Block pairs' ratio: their median with its 95 % interval, against >= 0.99 and the 0.98 floor."""
    med, lo, hi = interval(ratios)
    return (f"{label}: {what}, block pairs ({len(ratios)}): median {med:.4f}, 95% interval [{lo:.4f}, {hi:.4f}]: "
            f"{verdict(lo, hi, RATIO_TARGET, True)} (>= {RATIO_TARGET}); its lower end "
            f"{'is' if lo >= PAIR_FLOOR else 'is not'} at or above {PAIR_FLOOR}")


def null_line(label: str, res: dict) -> str | None:
    """The bare loop against itself in the same blocks (``--null``): the method's own resolution."""
    from scripts.benchmarks.fidelity_ab import BARE_AGAIN

    if BARE_AGAIN.name not in res["blocks_raw"]:
        return None
    med, lo, hi = interval(block_pairs(res, BARE_AGAIN.name))
    inside = "holds 1 (no difference found, as there is none)" if lo <= 1 <= hi else "excludes 1: a false alarm"
    return (f"{label} C={res['c']}: A/A, the bare loop against itself, block pairs: median {med:.4f}, 95% interval "
            f"[{lo:.4f}, {hi:.4f}], {inside}; the driver's interval above is as wide as the machine lets any be")


def own_work(res: dict) -> list[float]:
    """The driver's time between steps less the bare loop's, per round (µs per window step)."""
    w = res["windows"]
    return [d["between_us"] - b["between_us"] for d, b in zip(w["driver"], w["bare"])]


def headline(label: str, res: dict) -> list[str]:
    """The measured ratio and the driver's own work at one C."""
    w, c = res["windows"], res["c"]
    ours, theirs = [x["tok_s"] for x in w["driver"]], [x["tok_s"] for x in w["bare"]]
    med, lo, hi = interval([a / b for a, b in zip(ours, theirs)])
    cost, clo, chi = interval(own_work(res))
    step = statistics.median(x["span_us"] for x in w["bare"])
    lines = [
        f"{label} C={c}: driver / bare step() loop, measured tok/s = {statistics.median(ours) / statistics.median(theirs):.4f} "
        f"(medians of {res['rounds']} rounds of {res['window_steps']}-step windows, each in {res.get('blocks', 1)} "
        f"alternating blocks); pairwise median "
        f"{med:.4f}, 95% interval [{lo:.4f}, {hi:.4f}], range {min(ours[i] / theirs[i] for i in range(len(ours))):.4f}.."
        f"{max(ours[i] / theirs[i] for i in range(len(ours))):.4f}: {verdict(lo, hi, RATIO_TARGET, True)} (>= "
        f"{RATIO_TARGET}); the interval's upper end {'reaches' if hi >= PAIR_FLOOR else 'does not reach'} {PAIR_FLOOR}, "
        f"its lower end {'is' if lo >= PAIR_FLOOR else 'is not'} at or above it",
        f"{label} C={c}: inside step() (median step, paired by round): driver ÷ bare loop "
        f"{statistics.median(d['step_median_us'] / b['step_median_us'] for d, b in zip(w['driver'], w['bare'])):.4f} "
        f"(the engine's own time: inproc runs nothing there but two clock reads); block pairs: median "
        f"{statistics.median(block_pairs(res, 'driver', 'step_median_us')):.4f}",
        pairs_line(f"{label} C={c}", "driver / bare step() loop, measured tok/s", block_pairs(res, "driver")),
        f"{label} C={c}: the driver's own work between steps {cost:.1f} µs [{clo:.1f}, {chi:.1f}] per {step:.0f} µs step "
        f"(between steps: driver {statistics.median(x['between_us'] for x in w['driver']):.1f} µs, bare loop "
        f"{statistics.median(x['between_us'] for x in w['bare']):.1f} µs); implied ratio {1 - cost / step:.4f}"
        + (f"; {verdict(clo, chi, OWN_WORK_US, False)} (<= {OWN_WORK_US:g} µs at C = 1)" if c == 1 else ""),
    ]
    return lines


def instrument_lines(label: str, res: dict) -> list[str]:
    """Each instrument's cost at one C, paired block by block against the driver as a run has it."""
    from scripts.benchmarks.fidelity_ab import INSTRUMENTS

    raw, out = res["blocks_raw"], []
    step = statistics.median(x["span_us"] for x in res["windows"]["bare"])
    for name, setting, has_it in INSTRUMENTS:
        if setting.name not in raw:
            out.append(f"{label} C={res['c']}: {name}: not switchable on this engine (always on, both sides)")
            continue
        pairs = paired_blocks(res, setting.name, "driver") if has_it else paired_blocks(res, "driver", setting.name)
        inside = [on["step_median_us"] - off["step_median_us"] for on, off in pairs]
        between = [on["between_us"] - off["between_us"] for on, off in pairs]
        share = [(i + b) / step for i, b in zip(inside, between)]
        tok = [1 - on["tok_s"] / off["tok_s"] for on, off in pairs]
        (s, slo, shi), (t, tlo, thi) = interval(share), interval(tok)
        (i, ilo, ihi), (b, blo, bhi) = interval(inside), interval(between)
        out.append(f"{label} C={res['c']}: {name}: costs {100 * s:.3f} % of the step [{100 * slo:.3f}, {100 * shi:.3f}]: "
                   f"{verdict(slo, shi, INSTRUMENT_SHARE, False)} (<= {100 * INSTRUMENT_SHARE:.1f} %); measured tok/s "
                   f"{100 * t:+.2f} % lower [{100 * tlo:+.2f}, {100 * thi:+.2f}]; inside step() {i:+.1f} µs "
                   f"[{ilo:+.1f}, {ihi:+.1f}] (median step), between steps {b:+.1f} µs [{blo:+.1f}, {bhi:+.1f}] "
                   f"({len(pairs)} block pairs)")
    return out


def growth_line(by_c: dict[int, dict]) -> str | None:
    """The driver's own work per request added, from C = 1 to each larger C measured."""
    if 1 not in by_c or len(by_c) < 2:
        return None
    base = statistics.median(own_work(by_c[1]))
    parts = []
    for c in sorted(by_c)[1:]:
        per = (statistics.median(own_work(by_c[c])) - base) / (c - 1)
        parts.append(f"C={c}: {per:+.2f} µs per request ({'met' if per <= GROWTH_US else 'missed'})")
    return f"the driver's own work, growth from C = 1 (target <= {GROWTH_US:g} µs per request): " + "; ".join(parts)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=9)
    ap.add_argument("--engine", choices=tuple(PROFILES), default="vllm", help="the engine installed in this Python")
    ap.add_argument("--concurrency", default="1,8,128", help="the C measured, e.g. 1,8,128")
    ap.add_argument("--instruments-at", default="1", help="the C where each instrument is switched ('none': nowhere)")
    ap.add_argument("--window-steps", type=int, default=None, help="steps per window (default: 512 at C <= 8, 128 above)")
    ap.add_argument("--blocks", type=int, default=BLOCKS,
                    help=f"blocks each window is cut into, alternated between the settings (default {BLOCKS})")
    ap.add_argument("--generate", action="store_true", help="also the engine's own offline generate (fresh processes)")
    ap.add_argument("--null", action="store_true",
                    help="also the bare loop against itself in the same blocks (A/A: what the method can resolve)")
    ap.add_argument("--keep", help="write every C's windows and blocks to this JSON file")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    if a.child:
        print(json.dumps(child(*json.loads(a.child))))
        return 0
    try:
        cs = [int(x) for x in a.concurrency.split(",")]
        at = set() if a.instruments_at == "none" else {int(x) for x in a.instruments_at.split(",")}
    except ValueError:
        ap.error(f"bad --concurrency {a.concurrency!r} or --instruments-at {a.instruments_at!r}: give C values like 1,8,128")
    if a.keep and not Path(a.keep).resolve().parent.is_dir():
        ap.error(f"bad --keep {a.keep!r}: its folder does not exist (the figures would be measured, then not kept)")
    if a.rounds < 2 or min(cs) < 1 or (a.window_steps is not None and a.window_steps < 1) or a.blocks < 1:
        ap.error("--rounds >= 2, C >= 1, --window-steps >= 1, --blocks >= 1")
    for variant in VARIANTS[a.engine]:
        by_c = {}
        for c in cs:
            steps = a.window_steps or (512 if c <= 8 else 128)
            if steps // a.blocks < 4:
                ap.error(f"--blocks {a.blocks}: blocks of {steps // a.blocks} steps at C={c}; give at most {steps // 4}")
            res = by_c[c] = measure(a.engine, c, a.rounds, steps, c in at, variant + (BIG[a.engine] if c > 8 else ()),
                                    a.blocks, a.null)
            loop = f", {res['event_loop']} loop" if res.get("event_loop") else ""
            label = f"fidelity A/B ({res['engine']} {res['version']}{loop})"
            null = null_line(label, res)
            for line in headline(label, res) + ([null] if null else []) + (instrument_lines(label, res) if c in at else []):
                print(line, flush=True)
        if a.keep:
            Path(a.keep).write_text(json.dumps({str(c): r for c, r in by_c.items()}))
        line = growth_line(by_c)
        if line:
            print(line, flush=True)
    if a.generate:
        if a.engine == "transformers":
            from scripts.benchmarks import fidelity_tf

            return fidelity_tf.main(["--rounds", str(a.rounds)])
        from scripts.benchmarks.fidelity_generate import fidelity_generate

        fidelity_generate(a.rounds, a.engine)
    return 0


if __name__ == "__main__":
    sys.exit(main())
