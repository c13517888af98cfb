"""The disturbance rule on the real engine: a CPU burner (another program) through some cells' windows, not others.

The machine these tests run on may be shared, so a cell measured without the burner may be disturbed all the
same; the assertions read what each cell measured: the burner's cells are flagged with the other processes'
CPU named, and a cell without the burner is flagged for other processes' CPU exactly when its own reading
crossed the thresholds. On a machine known to be quiet, ``INPROC_TEST_QUIET=1`` asserts more: the cells
without the burner are not flagged at all, and each burner cell's other-CPU is at least half a core above
every quiet cell's (cells alternate, burner and not: ABAB).
"""
from __future__ import annotations

import os

import pytest

import inproc.run.runner as runner_mod
from inproc.render.text import DISTURBED, render_matrix
from inproc.telemetry import disturbed as d
from inproc.telemetry.sampler import open_telemetry
from inproc.telemetry.window import EntrySampling
from tests.conftest import needs_vllm
from tests.load import burning_apart
from tests.run.test_runner import make_runner

BURNT = (2, 4)  # the concurrency of the cells measured beside two burners; 1 and 3 are measured without


def _measured_beside_burners(monkeypatch):
    real = runner_mod.measure_decode

    def measure(driver, sampling, prompts, cell, *args):
        if cell.concurrency not in BURNT:
            return real(driver, sampling, prompts, cell, *args)
        with burning_apart(2, max_s=60.0):  # through the whole cell: its warm-up, window and sampling
            return real(driver, sampling, prompts, cell, *args)

    monkeypatch.setattr(runner_mod, "measure_decode", measure)


def test_cells_under_a_burner_are_flagged_with_its_cpu_and_the_others_by_their_own_reading(
        engine, driver, tmp_path, monkeypatch):
    runner = make_runner(engine, tmp_path / "r.json", concurrency=(1, 2, 3, 4), window_s=2.0, max_output=64)
    telemetry = open_telemetry(hz=10.0)
    runner.sampling = EntrySampling(telemetry)
    _measured_beside_burners(monkeypatch)
    try:
        rec = runner.run()
    finally:
        telemetry.close()
    readings = {e.concurrency: e.telemetry.disturbance for e in rec.decode}
    for c, r in sorted(readings.items()):
        print(f"C={c}{' (burner)' if c in BURNT else ''}: other {r.other_cores} of {r.host_cores} cores, "
              f"tree {r.tree_cores}, idle {r.idle_cores}, steal {r.steal_cores}; {r.reason or 'not disturbed'}")
    quiet = [r for c, r in readings.items() if c not in BURNT]
    for c in BURNT:
        e = next(x for x in rec.decode if x.concurrency == c)
        assert e.disturbed.startswith("disturbed: other processes used "), e.disturbed
        assert e.status in ("Valid", "Requests queued") and e.figures.total_tok_s > 0  # kept, with its figures
        if os.environ.get("INPROC_TEST_QUIET") == "1":
            assert readings[c].other_cores >= max(r.other_cores for r in quiet) + 0.5, readings
    for r in quiet:  # flagged for CPU exactly when its own reading crossed the thresholds
        crossed = r.other_cores >= d.MIN_OTHER_CORES and (
            r.idle_cores < d.MIN_IDLE_CORES or r.other_cores >= d.OTHER_HOST_SHARE * r.host_cores)
        assert crossed == any(x.startswith("other processes used") for x in r.causes), r
        assert not (os.environ.get("INPROC_TEST_QUIET") == "1" and r.causes), r
    for r in readings.values():  # the engine's own CPU is its tree's, below the host's to the counters' ticks
        slack = 4 * d.COUNTER_TICK_S / r.window_s  # a tick at each edge of the host's and the tree's counters
        assert 0.1 < r.tree_cores <= r.host_cores + slack, r
    text = render_matrix(rec)
    assert f"{DISTURBED[0]} {DISTURBED[1]}" in text
    burnt_cells = [line for line in text.splitlines() if line.strip().startswith("128 ")][0]
    assert burnt_cells.count(DISTURBED[0]) == sum(bool(r.causes) for r in readings.values())


@pytest.mark.long
def test_a_disturbed_cell_is_measured_again_and_keeps_each_try(engine, driver, tmp_path, monkeypatch):
    from dataclasses import replace

    from inproc.record.io import load_results

    out = tmp_path / "r.json"
    runner = make_runner(engine, out, concurrency=(2,), window_s=1.5, max_output=64)
    runner.ctx = replace(runner.ctx, retry_disturbed=2)
    telemetry = open_telemetry(hz=10.0)
    runner.sampling = EntrySampling(telemetry)
    real, calls = runner_mod.measure_decode, []

    def measure(*args):  # the burner through the first try only
        calls.append(1)
        if len(calls) > 1:
            return real(*args)
        with burning_apart(2, max_s=60.0):
            return real(*args)

    monkeypatch.setattr(runner_mod, "measure_decode", measure)
    try:
        rec = runner.run()
    finally:
        telemetry.close()
    (e,) = rec.decode
    print([t.disturbed for t in e.tries], e.disturbed or "last try not disturbed")
    assert len(calls) == e.try_number == len(e.tries) + 1 >= 2
    assert e.tries[0].number == 1 and e.tries[0].disturbed.startswith("disturbed: other processes used ")
    assert e.tries[0].total_tok_s > 0
    assert len(calls) == 3 or not e.disturbed  # stopped at the first quiet try, or after the last allowed
    again = load_results(str(out)).decode[0]
    assert again.tries == e.tries and again.disturbed == e.disturbed
    derived = load_results(str(out), rederive=True).decode[0]  # from the raw host samples in the cell file
    assert derived.disturbed == e.disturbed and derived.telemetry.disturbance == e.telemetry.disturbance


@pytest.mark.long
@needs_vllm  # the default profile is vLLM's: in the SGLang venv there is nothing to run
def test_inproc_run_beside_burners_warns_before_the_matrix_and_marks_every_cell(run_inproc, tmp_path):
    """The CLI end to end: two burners of another program through the whole run (its build included)."""
    from tests.conftest import DEFAULT_PROFILE

    out = tmp_path / "r.json"
    with burning_apart(2, max_s=600.0):
        done = run_inproc("run", str(DEFAULT_PROFILE), "--cells", "256x1,256x2,256x4", "--no-prefill",
                          "--duration", "2", "--max-output", "64", "--out", str(out))
    assert done.returncode == 0, done.stderr[-2000:]
    warning = next(line for line in done.stderr.splitlines() if "cells measured now may be disturbed" in line)
    print(warning, done.stdout, sep="\n")
    assert warning.startswith("warning: other processes are using ") and "--retry-disturbed N" in warning
    assert done.stderr.index(warning) < done.stderr.index("decode ")  # before the first cell
    from inproc.record.io import load_results

    rec = load_results(str(out))
    # The burners share the cores with the run, but the kernel's scheduler decides how much each gets: on a
    # 2-core machine a cell now and then ran with the burners held to a sliver (tok/s at the quiet level, others'
    # CPU near 0.25 cores). So each cell is flagged exactly when the CPU others used crossed the rule, and the
    # burners must have crossed it in at least one cell.
    for e in rec.decode:
        fig = e.telemetry.disturbance
        crossed = fig.other_cores is not None and fig.other_cores >= d.MIN_OTHER_CORES and (
            fig.idle_cores < d.MIN_IDLE_CORES or fig.other_cores >= d.OTHER_HOST_SHARE * fig.host_cores)
        assert e.disturbed.startswith("disturbed: other processes used ") == crossed, (e.key, e.disturbed, fig)
    flagged = [e for e in rec.decode if e.disturbed]
    assert flagged and f"{DISTURBED[0]} {DISTURBED[1]}" in done.stdout
    report = out.with_suffix(".md").read_text()
    assert report.count("> **Warning:** Disturbed: decode 256 × ") == len(flagged) and "· disturbed" in report
